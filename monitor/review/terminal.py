"""`monitor review`: walk the review queue in the terminal, one key per decision.

Each pair shows the claim and its date, the label and who gave it, the quote highlighted inside the
abstract, the rationale and the link. Every decision is written as soon as it is made, so quitting
(or a crash) loses nothing. On a terminal one key press decides; from a pipe, one line per decision
(its first character), which is what scripts and tests use.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from monitor.review.queue import SHORT, ReviewItem, record
from monitor.review.rewording import ProposalView, accept, reject
from monitor.store.db import Store

HELP = (
    "[bold]y[/] confirm · relabel [bold]s[/] SUPPORTS [bold]r[/] RELAXES [bold]o[/] OVERTURNS "
    "[bold]u[/] UNRELATED · [bold]![/] then y/s/r/o: decisive, this paper settles the claim · "
    "[bold]d[/] dismiss · [bold]n[/] note · [bold]k[/] skip · [bold]q[/] quit"
)
KEYS = {"y": "confirm", "d": "dismiss", "n": "note", "k": "skip", " ": "skip", "q": "quit"}
DECISIVE_KEY = "!"  # before a label key: the curator says this one paper settles the claim


@dataclass
class WalkSummary:
    """What a review session did."""

    confirmed: int = 0
    relabelled: int = 0
    dismissed: int = 0
    notes: int = 0
    skipped: int = 0
    left: int = 0  # not reached before quitting

    @property
    def decided(self) -> int:
        return self.confirmed + self.relabelled + self.dismissed


def read_key() -> str:
    """One key on a terminal; one line's first character from a pipe ("" at its end: quit)."""
    if sys.stdin.isatty():
        import click

        return click.getchar().lower()
    line = sys.stdin.readline()
    if not line:
        return "q"
    return (line.strip() or " ")[0].lower()


def read_line(prompt: str) -> str:
    if sys.stdin.isatty():
        return input(prompt)
    return sys.stdin.readline().rstrip("\n")


def highlighted(abstract: str, quote: str) -> Text:
    """The abstract with the quote's span styled; whitespace and case may differ from the quote."""
    text = Text(abstract)
    words = re.findall(r"\S+", quote.strip().strip("\"'"))
    if words:
        pattern = r"\s+".join(re.escape(w) for w in words)
        match = re.search(pattern, abstract, re.IGNORECASE)
        if match:
            text.stylize("bold reverse", match.start(), match.end())
    return text


def show(console: Console, item: ReviewItem, position: int, total: int) -> None:
    console.rule(f"[{position}/{total}] {escape(item.reason)}")
    console.print(
        f"[bold]Claim[/] {escape(item.claim_id)} ({escape(item.claim_date or 'undated')}), now {item.status}"
    )
    console.print(escape(item.claim), soft_wrap=True)
    console.print(
        f"[bold]{item.label}[/] {item.confidence:.2f} by {escape(item.judge)} · "
        f"[link={item.url}]{escape(item.title)}[/link] {item.url}",
        soft_wrap=True,
    )
    console.print(highlighted(item.abstract, item.evidence), soft_wrap=True)
    if item.evidence:
        console.print(f"[dim]quote:[/] {escape(item.evidence)}", soft_wrap=True)
    if item.rationale:
        console.print(f"[dim]rationale:[/] {escape(item.rationale)}", soft_wrap=True)
    console.print(HELP)


def walk(
    console: Console,
    store: Store,
    queue: list[ReviewItem],
    key: Callable[[], str] = read_key,
    line: Callable[[str], str] = read_line,
) -> WalkSummary:
    """Show each pair and record the curator's decision; stops at `q` or the end of input."""
    summary = WalkSummary()
    for index, item in enumerate(queue, start=1):
        show(console, item, index, len(queue))
        pressed, decisive = _decision_key(console, key)
        if KEYS.get(pressed) == "quit":
            summary.left = len(queue) - index + 1
            break
        if KEYS.get(pressed) == "skip":
            summary.skipped += 1
            continue
        if KEYS.get(pressed) == "note":
            record(store, item.assessment_id, note=line("note: "))
            summary.notes += 1
            continue
        if KEYS.get(pressed) == "dismiss":
            done = record(store, item.assessment_id, dismiss=True)
            summary.dismissed += 1
        else:
            label = item.label if KEYS.get(pressed) == "confirm" else SHORT[pressed.upper()]
            done = record(store, item.assessment_id, label=label, decisive=decisive)
            if done.action == "confirm":
                summary.confirmed += 1
            else:
                summary.relabelled += 1
        decided = f"{done.action}{' (decisive)' if done.decisive else ''}"
        console.print(f"[green]{decided}[/] {done.from_label} -> {done.label or 'dismissed'}")
    return summary


def _decision_key(console: Console, key: Callable[[], str]) -> tuple[str, bool]:
    """The next decision key, and whether `!` marked it decisive (only a label can be decisive)."""
    decisive = False
    while True:
        pressed = key()
        if pressed == DECISIVE_KEY:
            decisive = True
            console.print("decisive: [bold]y[/] confirm or [bold]s[/]/[bold]r[/]/[bold]o[/] relabel")
            continue
        labelled = pressed.upper() in SHORT or KEYS.get(pressed) == "confirm"
        if labelled or KEYS.get(pressed):
            return pressed, decisive and labelled
        console.print(HELP)


PROPOSAL_HELP = (
    "[bold]a[/] accept · [bold]x[/] reject · [bold]n[/] note and reject · [bold]k[/] skip · [bold]q[/] quit"
)
PROPOSAL_KEYS = {"a": "accept", "x": "reject", "n": "note", "k": "skip", " ": "skip", "q": "quit"}


@dataclass
class ProposalWalk:
    accepted: int = 0
    rejected: int = 0
    skipped: int = 0
    left: int = 0


def walk_proposals(
    console: Console,
    store: Store,
    proposals: list[ProposalView],
    key: Callable[[], str] = read_key,
    line: Callable[[str], str] = read_line,
) -> ProposalWalk:
    """Show each proposed wording beside the claim; accept, reject (with a note) or skip it."""
    summary = ProposalWalk()
    for index, p in enumerate(proposals, start=1):
        console.rule(f"[{index}/{len(proposals)}] proposed wording for {escape(p.claim_id)}")
        console.print(
            f"[bold]Now[/] ({escape(p.claim_date or 'undated')}): {escape(p.claim)}", soft_wrap=True
        )
        console.print(f"[bold]Proposed[/]: {escape(p.wording)}", soft_wrap=True)
        console.print(
            f"[dim]condition:[/] {escape(p.condition)} · [dim]by[/] {escape(p.model)}", soft_wrap=True
        )
        for arxiv_id, title in p.cited:
            console.print(f"  cites {escape(arxiv_id)} {escape(title)}", soft_wrap=True)
        console.print(PROPOSAL_HELP)
        while (action := PROPOSAL_KEYS.get(key())) is None:
            console.print(PROPOSAL_HELP)
        if action == "quit":
            summary.left = len(proposals) - index + 1
            break
        if action == "skip":
            summary.skipped += 1
            continue
        if action == "accept":
            done = accept(store, p.id)
            summary.accepted += 1
            console.print(
                f"[green]accepted[/]: {done.old_claim_id} -> {done.new_claim_id} in {done.lines} line(s)"
            )
            continue
        done = reject(store, p.id, note=line("note: ") if action == "note" else "")
        summary.rejected += 1
        console.print("[yellow]rejected[/]")
    return summary
