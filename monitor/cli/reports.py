"""Report commands: verdicts, show, report."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from monitor.cli.context import DATE, check_formats, console, ctx_of, day

app = typer.Typer()


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
    from monitor.cli.show.verdicts import print_verdicts
    from monitor.store.runs import recorded_run
    from monitor.verdicts.rollup import compute_verdicts, current_verdicts

    app_ctx = ctx_of(ctx)
    if not no_refresh:
        with recorded_run(app_ctx.existing_store, "verdicts") as run:
            run.record(compute_verdicts(app_ctx.store, app_ctx.settings, run_id=run.id))
    rows = current_verdicts(app_ctx.existing_store, line_id=line)
    print_verdicts(console, rows, as_json=as_json)


@app.command("show")
def show_command(
    ctx: typer.Context,
    claim_id: Annotated[str, typer.Argument(help="A claim id (a unique prefix will do).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text and tables.")] = False,
) -> None:
    """One claim: text, date, lines, evidence (counted or not, and why) and verdict history."""
    from monitor.cli.show.verdicts import print_claim
    from monitor.verdicts.detail import claim_detail

    app_ctx = ctx_of(ctx)
    detail = claim_detail(app_ctx.existing_store, app_ctx.settings, claim_id)
    if as_json:
        typer.echo(json.dumps(detail.as_dict(), indent=2, ensure_ascii=False))
        return
    print_claim(console, detail)


@app.command("report")
def report_command(
    ctx: typer.Context,
    period: Annotated[
        str | None,
        typer.Option(
            "--period",
            help="week | month (the last complete one the store covers), or 2026-W12 / 2026-03 "
            "(reported with a notice when the store covers it only in part).",
        ),
    ] = None,
    since: Annotated[
        datetime | None, typer.Option("--since", formats=DATE, help="Custom period: first day.")
    ] = None,
    until: Annotated[
        datetime | None, typer.Option("--until", formats=DATE, help="Custom period: last day.")
    ] = None,
    fmt: Annotated[
        list[str] | None, typer.Option("--format", help="md | html (repeatable; Markdown is always written).")
    ] = None,
    email: Annotated[bool, typer.Option("--email", help="Mail the digest (once per period).")] = False,
    notify: Annotated[
        bool, typer.Option("--notify", help="Post its summary to report.webhooks (once per period).")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="With --email/--notify: send even if already sent.")
    ] = False,
    reports: Annotated[
        Path | None, typer.Option("--reports", help="Write the digest here (default: paths.reports).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written as JSON.")] = False,
) -> None:
    """Write the digest for a period (default: the last complete ISO week); optionally mail and post it."""
    from monitor.cli.show.digest import print_digest_result
    from monitor.schedule.reporting import ReportRequest, report_once

    app_ctx = ctx_of(ctx)
    settings = app_ctx.settings
    if reports:
        settings.paths.reports = reports
    request = ReportRequest(period, day(since), day(until), check_formats(fmt), email, notify, force)
    result = report_once(app_ctx.existing_store, settings, request)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2, ensure_ascii=False, default=str))
        return
    print_digest_result(console, result)
