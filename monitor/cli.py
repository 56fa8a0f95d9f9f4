"""Command line: parses arguments and calls the stage modules. No logic of its own lives here.

Each section below belongs to one stage; commands print with rich and raise MonitorError for the user.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from monitor.config import Settings, load_settings
from monitor.errors import MonitorError
from monitor.progress import on_terminal
from monitor.review.commands import review_app
from monitor.store import Store, open_store
from monitor.store.db import require_existing

console = Console()
err_console = Console(stderr=True)

app = typer.Typer(
    name="monitor",
    help=(
        "Watch arXiv and keep dated research claims honest: "
        "which constraints are durable, which perishable."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@dataclass
class AppContext:
    """What every command needs: the settings in force and, opened on first use, the store."""

    config: str | None = None
    db_url: str | None = None
    _settings: Settings | None = field(default=None, repr=False)
    _store: Store | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config)
            if self.db_url:
                self._settings.database.url = self.db_url
        return self._settings

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.settings.database.url, echo=self.settings.database.echo)
        return self._store

    @property
    def existing_store(self) -> Store:
        """The store for commands that only read: a missing database is an error, never created."""
        if self._store is None:
            require_existing(self.settings.database.url)
        return self.store


def ctx_of(ctx: typer.Context) -> AppContext:
    return ctx.ensure_object(AppContext)


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        str | None, typer.Option("--config", "-c", help="Config file (default: ./monitor.toml if present).")
    ] = None,
    db: Annotated[str | None, typer.Option("--db", help="Database URL, overriding the config.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = AppContext(config=config, db_url=db)


# --- claims (seeds, lines, claims, anchors) ------------------------------------------------------

seeds_app = typer.Typer(help="Import the research library's seed exports and your own claim files.")
app.add_typer(seeds_app, name="seeds")
anchors_app = typer.Typer(
    help="Anchor papers the lines cite; without a subcommand, list them.", invoke_without_command=True
)
app.add_typer(anchors_app, name="anchors")


@app.command("init")
def init_command(
    ctx: typer.Context,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing config file.")] = False,
    no_import: Annotated[
        bool, typer.Option("--no-import", help="Do not import the seeds directory even if it has files.")
    ] = False,
) -> None:
    """Start a project: a commented monitor.toml with every setting, seeds/ and reports/, the database.

    The config goes to --config (default ./monitor.toml); an existing one is kept unless --force.

    Claim files already in the seeds directory are imported (skip with --no-import).
    """
    from pathlib import Path

    from monitor.config import DEFAULT_CONFIG_FILE
    from monitor.scaffold import write_config

    app_ctx = ctx_of(ctx)
    target = Path(app_ctx.config or DEFAULT_CONFIG_FILE)
    write_config(target, force=force)
    console.print(f"wrote {target} (every setting, commented, with its default)", highlight=False)
    fresh = AppContext(config=str(target), db_url=app_ctx.db_url)
    ctx.obj = fresh
    settings = fresh.settings
    for folder in (settings.paths.seeds, settings.paths.reports):
        if not folder.exists():
            folder.mkdir(parents=True)
            console.print(f"created {folder}/", highlight=False)
    from monitor.store.db import redact

    store = fresh.store
    console.print(f"database ready: {redact(settings.database.url)}", highlight=False)
    from monitor.claims.importer import CLAIM_SUFFIXES, import_claims

    has_files = any(p.suffix.lower() in CLAIM_SUFFIXES for p in settings.paths.seeds.iterdir())
    if has_files and not no_import:
        from monitor.claims.show import print_import

        print_import(console, import_claims(store, settings))
    else:
        console.print(f"next: put seed exports in {settings.paths.seeds}/ and run `monitor seeds import`")


@seeds_app.command("import")
def seeds_import_command(
    ctx: typer.Context,
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Seed exports (.txt) or claim files (.yaml/.toml), or directories of them. "
            "Default: paths.seeds and paths.claims_file.",
            show_default=False,
        ),
    ] = None,
    prune: Annotated[
        bool,
        typer.Option("--prune", help="Also retire lines and claims of files no longer in the import set."),
    ] = False,
    allow_retire: Annotated[
        bool,
        typer.Option(
            "--allow-retire",
            help="Retire the lines, claims and anchors the files no longer hold (refused without it).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what changed as JSON.")] = False,
) -> None:
    """Import claims and print what changed. A bad file aborts the whole import; nothing is written.

    Importing again changes nothing. An edited claim text is a new claim; the old one is retired.

    An import that would retire anything is refused (exit 3, listing it) unless --allow-retire or
    --prune. Retired claims keep their assessments. Files left out of the set keep their claims, unless
    --prune.
    """
    import json
    from pathlib import Path

    from monitor.claims.importer import import_claims
    from monitor.claims.show import print_import

    app_ctx = ctx_of(ctx)
    report = import_claims(
        app_ctx.store, app_ctx.settings, [Path(p) for p in paths] if paths else None,
        prune=prune,
        allow_retire=allow_retire,
    )
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print_import(console, report)


@app.command("lines")
def lines_command(
    ctx: typer.Context,
    notes: Annotated[
        bool, typer.Option("--notes", help="Also list single-note documents (like seed 001).")
    ] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Include retired lines.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Inquiring lines: question, how many notes, dated claims and anchors each cites, span, file."""
    import json

    from monitor.claims.listing import count_lines, list_lines, require_claims
    from monitor.claims.show import print_lines

    store = ctx_of(ctx).existing_store
    require_claims(store)
    kinds = ("line", "user", "note") if notes else ("line", "user")
    views = list_lines(store, include_retired=show_all, kinds=kinds)
    if as_json:
        typer.echo(json.dumps([v.as_dict() for v in views], indent=2, ensure_ascii=False))
        return
    print_lines(console, views, hidden_notes=0 if notes else count_lines(store).get("note", 0))


