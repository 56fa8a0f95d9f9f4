"""`monitor judge`: the pipeline's claims, relevance and judge steps on their own.

A dry run counts what judging (and an LLM relevance screen) would take and calls nothing, without the
run lock; with nothing pending it says so, and prices no relevance alternatives unless asked. `--batch`
hands the pending pairs to the OpenAI Batch API. A live run takes the run lock, as `monitor run` does
(two processes judging the same pending pairs would pay for each twice), and judges under the
pipeline's budget-and-stop policy (`pipeline.judge_step`) inside a recorded `judge` run, so the row
ends partial (7), failed (6), interrupted (130) or, having lost the lock, failed (75) as `monitor run`
would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monitor.config import Settings
from monitor.schedule.lock import locked_run
from monitor.schedule.pipeline import Steps, check_screened, judge_step, sync_claims
from monitor.schedule.signals import StopFlag
from monitor.store.db import Store

if TYPE_CHECKING:
    from monitor.judge.base import Judge

# Called with a step's name ("relevance", "screen estimate", "judge", "batches") and its result as soon
# as it is ready, so the caller prints it even when a later step raises.
Show = Callable[[str, Any], None]


@dataclass
class JudgeRequest:
    """What `monitor judge` was asked to do."""

    force: bool = False
    claim_ids: list[str] | None = None
    dry_run: bool = False
    provider: str | None = None  # local | openai; None: from the config (openai for a batch)
    batch: bool = False  # also when settings.llm.batch says so
    wait: bool = False  # with batch: poll until the submitted batches finish
    relevance: bool = True  # sync claims and pick candidates first
    progress: bool = False
    # With dry_run, price each relevance setting over the last week's papers: True always, False never,
    # None only when pairs are pending (nothing pending: a rerun would call nothing, and the table costs
    # tens of seconds of embedding and prompt rendering).
    alternatives: bool | None = None


ALTERNATIVES_DAYS = 7  # the dry run prices a week of the store's newest papers, like a weekly run


def judge_once(store: Store, settings: Settings, request: JudgeRequest, stop: StopFlag, show: Show) -> None:
    """Sync claims and pick candidates (unless told not to), then estimate, batch or judge the pending pairs.

    Raises as `pipeline.judge_step` does; `show` sees each result before that.
    """
    from monitor.claims.listing import check_claim_ids
    from monitor.judge.factory import make_judge

    batch = request.batch or settings.llm.batch
    provider = request.provider or ("openai" if batch else None)
    judge = make_judge(settings, provider, connect=not request.dry_run)  # a dry run calls nothing: no key
    if request.dry_run:
        if request.relevance:
            _pick(Steps(store, None, stop), store, settings, request, show)
        check_claim_ids(store, request.claim_ids)  # after the claims sync, which may add the claim
        _estimate(store, settings, judge, request, batch, show)
        return
    with locked_run(store, settings, "judge", stop.event) as (run, held, _):
        if request.relevance:  # unrecorded, as in a dry run, but under the lock: the screen calls the LLM
            _pick(Steps(store, None, stop, held), store, settings, request, show)
        check_claim_ids(store, request.claim_ids)
        step = Steps(store, run, stop, held)
        which = {"force": request.force, "claim_ids": request.claim_ids}
        if batch:
            from monitor.judge.batch import run_batch

            step(
                "batches",
                lambda: run_batch(store, settings, judge, run.id, wait=request.wait, **which),
                shown=lambda result: show("batches", result),
            )
            return
        step(
            "judge",
            lambda: judge_step(
                store,
                settings,
                judge,
                run,
                "monitor judge",
                shown=lambda summary: show("judge", summary),
                progress=request.progress,
                **which,
            ),
        )


def _pick(step: Steps, store: Store, settings: Settings, request: JudgeRequest, show: Show) -> None:
    """Claims and relevance, unrecorded. A dry run needs the candidates too, to count what judging them
    would cost, but leaves new pairs pending before an LLM screen (it must call nothing)."""
    from monitor.relevance import select_candidates

    step("claims", lambda: sync_claims(store, settings))
    picked = step(
        "relevance",
        lambda: select_candidates(store, settings, screen=not request.dry_run, progress=request.progress),
        shown=lambda picked: show("relevance", picked),
    )
    check_screened(picked, settings, "monitor judge")


def _estimate(
    store: Store, settings: Settings, judge: Judge, request: JudgeRequest, batch: bool, show: Show
) -> None:
    """What judging the pending pairs would take (and screening them, with the LLM screen); calls nothing.

    With nothing pending it says so ("nothing pending") and, unless asked, prices no alternatives.
    """
    from monitor.judge.runner import judge_pending

    screen_pairs = 0
    if settings.relevance_in_force().screen == "llm":
        from monitor.judge.estimate import after_screen
        from monitor.relevance.screen import estimate_screen

        screened = estimate_screen(store, settings)
        screen_pairs = int(screened["pairs"])  # type: ignore[call-overload]
        if screen_pairs:
            screened["after_screen"] = after_screen(store, settings, screen_pairs).as_dict()
        show("screen estimate", screened)
    # The estimate at batch prices: on a copy, so the caller's settings say what its config says.
    priced = settings.model_copy(update={"llm": settings.llm.model_copy(update={"batch": batch})})
    summary = judge_pending(
        store, priced, judge=judge, force=request.force, claim_ids=request.claim_ids, dry_run=True
    )
    pending = summary.pending + screen_pairs
    if request.alternatives or (request.alternatives is None and pending):
        from monitor.judge.estimate import alternatives

        show("alternatives", alternatives(store, settings, days=ALTERNATIVES_DAYS))
    show("judge", summary)
    if not pending:
        show("nothing pending", summary)
