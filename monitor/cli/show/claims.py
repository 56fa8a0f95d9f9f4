"""Rich output for the claims commands: import summaries and the lines / claims / anchors tables."""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from monitor.claims.changes import ImportReport
from monitor.claims.listing import ListedAnchor, ListedClaim, ListedLine
from monitor.terminal import print_table

SHORT = 110


def _short(text: str | None, limit: int = SHORT) -> str:
    """At most `limit` characters, cut between words (`--full` shows the whole text)."""
    return textwrap.shorten(text or "", limit, placeholder=" …")


def print_import(console: Console, report: ImportReport) -> None:
    by_status: dict[str, int] = {}
    for f in report.files:
        by_status[f.status] = by_status.get(f.status, 0) + 1
    files = ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
    t = report.totals
    totals = f"{t.get('lines', 0)} lines, {t.get('claims', 0)} claims, {t.get('anchors', 0)} anchors active"
    for skipped in report.skipped:
        console.print(f"[dim]skipped {escape(skipped)}[/]", highlight=False)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    n = f"{len(report.files)} file{'s' if len(report.files) != 1 else ''}"
    if not report.changed:
        console.print(f"unchanged: {n} ({files}); {totals}", highlight=False)
        return
    console.print(f"imported {n} ({files}); {totals}", highlight=False)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("change")
    table.add_column("count", justify="right")
    table.add_column("ids")
    rows: list[tuple[str, list[str]]] = [
        ("lines added", report.lines_added),
        ("lines updated", [f"{k} ({', '.join(v)})" for k, v in report.lines_updated.items()]),
        ("lines retired", report.lines_retired),
        ("lines reactivated", report.lines_reactivated),
        ("claims added", report.claims_added),
        ("claims updated", [f"{k} ({', '.join(v)})" for k, v in report.claims_updated.items()]),
        (
            "claims retired",
            [
                f"{c} -> {report.replaced_by[c]}" if c in report.replaced_by else c
                for c in report.claims_retired
            ],
        ),
        ("claims reactivated", report.claims_reactivated),
        ("links added", [f"{b} in {a}" for a, b in report.links_added]),
        ("links removed", [f"{b} from {a}" for a, b in report.links_removed]),
        ("anchors added", [f"{a}:{b}" for a, b in report.anchors_added]),
        ("anchors updated", [f"{a}:{b}" for a, b in report.anchors_updated]),
        ("anchors retired", [f"{a}:{b}" for a, b in report.anchors_retired]),
        ("files pruned", [f.path for f in report.files if f.status == "pruned"]),
    ]
    for name, ids in rows:
        if ids:
            shown = ", ".join(ids[:4]) + (f", … (+{len(ids) - 4})" if len(ids) > 4 else "")
            table.add_row(name, str(len(ids)), escape(shown))
    if report.links_moved:
        table.add_row("links reordered", str(report.links_moved), "")
    print_table(console, table)


def print_lines(console: Console, lines: list[ListedLine], hidden_notes: int = 0) -> None:
    shown = [v for v in lines if v.kind != "note"]
    table = Table(title=f"{len(shown)} inquiring line(s)", title_justify="left")
    table.add_column("id", no_wrap=True)
    table.add_column("question", ratio=1, min_width=20)
    mixed = len({v.kind for v in lines}) > 1
    if mixed:
        table.add_column("kind")
    table.add_column("notes", justify="right")
    table.add_column("dated", justify="right")
    if any(v.user for v in lines):
        table.add_column("user", justify="right")
    table.add_column("anchors", justify="right")
    table.add_column("span")
    for v in lines:
        cells = [v.id, escape(v.question) + (" [dim](retired)[/]" if v.status == "retired" else "")]
        cells += [v.kind] if mixed else []
        cells += [str(v.notes), str(v.dated)]
        cells += [str(v.user)] if any(x.user for x in lines) else []
        cells += [str(v.anchors), escape((v.span or "").removeprefix("Findings span "))]
        table.add_row(*cells, style="dim" if v.status == "retired" else None)
    print_table(console, table)
    if hidden_notes:
        console.print(
            f"[dim]+ {hidden_notes} single-note document(s) not shown; `monitor lines --notes` lists them[/]"
        )


def print_claims(console: Console, claims: list[ListedClaim], full: bool = False) -> None:
    retired = sum(1 for c in claims if c.status == "retired")
    title = f"{len(claims) - retired} active claim(s)" + (f", {retired} retired" if retired else "")
    table = Table(title=title, title_justify="left")
    table.add_column("id", no_wrap=True)
    table.add_column("kind")
    table.add_column("date", no_wrap=True)
    table.add_column("lines", justify="right")
    table.add_column("claim", ratio=4)
    for c in claims:
        text = escape(c.text if full else _short(c.text))
        if c.status == "retired":
            text += " [dim](retired" + (f", replaced by {c.replaced_by}" if c.replaced_by else "") + ")[/]"
        table.add_row(
            c.id,
            c.kind,
            escape(c.date_text or "–"),
            str(len(c.lines)),
            text,
            style="dim" if c.status == "retired" else None,
        )
    print_table(console, table)


def print_anchors(console: Console, anchors: list[ListedAnchor]) -> None:
    table = Table(title=f"{len(anchors)} anchor citation(s)", title_justify="left")
    table.add_column("line", no_wrap=True)
    table.add_column("arXiv", no_wrap=True)
    table.add_column("cited", no_wrap=True)
    table.add_column("cited title", ratio=1, min_width=16)
    table.add_column("status")
    found = any(a.found_title for a in anchors)
    if found:
        table.add_column("found title", ratio=1)
    colours = {"grounded": "green", "unverified": "dim", "not_found": "red", "not_in_snapshot": "dim"}
    for a in anchors:
        colour = colours.get(a.status, "yellow")
        cells = [
            a.line_id,
            a.arxiv_id,
            escape(a.cited_date or ""),
            escape(a.cited_title or ""),
            f"[{colour}]{a.status}[/]" + (" (retired)" if a.retired else ""),
        ]
        cells += [escape(a.found_title or "")] if found else []
        table.add_row(*cells)
    print_table(console, table)