@app.command("claims")
def claims_command(
    ctx: typer.Context,
    line: Annotated[
        str | None, typer.Option("--line", help="Only this line's claims (id or prefix).")
    ] = None,
    show_all: Annotated[bool, typer.Option("--all", help="Include retired claims.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON list (full texts, dates, lines).")
    ] = False,
    full: Annotated[bool, typer.Option("--full", help="Do not shorten long texts in the table.")] = False,
) -> None:
    """Claims under test: id, kind, date as written, the lines citing them, text."""
    import json

    from monitor.claims.listing import list_claims, require_claims
    from monitor.claims.show import print_claims

    store = ctx_of(ctx).existing_store
    require_claims(store)
    views = list_claims(store, line=line, include_retired=show_all)
    if as_json:
        typer.echo(json.dumps([v.as_dict() for v in views], indent=2, ensure_ascii=False))
        return
    print_claims(console, views, full=full)


@anchors_app.callback()
def anchors_command(
    ctx: typer.Context,
    show_all: Annotated[bool, typer.Option("--all", help="Include anchors no longer cited.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Anchor papers: line, arXiv id, cited date and title, and what verification found."""
    if ctx.invoked_subcommand is not None:
        return
    import json

    from monitor.claims.listing import list_anchors, require_claims
    from monitor.claims.show import print_anchors

    store = ctx_of(ctx).existing_store
    require_claims(store)
    views = list_anchors(store, include_retired=show_all)
    if as_json:
        typer.echo(json.dumps([v.as_dict() for v in views], indent=2, ensure_ascii=False))
        return
    print_anchors(console, views)


# --- sources (fetch, anchors verify) -------------------------------------------------------------

_FETCH_DATE = ["%Y-%m-%d"]


@app.command("fetch")
def fetch_command(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Option("--source", help="api | rss | sample | a snapshot FILE (JSONL, .jsonl.gz or Atom).")
    ] = "api",
    since: Annotated[
        datetime | None,
        typer.Option("--since", formats=_FETCH_DATE, help="Backfill from this day (YYYY-MM-DD)."),
    ] = None,
    until: Annotated[
        datetime | None, typer.Option("--until", formats=_FETCH_DATE, help="Up to this day (YYYY-MM-DD).")
    ] = None,
    category: Annotated[
        list[str] | None,
        typer.Option(
            "--category", help="arXiv category (repeatable; default arxiv.categories).", show_default=False
        ),
    ] = None,
) -> None:
    """Fetch new papers (only what is new since the last successful fetch) and store them."""
    from monitor.sources.ingest import fetch
    from monitor.store.runs import recorded_run

    app_ctx = ctx_of(ctx)
    with recorded_run(app_ctx.store, "fetch") as run:
        summary = fetch(
            app_ctx.store,
            app_ctx.settings,
            source=source,
            since=since.date() if since else None,
            until=until.date() if until else None,
            categories=category,
            run=run,
            progress=on_terminal(),
        )
    console.print(
        f"fetch {summary.source}: [bold]{summary.new}[/] new, {summary.updated} updated (new version), "
        f"{summary.unchanged} unchanged; {summary.requests} request(s), "
        f"{summary.wait_seconds:.1f} s waiting on politeness, {summary.elapsed_seconds:.1f} s in all",
        highlight=False,
    )
    for note in summary.notes:
        console.print(f"  {escape(note)}", highlight=False)
    for warning in summary.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)


@anchors_app.command("verify")
def anchors_verify_command(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Option("--source", help="api, or a snapshot FILE to check against offline.")
    ] = "api",
) -> None:
    """Look every anchor up on arXiv (or in a snapshot) and mark it grounded / title_differs /
    date_differs / not_found."""
    from rich.table import Table

    from monitor.sources.anchors import verify_anchors
    from monitor.store.runs import recorded_run

    app_ctx = ctx_of(ctx)
    with recorded_run(app_ctx.store, "anchors") as run:
        report = verify_anchors(app_ctx.store, app_ctx.settings, source=source, run=run)
    table = Table("line", "arXiv id", "status", "cited", "found")
    for check in report.checks:
        style = "green" if check.status == "grounded" else "yellow"
        table.add_row(
            check.line_id,
            check.arxiv_id,
            f"[{style}]{check.status}[/]",
            escape(f"{check.cited_date or ''} {check.cited_title or ''}".strip()),
            escape(f"{check.found_published or ''} {check.found_title or ''}".strip()),
        )
    console.print(table)
    counts = report.counts()
    console.print(
        ", ".join(f"{k} {v}" for k, v in counts.items()) + f" (looked up in {report.looked_up_in})",
        highlight=False,
    )

