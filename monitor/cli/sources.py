"""Sources commands: fetch, and the anchor papers (list, verify)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.markup import escape

from monitor.cli.context import DATE, console, ctx_of, warn
from monitor.progress import progress_wanted
from monitor.terminal import print_table

app = typer.Typer()
anchors_app = typer.Typer(
    help="Anchor papers the lines cite; without a subcommand, list them.", invoke_without_command=True
)


@app.command("fetch")
def fetch_command(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Option("--source", help="api | rss | sample | a snapshot FILE (JSONL, .jsonl.gz or Atom).")
    ] = "api",
    since: Annotated[
        datetime | None,
        typer.Option("--since", formats=DATE, help="Backfill from this day (YYYY-MM-DD)."),
    ] = None,
    until: Annotated[
        datetime | None, typer.Option("--until", formats=DATE, help="Up to this day (YYYY-MM-DD).")
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
            progress=progress_wanted(),
        )
        run.record(summary)
    console.print(
        f"fetch {summary.source}: [bold]{summary.new}[/] new, {summary.updated} updated (new version), "
        f"{summary.unchanged} unchanged; {summary.requests} request(s), "
        f"{summary.wait_seconds:.1f} s waiting on politeness, {summary.elapsed_seconds:.1f} s in all",
        highlight=False,
    )
    for note in summary.notes:
        console.print(f"  {escape(note)}", highlight=False)
    for warning in summary.warnings:
        warn(warning)  # one line each, unwrapped: a file:line a reader or a script can find


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
    from monitor.cli.show.claims import print_anchors

    store = ctx_of(ctx).existing_store
    require_claims(store)
    views = list_anchors(store, include_retired=show_all)
    if as_json:
        typer.echo(json.dumps([v.as_dict() for v in views], indent=2, ensure_ascii=False))
        return
    print_anchors(console, views)


@anchors_app.command("verify")
def anchors_verify_command(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Option("--source", help="api, or a snapshot FILE to check against offline.")
    ] = "api",
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
) -> None:
    """Look every anchor up on arXiv (or in a snapshot) and mark it grounded / title_differs /
    date_differs / not_found."""
    from rich.table import Table

    from monitor.sources.anchors import verify_anchors
    from monitor.store.runs import recorded_run

    app_ctx = ctx_of(ctx)
    with recorded_run(app_ctx.store, "anchors") as run:
        report = verify_anchors(app_ctx.store, app_ctx.settings, source=source)
        run.record(report)
    if as_json:
        import dataclasses
        import json

        checks = [dataclasses.asdict(check) for check in report.checks]
        data = {"checks": checks, "counts": report.counts(), "looked_up_in": report.looked_up_in}
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
        return
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
    print_table(console, table)
    counts = report.counts()
    console.print(
        ", ".join(f"{k} {v}" for k, v in counts.items()) + f" (looked up in {report.looked_up_in})",
        highlight=False,
    )
