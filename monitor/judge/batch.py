"""`monitor judge --batch`: large backfills through the OpenAI Batch API, at half the price.

Each invocation first collects batches that have finished (writing their assessments exactly as the
runner does), then submits the pairs still pending that no open batch already carries. With `wait`
it polls until everything submitted is collected. State lives in `judge_batches` (monitor/llm/batch.py),
so a crash or a cron job that exits between submit and collect loses nothing: the next invocation
picks it up. A batch answer that fails validation is recorded as an error; the pair stays pending and
goes into the next batch (batches get no corrective turn).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import openai

from monitor.config import Settings
from monitor.errors import ConfigError, JudgeError
from monitor.judge.base import Judge
from monitor.judge.openai_judge import OpenAIJudge
from monitor.judge.runner import settle
from monitor.judge.schema import parse_answer
from monitor.judge.work import JudgeSummary, Pair, WorkUnit, estimate_units, pending_units
from monitor.judge.writer import AssessmentWriter
from monitor.llm import batch as batches
from monitor.llm.answers import InvalidAnswer
from monitor.llm.cost import within_budget
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.texts import ClaimText, PaperText
from monitor.store.db import Store
from monitor.store.records import JudgeBatch
from monitor.store.runs import RunRecord

log = logging.getLogger(__name__)


def _unit_state(unit: WorkUnit, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "paper": {
            "arxiv_id": unit.paper.arxiv_id,
            "version": unit.paper.version,
            "title": unit.paper.title,
            "abstract": unit.paper.abstract,
        },
        "pairs": [
            {
                "id": p.claim.id,
                "text": p.claim.text,
                "date_text": p.claim.date_text,
                "cache_key": p.cache_key,
                "text_hash": p.claim_text_hash,
            }
            for p in unit.pairs
        ],
        "body": body,
    }


def _unit_from_state(state: dict[str, Any]) -> WorkUnit:
    paper = PaperText(**state["paper"])
    pairs = [
        Pair(ClaimText(p["id"], p["text"], p["date_text"]), p["cache_key"], p["text_hash"])
        for p in state["pairs"]
    ]
    return WorkUnit(paper, pairs)


def run_batch(
    store: Store,
    settings: Settings,
    judge: Judge,
    run: RunRecord | None = None,
    force: bool = False,
    claim_ids: list[str] | None = None,
    wait: bool = False,
) -> JudgeSummary:
    """Collect finished batches, submit what is pending, and (with `wait`) poll until all are in."""
    if not (judge.supports_batch and isinstance(judge, OpenAIJudge)):
        raise ConfigError("--batch needs the openai judge provider (the Batch API is OpenAI's)")
    summary = JudgeSummary(judge=judge.name, model=judge.model, prompt_version=judge.prompt_version)
    recorder = ExchangeRecorder(store, run.id if run else None)
    writer = AssessmentWriter(store, judge, summary, force, run.id if run else None)
    try:
        _collect(store, judge, recorder, writer)
        _submit(store, settings, judge, summary, force, claim_ids, run)
        while wait and summary.batches_waiting:
            time.sleep(settings.llm.batch_poll_seconds)
            summary.batches_waiting = 0
            _collect(store, judge, recorder, writer)
    except openai.APIError as exc:
        raise JudgeError(f"Batch API: {judge.transport.describe(exc)}") from None
    finally:
        # Batch calls cost half, whatever llm.batch says.
        settle(summary, recorder, settings, judge, run, batch=True)
    return summary


def _submit(
    store: Store,
    settings: Settings,
    judge: OpenAIJudge,
    summary: JudgeSummary,
    force: bool,
    claim_ids: list[str] | None,
    run: RunRecord | None,
) -> None:
    carried = batches.carried(batches.open_batches(store, "judge"), "cache_key")
    units = [
        u
        for u in pending_units(store, judge, force=force, claim_ids=claim_ids)
        if not any(p.cache_key in carried for p in u.pairs)
    ]
    summary.pending = sum(len(u.pairs) for u in units)
    summary.papers = len({(u.paper.arxiv_id, u.paper.version) for u in units})
    estimate_units(units, judge.prompts)
    chosen, summary.budget_exhausted = within_budget(
        units, lambda u: u.estimated_tokens, settings.llm.token_budget
    )
    summary.not_attempted = sum(len(u.pairs) for u in units[len(chosen) :])
    if not chosen:
        return
    mode = judge.mode or "json_schema"  # the Batch API is OpenAI's own: strict schemas work there
    requests: dict[str, Any] = {}
    for index, unit in enumerate(chosen):
        body = judge.transport.request_body(judge.question(unit.paper, unit.claims), mode)
        requests[f"{unit.paper.arxiv_id}v{unit.paper.version}-{index}"] = _unit_state(unit, body)
    meta = {"model": judge.model, "prompt_version": judge.prompt_version, "run_id": run.id if run else None}
    meta["pairs"] = sum(len(u.pairs) for u in chosen)
    batches.submit(store, judge.transport.client, "judge", requests, meta)
    summary.batches_submitted += 1
    summary.batches_waiting += 1


def _collect(store: Store, judge: OpenAIJudge, recorder: ExchangeRecorder, writer: AssessmentWriter) -> None:
    summary = writer.summary
    for row in batches.open_batches(store, "judge"):
        status, lines = batches.poll(store, judge.transport.client, row)
        if lines is None:
            summary.batches_waiting += 1
            continue
        seen = {_collect_line(line, row, judge, recorder, writer) for line in lines}
        for custom_id, state in row.requests.items():
            if custom_id not in seen:  # failed, expired or cancelled before it ran: stays pending
                writer.error(f"batch {row.batch_id} {custom_id}: no result ({status})", len(state["pairs"]))
        batches.mark_collected(store, row)
        summary.batches_collected += 1


def _collect_line(
    line: dict[str, Any],
    row: JudgeBatch,
    judge: OpenAIJudge,
    recorder: ExchangeRecorder,
    writer: AssessmentWriter,
) -> str:
    reply = batches.read_reply(line)
    state = row.requests.get(reply.custom_id)
    if state is None:
        log.warning("batch %s: unknown custom_id %s ignored", row.batch_id, reply.custom_id)
        return reply.custom_id
    unit = _unit_from_state(state)
    judgements = []
    if reply.error is None:
        try:
            judgements = parse_answer(reply.text, [p.claim.id for p in unit.pairs])
        except InvalidAnswer as exc:
            reply.error = f"invalid answer: {exc}"
    exchange_id = batches.record_reply(recorder, judge.name, row, reply)
    if reply.error:
        writer.error(f"{unit.paper.arxiv_id}v{unit.paper.version}: {reply.error}", len(unit.pairs))
        return reply.custom_id
    for judgement in judgements:
        judgement.exchange_id = exchange_id
    writer.write(unit, judgements)
    return reply.custom_id