# --- relevance and judge (judge, eval) -----------------------------------------------------------


@app.command("relevance")
def relevance_command(
    ctx: typer.Context,
    claim: Annotated[
        list[str] | None, typer.Option("--claim", help="Only this claim id (repeatable).", show_default=False)
    ] = None,
) -> None:
    """Pick the (paper, claim) pairs worth judging among papers each claim has not been scanned against."""
    from monitor.relevance import select_candidates
    from monitor.store.runs import recorded_run

    app_ctx = ctx_of(ctx)
    with recorded_run(app_ctx.store, "relevance") as run:
        summary = select_candidates(app_ctx.store, app_ctx.settings, run=run, claim_ids=claim or None)
    console.print(
        f"relevance ({summary.method}): {summary.papers_scanned} paper version(s) scanned against "
        f"{summary.claims} claim(s), [bold]{summary.candidates_added}[/] new candidate(s), "
        f"{summary.seconds:.1f} s",
        highlight=False,
    )


@app.command("judge")
def judge_command(
    ctx: typer.Context,
    force: Annotated[
        bool, typer.Option("--force", help="Judge again even what is cached (kept as history).")
    ] = False,
    claim: Annotated[
        list[str] | None, typer.Option("--claim", help="Only this claim id (repeatable).", show_default=False)
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count the calls and tokens a run would take; call nothing.")
    ] = False,
    provider: Annotated[
        str | None, typer.Option("--provider", help="local | openai (default: from the config).")
    ] = None,
    batch: Annotated[
        bool, typer.Option("--batch", help="OpenAI Batch API: collect finished batches, submit the rest.")
    ] = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="With --batch: poll until submitted batches finish.")
    ] = False,
    skip_relevance: Annotated[
        bool,
        typer.Option(
            "--skip-relevance",
            help="Judge the candidates already picked; do not sync claims or run relevance.",
        ),
    ] = False,
) -> None:
    """Sync claims, pick candidate (paper, claim) pairs, judge the pending ones and store assessments.

    SIGTERM/SIGINT stop starting calls: what finished is kept, the run ends `interrupted`, exit 130.
    A spent token budget exits 7 and a judge that answered nothing 6, as `monitor run` does.
    """
    from monitor.judge.factory import make_judge
    from monitor.judge.runner import judge_pending
    from monitor.schedule.pipeline import check_judged, prepare_candidates
    from monitor.schedule.signals import StopFlag, graceful_stop
    from monitor.store.runs import recorded_run

    app_ctx = ctx_of(ctx)
    settings, store = app_ctx.settings, app_ctx.store
    batch = batch or settings.judge.batch
    judge = make_judge(settings, provider or ("openai" if batch else None))
    flag = StopFlag(again="monitor judge")
    with graceful_stop(flag):
        if not skip_relevance:
            # Local and cheap; a dry run needs the candidates too to count what judging them would cost.
            relevance = prepare_candidates(store, settings, screen=not dry_run, progress=on_terminal())
            console.print(
                f"relevance: {relevance.candidates_added} new candidate pair(s) "
                f"from {relevance.papers_scanned} paper version(s)"
            )
            if relevance.screen:
                screened = relevance.screen
                console.print(
                    f"relevance screen: {screened['kept']} kept, {screened['dropped']} dropped, "
                    f"{screened['pending_left']} pending, {screened['calls']} call(s)"
                )
            flag.check("relevance")
        if dry_run and settings.relevance.screen == "llm":
            from monitor.relevance.screen import estimate_screen

            est = estimate_screen(store, settings)
            console.print(
                f"relevance screen (estimate): {est['calls']} call(s) for {est['pairs']} pending pair(s), "
                f"~{est['prompt_tokens']:,} prompt + ~{est['completion_tokens']:,} completion tokens, "
                f"${est['cost_estimate']:.2f}; the judge estimate below covers only pairs already kept"
            )
        if dry_run:
            if batch:
                settings.judge.batch = True  # the estimate at batch prices
            summary = judge_pending(store, settings, judge=judge, force=force, claim_ids=claim, dry_run=True)
            _print_judge_summary(summary.as_dict())
            return
        with recorded_run(store, "judge") as run:
            run.stop = flag.event  # the runner stops starting calls once it is set
            if batch:
                from monitor.judge.batch import run_batch

                result = run_batch(store, settings, judge, run=run, force=force, claim_ids=claim, wait=wait)
                _print_judge_summary(result.as_dict())
                flag.check("batches")
                return
            summary = judge_pending(
                store, settings, judge=judge, run=run, force=force, claim_ids=claim, progress=on_terminal()
            )
            _print_judge_summary(summary.as_dict())
            # Inside the recorded run, so its row ends partial (7), failed (6) or interrupted (130).
            check_judged(summary, settings, again="monitor judge")
            flag.check("judging")


