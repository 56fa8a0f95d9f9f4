"""One `monitor review` session at the terminal: the evidence queue, then any proposed wordings.

Decisions are written as they are made (terminal.py); verdicts are recomputed once after the evidence
walk, and wordings are asked for then when the walk confirmed something and an LLM is configured.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

from monitor.config import Settings
from monitor.review.queue import review_queue
from monitor.review.rewording import ProposeSummary, open_views, propose_rewordings
from monitor.review.terminal import walk, walk_proposals
from monitor.store.db import Store
from monitor.verdicts.rollup import compute_verdicts


def refresh_verdicts(store: Store, settings: Settings) -> int:
    """Recompute verdicts so a decision shows at once in `monitor verdicts` and the next digest."""
    return sum(1 for change in compute_verdicts(store, settings) if change.status_changed)


def print_proposed(console: Console, summary: ProposeSummary) -> None:
    if summary.proposed or summary.failed:
        console.print(f"proposed {len(summary.proposed)} narrowed wording(s)", highlight=False)
    for failure in summary.failed:
        console.print(f"[yellow]no proposal[/] {escape(failure)}", highlight=False)


def review_session(
    console: Console,
    store: Store,
    settings: Settings,
    propose: Callable[[], ProposeSummary | None] | None = None,
) -> None:
    """Walk the evidence that needs a human, then the open proposals; `q` in the first ends both.

    `propose` asks for wordings after the walk (the caller takes the run lock around it, as every
    command that calls an LLM does; None from it: not asked now); default: `propose_rewordings`."""
    queue = review_queue(store, settings)
    if queue:
        summary = walk(console, store, queue)
        moved = refresh_verdicts(store, settings) if summary.decided else 0
        console.print(
            f"confirmed {summary.confirmed}, relabelled {summary.relabelled}, dismissed {summary.dismissed}, "
            f"notes {summary.notes}, skipped {summary.skipped}, left {summary.left}; verdicts changed {moved}"
        )
        if summary.left:
            return  # quit: the proposals wait too
        if summary.decided and settings.llm_configured():
            proposed = propose() if propose is not None else propose_rewordings(store, settings)
            if proposed is not None:
                print_proposed(console, proposed)
    proposals = open_views(store)
    if not queue and not proposals:
        console.print("Nothing needs review.")
        return
    if proposals:
        done = walk_proposals(console, store, proposals)
        console.print(
            f"wordings accepted {done.accepted}, rejected {done.rejected}, skipped {done.skipped}, "
            f"left {done.left}"
        )
