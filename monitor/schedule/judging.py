"""`monitor judge`: the flow's claims, relevance, screen and judge stages on their own.

A dry run counts what judging (and an LLM relevance screen) would take and calls nothing, without the
run lock; with nothing pending it says so, and prices no relevance alternatives unless asked. `--batch`
hands the pending pairs to the OpenAI Batch API. A live run takes the run lock, as `monitor run` does
(two processes judging the same pending pairs would pay for each twice), and runs the flow's judge
stage with its checks (schedule/flow.py) inside a recorded `judge` run, so the row ends partial (7),
failed (6), interrupted (130) or, having lost the lock, failed (75) as `monitor run` would. A batch
invocation is checked by the same rule (`check_judged`) once it has collected, submitted and asked the
collected answers' second looks: a batch still running is no failure, a spent budget (at submit or in
the second looks) is 7, and collected answers of which none was usable, or second looks the server
would not take, are 6, as they are live.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monitor.config import Settings
from monitor.schedule.flow import Flow, Scope, Steps, check_judged, make_job
from monitor.schedule.lock import RunLock, locked_run
from monitor.schedule.signals import StopFlag
from monitor.store.db import Store

if TYPE_CHECKING:
    from monitor.judge.base import Judge

# Called with a step's name ("relevance", "screen", "screen estimate", "judge", "batches") and its result
# as soon as it is ready, so the caller prints it even when a later step raises.
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

    Raises as the flow's judge stage checks (schedule/flow.py); `show` sees each result before that.
    """
    from monitor.claims.listing import check_claim_ids
    from monitor.judge.factory import make_judge

    batch = request.batch or settings.llm.batch
    provider = request.provider or ("openai" if batch else None)
    judge = make_judge(settings, provider, connect=not request.dry_run)  # a dry run calls nothing: no key
    if request.dry_run:
        if request.relevance:  # the candidates too, to count what judging them would cost; no screen
            _pick(store, settings, request, stop, None, show, "claims", "relevance")
        check_claim_ids(store, request.claim_ids)  # after the claims sync, which may add the claim
        _estimate(store, settings, judge, request, batch, show)
        return
    with locked_run(store, settings, "judge", stop.event) as (run, held, _):
        if request.relevance:  # unrecorded, as in a dry run, but under the lock: the screen calls the LLM
            _pick(store, settings, request, stop, held, show, "claims", "relevance", "screen")
        check_claim_ids(store, request.claim_ids)
        scope = Scope(claim_ids=request.claim_ids, force=request.force)
        job = make_job(
            store,
            settings,
            run,
            stop,
            "monitor judge --batch" if batch else "monitor judge",  # what goes on after a spent budget
            held,
            scope=scope,
            judge=judge,
            progress=request.progress,
        )
        step = Steps(store, run, stop, held)
        if batch:
            from monitor.judge.batch import run_batch

            step(
                "batches",
                # The second looks of what is collected are live: the run's stop signal and budget.
                lambda: run_batch(
                    store,
                    settings,
                    judge,
                    run.id,
                    force=request.force,
                    claim_ids=request.claim_ids,
                    wait=request.wait,
                    should_stop=job.should_stop,
                    budget=job.budget,
                ),
                shown=lambda result: show("batches", result),
                policy=lambda result: check_judged(job, result),  # the live judge stage's own check
            )
            return
        Flow(job, step, show).run("judge")


def _pick(
    store: Store,
    settings: Settings,
    request: JudgeRequest,
    stop: StopFlag,
    lock: RunLock | None,
    show: Show,
    *stages: str,
) -> None:
    """Claims, relevance and the LLM screen for every claim, unrecorded (a dry run leaves new pairs
    pending before an LLM screen: it must call nothing); `show` sees relevance's and the screen's."""

    def shown(stage: str, result: Any) -> None:
        if stage != "claims" and result is not None:
            show(stage, result)

    job = make_job(store, settings, None, stop, "monitor judge", lock, progress=request.progress)
    Flow(job, Steps(store, None, stop, lock), shown).run(*stages)


def _estimate(
    store: Store, settings: Settings, judge: Judge, request: JudgeRequest, batch: bool, show: Show
) -> None:
    """What judging the pending pairs would take (and screening them, with the LLM screen); calls nothing.

    With nothing pending (no pair, no second look waiting) it says so ("nothing pending") and, unless
    asked, prices no alternatives.
    """
    from monitor.judge.runner import judge_pending

    screen_pairs = 0
    if settings.relevance_in_force().screen == "llm":
        from monitor.judge.estimate import after_screen
        from monitor.relevance.screen import estimate_screen, pending_screen_units

        units = pending_screen_units(store, settings)  # read once: the screen's price and what it keeps
        screened = estimate_screen(store, settings, units)
        screen_pairs = int(screened["pairs"])  # type: ignore[call-overload]
        if screen_pairs:
            screened["after_screen"] = after_screen(store, settings, units, batch).as_dict()
        show("screen estimate", screened)
    summary = judge_pending(
        store, settings, judge, force=request.force, claim_ids=request.claim_ids, dry_run=True, batch=batch
    )
    pending = summary.pending + screen_pairs
    if request.alternatives or (request.alternatives is None and pending):
        from monitor.judge.estimate import alternatives

        show("alternatives", alternatives(store, settings, days=ALTERNATIVES_DAYS))
    show("judge", summary)
    waiting = summary.second_looks_waiting.looks if summary.second_looks_waiting else 0
    if not pending and not waiting:  # second looks left waiting: a run would call the LLM for them
        show("nothing pending", summary)