def _print_judge_summary(data: dict[str, object]) -> None:
    from rich.table import Table

    title = "judge dry run (estimate)" if data.get("dry_run") else "judge"
    table = Table(title=f"{title}: {data['judge']} {data['model']} prompt {data['prompt_version']}")
    table.add_column("what")
    table.add_column("count", justify="right")
    labels = data.get("labels") or {}
    rows: list[tuple[str, object]] = [("pending pairs", data["pending"]), ("papers", data["papers"])]
    if not data.get("dry_run"):
        rows += [("judged", data["judged"])] + [(f"  {k}", v) for k, v in labels.items()]  # type: ignore[union-attr]
        rows += [("ungrounded", data["ungrounded"]), ("errors", data["errors"])]
        rows += [("skipped (done meanwhile)", data.get("skipped", 0))]
        rows += [("left (budget)", data["not_attempted"])]
    rows += [
        ("LLM calls", data["calls"]),
        ("prompt tokens", data["prompt_tokens"]),
        ("completion tokens", data["completion_tokens"]),
        ("cost estimate (USD)", f"{float(data['cost_estimate']):.4f}"),  # type: ignore[arg-type]
    ]
    if data.get("batches_submitted") or data.get("batches_waiting") or data.get("batches_collected"):
        rows += [("batches submitted", data["batches_submitted"])]
        rows += [("batches collected", data["batches_collected"])]
        rows += [("batches running", data["batches_waiting"])]
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)
    for message in data.get("error_messages") or []:  # type: ignore[union-attr]
        err_console.print(f"[yellow]warning:[/] {message}", highlight=False, soft_wrap=True)
    if data.get("dry_run") and data.get("budget_exhausted"):
        err_console.print("[yellow]warning:[/] this run would exceed judge.token_budget", highlight=False)


