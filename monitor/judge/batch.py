"""`monitor judge --batch`: large backfills through the OpenAI Batch API, at half the price.

Each invocation first collects batches that have finished (writing their assessments exactly as the
runner does), then submits the pairs still pending that no open batch already carries. With `wait`
it polls until everything submitted is collected. The LLM engine does the work (monitor/llm/engine.py);
state lives in `judge_batches` (monitor/llm/batch.py), so a crash or a cron job that exits between
submit and collect loses nothing: the next invocation picks it up. A batch answer that fails
validation is recorded as an error; the pair stays pending and goes into the next batch (batches get
no corrective turn). Such an answer counts towards parking its pairs as a live one still invalid after
its corrective turn does: after `judge.park_after_failures` of them a pair is parked, live or by batch
(runner.py's `assessment_writer`). A collected answer that needs a second reading (`judge.second_look`)
waits for it as a live one does: after collecting, each invocation collects the finished second-look
batches and submits the second looks pending as a batch of their own (`judge.second_look_batch`, the
default: half price, a label counts one batch later), or asks them live as the runner does
(monitor/judge/runner.py, judge/second_look.py) with that setting off.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import openai

from monitor.config import Settings
from monitor.errors import ConfigError, JudgeError
from monitor.judge.base import Judge
from monitor.judge.openai_judge import OpenAIJudge
from monitor.judge.runner import (
    assessment_writer,
    count_usage,
    parked_notes,
    run_second_looks,
    take_second_looks,
)
from monitor.judge.second_look import by_batch, second_look_batches
from monitor.judge.work import JudgeSummary, estimate_judge_units, pending_units
from monitor.llm.engine import BatchRun, TokenBudget
from monitor.llm.recorder import ExchangeRecorder
from monitor.store.db import Store
from monitor.store.runs import partial_on_failure


def run_batch(
    store: Store,
    settings: Settings,
    judge: Judge,
    run_id: int | None = None,
    force: bool = False,
    claim_ids: list[str] | None = None,
    wait: bool = False,
    should_stop: Callable[[], bool] | None = None,
    budget: TokenBudget | None = None,
) -> JudgeSummary:
    """Collect finished batches, submit what is pending, (with `wait`) poll until all are in, then give
    the collected answers that wait for one their second reading, live, within what the collected
    answers left of `budget` (default all of `llm.token_budget`; no second look starts once
    `should_stop()` says so). Exchanges and assessments are stored under `run_id`; a failure carries
    the summary so far."""
    if not (judge.supports_batch and isinstance(judge, OpenAIJudge)):
        raise ConfigError("--batch needs the openai judge provider (the Batch API is OpenAI's)")
    summary = JudgeSummary(judge=judge.name, model=judge.model, prompt_version=judge.prompt_version)
    recorder = ExchangeRecorder(store, run_id)
    writer = assessment_writer(store, settings, judge, summary, force, run_id)
    engine = BatchRun(store, "judge", judge, writer, recorder, summary)
    with partial_on_failure(summary):
        try:
            engine.collect()
            pending = pending_units(store, judge, force=force, claim_ids=claim_ids, summary=summary)
            units = engine.not_carried(pending)
            summary.pending = sum(len(u.pairs) for u in units)
            summary.papers = len({u.paper_key for u in units})
            estimate_judge_units(units, judge.prompts)
            left = engine.submit(units, settings.llm, run_id)
            summary.budget_exhausted = bool(left)
            summary.not_attempted = sum(len(u.pairs) for u in left)
            summary.submitted = summary.pending - summary.not_attempted
            while wait and summary.batches_waiting:
                time.sleep(settings.llm.batch_poll_seconds)
                summary.batches_waiting = 0
                engine.collect()
        except openai.APIError as exc:
            raise JudgeError(f"Batch API: {judge.transport.describe(exc)}") from None
        finally:
            # Batch calls cost half, whatever llm.batch says.
            count_usage(summary, recorder, settings, judge, batch=True)
            summary.warnings.extend(parked_notes(settings, summary, writer))
        # Not held back by a submit the budget cut short: that batch's tokens are not spent yet.
        if writer.second_look is not None:
            budget = budget or TokenBudget.of(settings.llm)
            if by_batch(settings, True):
                _batch_second_looks(store, settings, judge, summary, run_id, claim_ids, budget, wait)
            else:
                run_second_looks(store, settings, summary, run_id, should_stop, claim_ids, budget)
    return summary


def _batch_second_looks(
    store: Store,
    settings: Settings,
    judge: OpenAIJudge,
    summary: JudgeSummary,
    run_id: int | None,
    claim_ids: list[str] | None,
    budget: TokenBudget,
    wait: bool,
) -> None:
    """The second readings by batch (`judge.second_look_batch`): collect and submit, and with `wait` poll
    until the batch submitted is collected, within what the first readings left of `budget`."""
    left = budget.after(summary.tokens)
    try:
        looked = second_look_batches(store, settings, run_id, claim_ids, left)
        while wait and looked.batches_waiting:  # collect only: what fails waits for the next invocation
            time.sleep(settings.llm.batch_poll_seconds)
            looked = looked.then(second_look_batches(store, settings, run_id, claim_ids, left, submit=False))
    except openai.APIError as exc:
        raise JudgeError(f"Batch API, second looks: {judge.transport.describe(exc)}") from None
    if looked.failed and not looked.agreed + looked.disagreed and not looked.stopped:
        # As a live pass stops on a server that answers none: no answer of the collected batch was usable.
        looked.stopped = f"no answer of {looked.failed} collected was usable ({looked.errors[0][:200]})"
    take_second_looks(summary, looked)
