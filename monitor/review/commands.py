"""The `monitor review` command group: parses arguments and calls the review stage, nothing more."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

review_app = typer.Typer(
    help="Check the labels a careful reader should check: confirm, relabel, dismiss or annotate.",
    invoke_without_command=True,
    no_args_is_help=False,
)
console = Console()


def _context(ctx: typer.Context) -> Any:
    """The root command's AppContext (settings and store), which click hands down to subcommands."""
    return ctx.obj


def _store(ctx: typer.Context) -> Any:
    """Reviews are made on a store that exists: never create an empty one in the wrong folder."""
    return ctx.obj.existing_store


def _refresh_verdicts(ctx: typer.Context) -> int:
    """Recompute verdicts so a decision shows at once in `monitor verdicts` and the next digest."""
    from monitor.verdicts.rollup import compute_verdicts

    app_ctx = _context(ctx)
    return sum(1 for c in compute_verdicts(app_ctx.existing_store, app_ctx.settings) if c.status_changed)


@review_app.callback()
def review_command(ctx: typer.Context) -> None:
    """Walk what needs review, most urgent first (y confirm, s/r/o/u relabel, d dismiss, n note, k skip)."""
    if ctx.invoked_subcommand is not None:
        return
    from monitor.review.queue import review_queue
    from monitor.review.terminal import walk

    app_ctx = _context(ctx)
    queue = review_queue(app_ctx.existing_store, app_ctx.settings)
    if not queue:
        console.print("Nothing needs review.")
        return
    summary = walk(console, app_ctx.existing_store, queue)
    moved = _refresh_verdicts(ctx) if summary.decided else 0
    console.print(
        f"confirmed {summary.confirmed}, relabelled {summary.relabelled}, dismissed {summary.dismissed}, "
        f"notes {summary.notes}, skipped {summary.skipped}, left {summary.left}; verdicts changed {moved}"
    )


@review_app.command("set")
def review_set_command(
    ctx: typer.Context,
    assessment_id: Annotated[int, typer.Argument(help="The assessment id (`monitor review list`).")],
    label: Annotated[
        str | None, typer.Option("--label", "-l", help="S, R, O or U (or the full label).")
    ] = None,
    dismiss: Annotated[bool, typer.Option("--dismiss", help="Not evidence: counts for nothing.")] = False,
    note: Annotated[str, typer.Option("--note", "-n", help="A note kept with the decision.")] = "",
) -> None:
    """Record a decision for scripts: confirm or relabel (--label), --dismiss, or only a --note."""
    from monitor.review.queue import record

    done = record(_store(ctx), assessment_id, label=label, dismiss=dismiss, note=note)
    moved = _refresh_verdicts(ctx) if done.action != "note" else 0
    console.print(
        f"{done.action} {done.claim_id} × {done.arxiv_id}: {done.from_label} -> {done.label or 'dismissed'}"
        f"; verdicts changed {moved}",
        highlight=False,
    )


@review_app.command("list")
def review_list_command(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
    reviewed: Annotated[
        bool, typer.Option("--reviewed", help="The decisions made, with their history, not the queue.")
    ] = False,
) -> None:
    """What needs review, most urgent first (or, with --reviewed, what was decided)."""
    from monitor.review.queue import decisions, review_queue

    app_ctx = _context(ctx)
    if reviewed:
        rows = decisions(app_ctx.existing_store)
        if as_json:
            print(json.dumps(rows, indent=2, ensure_ascii=False))
            return
        table = Table(title=f"{len(rows)} reviewed pairs")
        for column in ("claim", "paper", "decision", "label", "history"):
            table.add_column(column, overflow="fold")
        for row in rows:
            steps = "; ".join(f"{h['when']} {h['action']} {h['from']}->{h['to']}" for h in row["history"])  # type: ignore[union-attr]
            table.add_row(
                str(row["claim_id"]), str(row["arxiv_id"]), str(row["action"]), str(row["label"]), steps
            )
        console.print(table)
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
    console.print(table)


@review_app.command("export")
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