@app.command("eval")
def eval_command(
    ctx: typer.Context,
    pairs: Annotated[
        str, typer.Option("--pairs", help="Labelled pairs file (JSON lines: claim, title, abstract, label).")
    ],
    judge_name: Annotated[
        str | None, typer.Option("--judge", help="local | openai (default: from the config).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N pairs.")] = None,
    predictions: Annotated[
        str | None,
        typer.Option("--predictions", help="Also write each pair with the judge's answer (JSON lines)."),
    ] = None,
) -> None:
    """Score a judge on labelled pairs: macro-F1, per-class precision / recall / F1, confusion matrix."""
    import json
    from pathlib import Path

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from monitor.judge.evaluate import evaluate, print_report, read_pairs
    from monitor.judge.factory import make_judge

    pair_list = read_pairs(Path(pairs), limit=limit)
    judge = make_judge(ctx_of(ctx).settings, judge_name)
    columns = (TextColumn("judging"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("judging", total=len(pair_list))
        report = evaluate(judge, pair_list, pairs, on_progress=lambda n: bar.update(task, completed=n))
    if predictions:
        from monitor.files import write_atomic

        lines = (json.dumps(p.as_record(), ensure_ascii=False) for p in report.predictions)
        write_atomic(Path(predictions), "".join(line + "\n" for line in lines))
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))  # plain JSON: meant for other programs
    else:
        print_report(console, report)

# --- verdicts and report (verdicts, show, report) ------------------------------------------------


