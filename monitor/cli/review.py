"""The `monitor review` command group: parses arguments and calls the review stage (monitor/review/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from monitor.cli.context import console, ctx_of
from monitor.terminal import print_table

app = typer.Typer(
    help="Check the labels a careful reader should check: confirm, relabel, dismiss or annotate.",
    invoke_without_command=True,
    no_args_is_help=False,
)


def _store(ctx: typer.Context) -> Any:
    """Reviews are made on a store that exists: never create an empty one in the wrong folder."""
    return ctx_of(ctx).existing_store


def _refresh_verdicts(ctx: typer.Context) -> int:
    from monitor.review.session import refresh_verdicts

    app_ctx = ctx_of(ctx)
    return refresh_verdicts(app_ctx.existing_store, app_ctx.settings)


@app.callback()
def review_command(ctx: typer.Context) -> None:
    """Walk what needs review, most urgent first (y confirm, s/r/o/u relabel, ! before either: decisive,
    d dismiss, n note, k skip), then any proposed wordings (a accept, x reject)."""
    if ctx.invoked_subcommand is not None:
        return
    from monitor.errors import LockHeld
    from monitor.review.rewording import ProposeSummary, propose_rewordings
    from monitor.review.session import review_session
    from monitor.schedule.lock import run_lock

    app_ctx = ctx_of(ctx)
    store, settings = app_ctx.existing_store, app_ctx.settings

    def propose() -> ProposeSummary | None:
        """Wordings under the run lock (they are paid LLM calls); a run in progress: ask later."""
        try:
            with run_lock(store, settings):
                return propose_rewordings(store, settings)
        except LockHeld as exc:
            later = "`monitor review reword propose` asks later"
            console.print(f"wordings not proposed now: {escape(str(exc))} {later}.", highlight=False)
            return None

    review_session(console, store, settings, propose)


@app.command("set")
def review_set_command(
    ctx: typer.Context,
    assessment_id: Annotated[int, typer.Argument(help="The assessment id (`monitor review list`).")],
    label: Annotated[
        str | None, typer.Option("--label", "-l", help="S, R, O or U (or the full label).")
    ] = None,
    dismiss: Annotated[bool, typer.Option("--dismiss", help="Not evidence: counts for nothing.")] = False,
    note: Annotated[str, typer.Option("--note", "-n", help="A note kept with the decision.")] = "",
    decisive: Annotated[
        bool,
        typer.Option(
            "--decisive",
            help="With --label: this one paper settles the claim (weighs 1; a label alone weighs 0.7).",
        ),
    ] = False,
) -> None:
    """Record a decision for scripts: confirm or relabel (--label [--decisive]), --dismiss, or a --note."""
    from monitor.review.queue import record

    done = record(_store(ctx), assessment_id, label=label, dismiss=dismiss, note=note, decisive=decisive)
    moved = _refresh_verdicts(ctx) if done.action != "note" else 0
    console.print(
        f"{done.action}{' (decisive)' if done.decisive else ''} {done.claim_id} × {done.arxiv_id}: "
        f"{done.from_label} -> {done.label or 'dismissed'}; verdicts changed {moved}",
        highlight=False,
    )


@app.command("list")
def review_list_command(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
    reviewed: Annotated[
        bool, typer.Option("--reviewed", help="The decisions made, with their history, not the queue.")
    ] = False,
) -> None:
    """What needs review, most urgent first (or, with --reviewed, what was decided)."""
    from monitor.review.queue import decisions, review_queue

    app_ctx = ctx_of(ctx)
    if reviewed:
        rows = decisions(app_ctx.existing_store)
        if as_json:
            print(json.dumps(rows, indent=2, ensure_ascii=False))
            return
        table = Table(title=f"{len(rows)} reviewed pairs")
        for column in ("claim", "paper", "decision", "label", "history"):
            table.add_column(column, overflow="fold")
        for row in rows:
            steps = "; ".join(_step(h) for h in row["history"])  # type: ignore[union-attr]
            table.add_row(
                escape(str(row["claim_id"])), str(row["arxiv_id"]), str(row["action"]),
                str(row["label"] or "—"), escape(steps),
            )  # fmt: skip
        print_table(console, table)
        return
    queue = review_queue(app_ctx.existing_store, app_ctx.settings)
    if as_json:
        print(json.dumps([item.as_dict() for item in queue], indent=2, ensure_ascii=False))
        return
    table = Table(title=f"{len(queue)} pairs need review (`monitor review` walks them)")
    for column in ("id", "claim", "paper", "label", "conf", "judge", "why"):
        table.add_column(column, overflow="fold")
    for item in queue:
        table.add_row(
            str(item.assessment_id),
            escape(item.claim_id),
            escape(f"{item.arxiv_id}v{item.version}"),
            item.label,
            f"{item.confidence:.2f}",
            escape(item.judge),
            escape(item.reason),
        )
    print_table(console, table)


def _step(h: dict[str, object]) -> str:
    """One history row: when, what, from -> to, and the note."""
    note = f": {h['note']}" if h["note"] else ""
    return f"{h['when']} {h['action']} {h['from']}->{h['to'] or '—'}{note}"


@app.command("export")
def review_export_command(
    ctx: typer.Context,
    pairs: Annotated[
        Path, typer.Option("--pairs", help="Write the reviewed pairs here (JSONL, eval format).")
    ],
) -> None:
    """Reviewed pairs in `monitor eval --pairs` format, so reviews become evaluation data."""
    from monitor.review.queue import export_pairs

    count = export_pairs(_store(ctx), pairs)
    console.print(f"wrote {count} reviewed pairs to {pairs}", highlight=False)


reword_app = typer.Typer(
    help="Narrowed wordings for claims that confirmed evidence RELAXES: propose (LLM), list, accept, reject.",
    no_args_is_help=True,
)
app.add_typer(reword_app, name="reword")


@reword_app.command("propose")
def reword_propose_command(
    ctx: typer.Context,
    claim: Annotated[list[str] | None, typer.Argument(help="Claim ids (default: every claim due).")] = None,
) -> None:
    """Ask the configured LLM for a narrowed wording of each claim with confirmed RELAXES evidence."""
    from monitor.review.rewording import propose_rewordings
    from monitor.review.session import print_proposed
    from monitor.schedule.lock import run_lock

    app_ctx = ctx_of(ctx)
    with run_lock(app_ctx.existing_store, app_ctx.settings):  # it pays for LLM calls: one at a time
        summary = propose_rewordings(app_ctx.existing_store, app_ctx.settings, claim_ids=claim or None)
    print_proposed(console, summary)
    if not summary.proposed and not summary.failed:
        console.print(
            f"nothing to propose ({summary.unchanged} claim(s) already have an open proposal)",
            highlight=False,
        )
    if summary.failed and not summary.proposed:
        from monitor.errors import JudgeError

        raise JudgeError(f"no wording could be proposed; first: {summary.failed[0]}")


@reword_app.command("list")
def reword_list_command(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Proposed wordings waiting for a decision."""
    from monitor.review.rewording import open_views

    views = open_views(_store(ctx))
    if as_json:
        print(json.dumps([v.as_dict() for v in views], indent=2, ensure_ascii=False))
        return
    if not views:
        console.print("No proposed wordings.")
    for v in views:
        cites = ", ".join(a for a, _ in v.cited)
        console.print(f"[bold]{v.id}[/] {escape(v.claim_id)}: {escape(v.wording)} [dim](cites {cites})[/]")


