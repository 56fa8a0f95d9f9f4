"""What `monitor verdicts` and `monitor show CLAIM_ID` print: the verdict table and one claim in full."""

from __future__ import annotations

import json
import textwrap

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from monitor.judge_names import shown_judge
from monitor.markup import plain_text
from monitor.terminal import print_table
from monitor.verdicts.detail import ClaimDetail
from monitor.verdicts.rollup import CurrentVerdict
from monitor.verdicts.rules import MEANINGS

CLAIM_SHOWN = 90  # characters of a claim the verdict table shows

STYLE = {
    "OVERTURNED": "bold red",
    "CONTESTED": "magenta",
    "PERISHABLE": "yellow",
    "DURABLE": "green",
    "UNSETTLED": "blue",
    "UNTESTED": "dim",
}


def _quoted(evidence: str) -> str:
    return f"“{plain_text(evidence)}”" if evidence else ""


def print_claim(console: Console, d: ClaimDetail) -> None:
    console.print(
        f"[bold]{escape(d.id)}[/]  [{STYLE.get(d.status, '')}]{d.status}[/]"
        + (f": {MEANINGS[d.status]}" if d.status in MEANINGS else "")
        + ("  (retired)" if d.retired else ""),
        soft_wrap=True,
    )
    # Prose wraps at words to the width (a terminal would cut a soft-wrapped line anywhere).
    console.print(escape(plain_text(d.text)))
    cutoff = f"papers after {d.cutoff}" if d.cutoff else "every paper"
    console.print(f"date: {escape(d.date_text or 'undated')}  (counts {cutoff})")
    for line_id, question in d.lines:
        console.print(f"line {escape(line_id)}: {escape(plain_text(question))}", soft_wrap=False)
    console.print(f"evidence: {escape(d.evidence_sentence)}", soft_wrap=False)
    if d.scale:
        console.print(escape(d.scale), soft_wrap=False, style="dim", highlight=False)
    relevant = [e for e in d.evidence if e.item.label != "UNRELATED"]
    unrelated = len(d.evidence) - len(relevant)
    if relevant:
        table = Table(
            title=f"Evidence ({len(relevant)} relevant, {unrelated} unrelated)", title_justify="left"
        )
        for col in ("paper", "published", "label", "conf", "judge", "counts", "quote, and why"):
            table.add_column(col, overflow="fold")
        for e in relevant:
            table.add_row(
                e.item.ref,
                str(e.item.published or "?"),
                e.item.label,
                f"{e.item.confidence:.2f}",
                shown_judge(e.item.judge),
                e.shown,
                escape("\n".join(part for part in (_quoted(e.item.evidence), e.note) if part)),
            )
        print_table(console, table)
    else:
        console.print(f"No relevant evidence ({unrelated} unrelated assessment(s)).")
    if d.history:
        table = Table(title="Verdict history", title_justify="left")
        for col in ("as of", "status", "changed", "papers"):
            table.add_column(col, overflow="fold")
        for h in d.history:
            table.add_row(str(h.as_of), h.status, "yes" if h.changed else "", escape(h.summary))
        print_table(console, table)
    else:
        console.print("No verdict computed yet (run `monitor verdicts`).")


def print_verdicts(console: Console, rows: list[CurrentVerdict], as_json: bool = False) -> None:
    if as_json:
        console.print_json(json.dumps([r.as_dict() for r in rows]))
        return
    if not rows:
        console.print("No active claims. Import some with `monitor seeds`.")
        return
    table = Table(title=f"Verdicts ({len(rows)} claims)", title_justify="left")
    table.add_column("status", no_wrap=True)
    table.add_column("claim")
    table.add_column("date")
    table.add_column("lines")
    table.add_column("since", no_wrap=True)
    table.add_column("papers")
    for r in rows:
        # Shortened at a word, never inside one: `monitor show` prints the whole text.
        text = textwrap.shorten(plain_text(r.text), CLAIM_SHOWN, placeholder=" …")
        table.add_row(
            f"[{STYLE.get(r.status, '')}]{r.status}[/]",
            f"{escape(text)}\n[dim]{r.claim_id}[/]",
            escape(r.date_text or "undated"),
            escape(", ".join(r.lines)),
            str(r.status_since or r.changed_at or "—"),
            escape(r.summary),
        )
    print_table(console, table)
    # What each verdict shown means: UNSETTLED (papers count) and UNTESTED (none does) read alike.
    for status in (s for s in MEANINGS if any(r.status == s for r in rows)):
        console.print(f"{status}: {MEANINGS[status]}", soft_wrap=True, highlight=False)