@app.command("verdicts")
def verdicts_command(
    ctx: typer.Context,
    line: Annotated[str | None, typer.Option("--line", help="Only claims of this line id.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    no_refresh: Annotated[
        bool, typer.Option("--no-refresh", help="Show stored verdicts without recomputing them first.")
    ] = False,
) -> None:
    """The current verdict table (recomputed from the current assessments first)."""
    from monitor.store.runs import recorded_run
    from monitor.verdicts.rollup import compute_verdicts, current_verdicts
    from monitor.verdicts.show import print_verdicts

    app_ctx = ctx_of(ctx)
    if not no_refresh:
        with recorded_run(app_ctx.existing_store, "verdicts") as run:
            compute_verdicts(app_ctx.store, app_ctx.settings, run=run)
    rows = current_verdicts(app_ctx.existing_store, line_id=line, settings=app_ctx.settings)
    print_verdicts(console, rows, as_json=as_json)


@app.command("show")
def show_command(
    ctx: typer.Context,
    claim_id: Annotated[str, typer.Argument(help="A claim id (a unique prefix will do).")],
) -> None:
    """One claim: text, date, lines, evidence (counted or not, and why) and verdict history."""
    from monitor.verdicts.show import claim_detail, print_claim

    app_ctx = ctx_of(ctx)
    print_claim(console, claim_detail(app_ctx.existing_store, app_ctx.settings, claim_id))


app.add_typer(review_app, name="review")


@app.command("report")
def report_command(
    ctx: typer.Context,
    period: Annotated[
        str | None,
        typer.Option("--period", help="week | month (last complete one), or 2026-W12 / 2026-03."),
    ] = None,
    since: Annotated[
        datetime | None, typer.Option("--since", formats=["%Y-%m-%d"], help="Custom period: first day.")
    ] = None,
    until: Annotated[
        datetime | None, typer.Option("--until", formats=["%Y-%m-%d"], help="Custom period: last day.")
    ] = None,
    fmt: Annotated[
        list[str] | None, typer.Option("--format", help="md | html (repeatable; Markdown is always written).")
    ] = None,
    email: Annotated[bool, typer.Option("--email", help="Mail the digest (once per period).")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --email: send even if already sent.")] = False,
) -> None:
    """Write the digest for a period (default: the last complete ISO week) and optionally mail it."""
    from monitor.report.digest import write_digest
    from monitor.report.show import check_formats, print_digest_result
    from monitor.store.runs import recorded_run

    app_ctx = ctx_of(ctx)
    settings = app_ctx.settings
    with recorded_run(app_ctx.existing_store, "report") as run:
        result = write_digest(
            app_ctx.store,
            settings,
            period=period or settings.report.period,
            since=since.date() if since else None,
            until=until.date() if until else None,
            formats=check_formats(fmt),
            run=run,
            force=force,
            email=email or None,
        )
    print_digest_result(console, result)


# --- operations (run, runs, retest, daemon, replay) ----------------------------------------------

_DATE = ["%Y-%m-%d"]
_JUDGE_HELP = "local | openai (default: judge.provider from the config)."


def _day(value: object) -> object:
    return value.date() if value is not None else None  # type: ignore[attr-defined]


def _judge_choice(value: str | None) -> str | None:
    if value is not None and value not in ("local", "openai"):
        raise typer.BadParameter(f"{value!r} is not one of local, openai", param_hint="--judge")
    return value


@app.command("run")
def run_command(
    ctx: typer.Context,
    source: Annotated[str, typer.Option("--source", help="api | rss | sample | a snapshot FILE.")] = "api",
    no_fetch: Annotated[bool, typer.Option("--no-fetch", help="Work on stored papers only.")] = False,
    no_email: Annotated[bool, typer.Option("--no-email", help="Do not mail the digest.")] = False,
    judge: Annotated[str | None, typer.Option("--judge", help=_JUDGE_HELP, callback=_judge_choice)] = None,
    since: Annotated[
        datetime | None, typer.Option("--since", formats=_DATE, help="Fetch papers from this day.")
    ] = None,
    until: Annotated[
        datetime | None, typer.Option("--until", formats=_DATE, help="Fetch papers up to this day.")
    ] = None,
) -> None:
    """The whole pipeline once (for cron): fetch, relevance, judge, verdicts, digest, email.

    One run at a time per database: a second exits with code 75 (or waits: schedule.on_lock_held).
    SIGTERM/SIGINT stop after the current step (exit 130); a rerun finishes what a killed run left.
    """
    from monitor.schedule.pipeline import RunOptions, run_once
    from monitor.schedule.show import print_outcome
    from monitor.schedule.signals import StopFlag, graceful_stop

    app_ctx = ctx_of(ctx)
    options = RunOptions(
        source=source,
        fetch=not no_fetch,
        email=False if no_email else None,
        judge=judge,
        since=_day(since),  # type: ignore[arg-type]
        until=_day(until),  # type: ignore[arg-type]
        progress=on_terminal(),
    )
    flag = StopFlag()
    with graceful_stop(flag):
        outcome = run_once(app_ctx.store, app_ctx.settings, options, stop=flag)
    print_outcome(console, outcome)


@app.command("runs")
def runs_command(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Recorded runs: status, timing, counts, tokens and errors."""
    from monitor.schedule.show import print_runs
    from monitor.store.runs import list_runs

    print_runs(console, list_runs(ctx_of(ctx).existing_store, limit), as_json)


@app.command("retest")
def retest_command(
    ctx: typer.Context,
    claim: Annotated[
        list[str] | None, typer.Option("--claim", help="Only this claim id (repeatable).", show_default=False)
    ] = None,
    line: Annotated[str | None, typer.Option("--line", help="Only the claims of this line.")] = None,
    since: Annotated[
        datetime | None, typer.Option("--since", formats=_DATE, help="Only papers published from this day.")
    ] = None,
    judge: Annotated[str | None, typer.Option("--judge", help=_JUDGE_HELP, callback=_judge_choice)] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Judge again even what is cached (old answers kept as history).")
    ] = False,
    show_all: Annotated[bool, typer.Option("--all", help="List unchanged verdicts too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Re-judge stored papers after claims, prompts, the model or papers changed; show verdicts that moved."""
    from monitor.schedule.retest import retest
    from monitor.schedule.show import print_retest
    from monitor.schedule.signals import StopFlag, graceful_stop

    app_ctx = ctx_of(ctx)
    flag = StopFlag(again="monitor retest")
    with graceful_stop(flag):
        result = retest(
            app_ctx.store, app_ctx.settings, claim_ids=claim, line_id=line, since=_day(since),  # type: ignore[arg-type]
            judge=judge, force=force, stop=flag,
        )
    print_retest(console, result, as_json, show_all)


@app.command("daemon")
def daemon_command(ctx: typer.Context) -> None:
    """Run on the config's schedule (weekly digest, daily fetch) until SIGTERM/SIGINT."""
    from monitor.schedule.daemon import run_daemon

    app_ctx = ctx_of(ctx)
    run_daemon(app_ctx.store, app_ctx.settings, announce=lambda text: console.print(text, highlight=False))


@app.command("replay")
def replay_command(
    ctx: typer.Context,
    from_day: Annotated[datetime, typer.Option("--from", formats=_DATE, help="First day (YYYY-MM-DD).")],
    to_day: Annotated[datetime, typer.Option("--to", formats=_DATE, help="Last day (YYYY-MM-DD).")],
    source: Annotated[str, typer.Option("--source", help="sample | a snapshot FILE (JSONL).")] = "sample",
    every: Annotated[str, typer.Option("--every", help="week | month: one digest per period.")] = "week",
    judge: Annotated[str | None, typer.Option("--judge", help=_JUDGE_HELP, callback=_judge_choice)] = "local",
    reports: Annotated[
        str | None, typer.Option("--reports", help="Write digests here (default: paths.reports).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Replay history from a snapshot as if live: one digest per period, verdicts as they unfolded; no email.

    Resumable: run it again after a kill and it finishes the remaining periods.
    """
    from pathlib import Path

    from monitor.schedule.replay import replay
    from monitor.schedule.show import print_period, print_replay
    from monitor.schedule.signals import StopFlag, graceful_stop

    if every not in ("week", "month"):
        raise typer.BadParameter(f"{every!r} is not one of week, month", param_hint="--every")
    app_ctx = ctx_of(ctx)
    settings = app_ctx.settings
    if reports:
        settings.paths.reports = Path(reports)
    flag = StopFlag(again="monitor replay")
    with graceful_stop(flag):
        summary = replay(
            app_ctx.store, settings, source, _day(from_day), _day(to_day), every,  # type: ignore[arg-type]
            judge=judge, stop=flag, on_period=None if as_json else lambda p: print_period(console, p),
        )
    print_replay(console, summary, as_json)



def main() -> None:
    """Console entry point: user errors become one line on stderr and a non-zero exit code."""
    try:
        app(standalone_mode=False)
    except MonitorError as exc:
        # escape: messages quote user text ("lines[0].claims", "[judge]") that rich would eat as markup
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as exc:  # click usage errors carry their own exit code
        import click

        # typer >= 0.20 vendors click: its usage errors are not the installed click's classes.
        if isinstance(exc, click.exceptions.ClickException | typer.TyperException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