@reword_app.command("accept")
def reword_accept_command(
    ctx: typer.Context,
    rewording_id: Annotated[int, typer.Argument(help="The proposal id (`monitor review reword list`).")],
    note: Annotated[str, typer.Option("--note", "-n", help="A note kept with the decision.")] = "",
) -> None:
    """Make the proposed wording the claim: it joins the old one's lines; the old one is retired."""
    from monitor.review.rewording import accept

    done = accept(_store(ctx), rewording_id, note)
    moved = _refresh_verdicts(ctx)
    console.print(
        f"accepted {done.rewording_id}: {done.old_claim_id} -> {done.new_claim_id} in {done.lines} line(s); "
        f"verdicts changed {moved}",
        highlight=False,
    )


@reword_app.command("reject")
def reword_reject_command(
    ctx: typer.Context,
    rewording_id: Annotated[int, typer.Argument(help="The proposal id (`monitor review reword list`).")],
    note: Annotated[str, typer.Option("--note", "-n", help="Why, kept with the decision.")] = "",
) -> None:
    """Decline a proposed wording; the claim stays as written."""
    from monitor.review.rewording import reject

    done = reject(_store(ctx), rewording_id, note)
    console.print(f"rejected {done.rewording_id} for {done.old_claim_id}", highlight=False)
