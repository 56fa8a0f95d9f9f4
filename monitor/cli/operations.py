"""Operations commands: run, runs, retest, daemon, replay."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from monitor.cli.context import DATE, JUDGE_HELP, console, ctx_of, day, judge_choice
from monitor.progress import progress_wanted

app = typer.Typer()


@app.command("run")
def run_command(
    ctx: typer.Context,
    source: Annotated[str, typer.Option("--source", help="api | rss | sample | a snapshot FILE.")] = "api",
    no_fetch: Annotated[bool, typer.Option("--no-fetch", help="Work on stored papers only.")] = False,
    no_email: Annotated[bool, typer.Option("--no-email", help="Do not mail the digest.")] = False,
    judge: Annotated[str | None, typer.Option("--judge", help=JUDGE_HELP, callback=judge_choice)] = None,
    since: Annotated[
        datetime | None, typer.Option("--since", formats=DATE, help="Fetch papers from this day.")
    ] = None,
    until: Annotated[
        datetime | None, typer.Option("--until", formats=DATE, help="Fetch papers up to this day.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print what the run did as JSON.")] = False,
) -> None:
    """The whole pipeline once (for cron): fetch, relevance, judge, verdicts, digest, email.

    One run at a time per database: a second exits with code 75 (or waits: schedule.on_lock_held).
    SIGTERM/SIGINT stop after the current step (exit 130); a rerun finishes what a killed run left.
    """
    from monitor.cli.show.runs import print_outcome
    from monitor.schedule.pipeline import RunOptions, run_once
    from monitor.schedule.signals import StopFlag, graceful_stop

    app_ctx = ctx_of(ctx)
    options = RunOptions(
        source=source,
        fetch=not no_fetch,
        email=False if no_email else None,
        judge=judge,
        since=day(since),
        until=day(until),
        progress=progress_wanted(),
    )
    with graceful_stop(StopFlag()) as flag:
        outcome = run_once(app_ctx.store, app_ctx.settings, options, stop=flag)
    if as_json:
        import dataclasses
        import json

        typer.echo(json.dumps(dataclasses.asdict(outcome), indent=2, ensure_ascii=False, default=str))
        return
    print_outcome(console, outcome)
    _print_next_steps(outcome.counts)


def _print_next_steps(counts: dict[str, Any]) -> None:
    """A run's closing lines: what a sample run left unjudged, and, after a triage-only judge, how to
    get an LLM judge. Printed every time: a newcomer reads them once and cron logs can spare them."""
    scope = counts.get("scope") or {}
    if scope.get("unjudged_pairs"):
        console.print(
            f"Judged the papers of {scope['period']} only, the digest's period. {scope['unjudged_pairs']:,} "
            f"candidate pairs of {scope['unjudged_papers']:,} earlier papers wait: `monitor judge` judges "
            "them, then `monitor report` rewrites the digest.",
            highlight=False,
        )
    from monitor.judge_names import triage_only_judge

    if not triage_only_judge(str((counts.get("judge") or {}).get("judge"))):
        return
    from monitor.judge.embedded import measured_coverage

    coverage = measured_coverage()
    found = f" (on held-out pairs, {coverage.found} of {coverage.bearing})" if coverage else ""
    # The price is asked of the LLM judge by name: a dry run of the judge in force (the embedded one)
    # has nothing to price, and after `monitor judge` nothing pending either.
    console.print(
        f"The embedded judge labelled these pairs offline; it finds only some of the papers that bear on a "
        f"claim{found}. What an LLM judge would cost: `monitor judge --dry-run --judge openai` prices the "
        "stored pairs it has not judged, calling nothing (no key needed). To use one, `monitor doctor` "
        "finds a local Ollama, llama.cpp or vLLM server, or uses an API key, and writes the judge settings.",
        highlight=False,
    )


@app.command("runs")
def runs_command(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Recorded runs: status, timing, counts, tokens and errors."""
    from monitor.cli.show.runs import print_runs
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
        datetime | None, typer.Option("--since", formats=DATE, help="Only papers published from this day.")
    ] = None,
    judge: Annotated[str | None, typer.Option("--judge", help=JUDGE_HELP, callback=judge_choice)] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Judge again even what is cached (old answers kept as history).")
    ] = False,
    show_all: Annotated[bool, typer.Option("--all", help="List unchanged verdicts too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Re-judge stored papers after claims, prompts, the model or papers changed; show verdicts that moved."""
    from monitor.cli.show.runs import print_retest
    from monitor.schedule.retest import retest
    from monitor.schedule.signals import StopFlag, graceful_stop

    app_ctx = ctx_of(ctx)
    with graceful_stop(StopFlag(again="monitor retest")) as flag:
        result = retest(
            app_ctx.store,
            app_ctx.settings,
            claim_ids=claim,
            line_id=line,
            since=day(since),
            judge=judge,
            force=force,
            stop=flag,
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
    from_day: Annotated[datetime, typer.Option("--from", formats=DATE, help="First day (YYYY-MM-DD).")],
    to_day: Annotated[datetime, typer.Option("--to", formats=DATE, help="Last day (YYYY-MM-DD).")],
    source: Annotated[str, typer.Option("--source", help="sample | a snapshot FILE (JSONL).")] = "sample",
    every: Annotated[str, typer.Option("--every", help="week | month: one digest per period.")] = "week",
    judge: Annotated[
        str | None, typer.Option("--judge", help=JUDGE_HELP, callback=judge_choice)
    ] = "embedded",  # config.EMBEDDED: imported when a command runs, not for --help
    reports: Annotated[
        str | None, typer.Option("--reports", help="Write digests here (default: paths.reports).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Replay history from a snapshot as if live: one digest per period, verdicts as they unfolded; no email.

    Resumable: run it again after a kill and it finishes the remaining periods.
    """
    from pathlib import Path

    from monitor.cli.show.runs import print_period, print_replay
    from monitor.schedule.replay import replay
    from monitor.schedule.signals import StopFlag, graceful_stop

    if every not in ("week", "month"):
        raise typer.BadParameter(f"{every!r} is not one of week, month", param_hint="--every")
    app_ctx = ctx_of(ctx)
    settings = app_ctx.settings
    if reports:
        settings.paths.reports = Path(reports)
    with graceful_stop(StopFlag(again="monitor replay")) as flag:
        summary = replay(
            app_ctx.store,
            settings,
            source,
            from_day.date(),
            to_day.date(),
            every,  # type: ignore[arg-type]
            judge=judge,
            stop=flag,
            on_period=None if as_json else lambda p: print_period(console, p),
        )
    print_replay(console, summary, as_json)
