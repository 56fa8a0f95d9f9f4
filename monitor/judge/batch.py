"""`monitor judge --batch`: large backfills through the OpenAI Batch API, at half the price.

Each invocation first collects batches that have finished (writing their assessments exactly as the
runner does), then submits the pairs still pending that no open batch already carries. With `wait`
it polls until everything submitted is collected. State lives in `judge_batches`, so a crash or a
cron job that exits between submit and collect loses nothing: the next invocation picks it up.
A batch answer that fails validation is recorded as an error; the pair stays pending and goes into
the next batch (batches get no corrective turn).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import openai
from sqlalchemy import select

from monitor.config import Settings
from monitor.errors import ConfigError, JudgeError
from monitor.judge.base import ClaimText, Exchange, Judge, PaperText
from monitor.judge.exchanges import ExchangeRecorder
from monitor.judge.openai_judge import OpenAIJudge
from monitor.judge.runner import (
    AssessmentWriter,
    JudgeSummary,
    Pair,
    WorkUnit,
    estimate_units,
    pending_units,
    settle,
)
from monitor.judge.schema import InvalidAnswer, looks_like_refusal, parse_answer
from monitor.store.db import Store
from monitor.store.models import JudgeBatch, utcnow
from monitor.store.runs import RunRecord

log = logging.getLogger(__name__)

ENDPOINT = "/v1/chat/completions"
# Batch statuses after which nothing more will come.
FINISHED = {"completed", "failed", "expired", "cancelled"}


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
    if not isinstance(judge, OpenAIJudge):
        raise ConfigError("--batch needs the openai judge provider (the Batch API is OpenAI's)")
    summary = JudgeSummary(judge=judge.name, model=judge.model, prompt_version=judge.prompt_version)
    recorder = ExchangeRecorder(store, run.id if run else None)
    writer = AssessmentWriter(store, judge, summary, force, run.id if run else None)
    try:
        _collect(store, judge, recorder, writer, summary)
        _submit(store, settings, judge, summary, force, claim_ids, run)
        while wait and summary.batches_waiting:
            time.sleep(settings.judge.batch_poll_seconds)
            summary.batches_waiting = 0
            _collect(store, judge, recorder, writer, summary)
    except openai.APIError as exc:
        raise JudgeError(f"Batch API: {judge._describe(exc)}") from None
    finally:
        # Batch calls cost half, whatever judge.batch says.
        settle(summary, recorder, settings, judge, run, batch=True)
    return summary


def _open_batches(store: Store) -> list[JudgeBatch]:
    with store.session() as session:
        return list(session.scalars(select(JudgeBatch).where(JudgeBatch.status != "collected")))


def _submit(
    store: Store,
    settings: Settings,
    judge: OpenAIJudge,
    summary: JudgeSummary,
    force: bool,
    claim_ids: list[str] | None,
    run: RunRecord | None,
) -> None:
    carried = {p["cache_key"] for b in _open_batches(store) for u in b.requests.values() for p in u["pairs"]}
    units = [
        u
        for u in pending_units(store, judge, force=force, claim_ids=claim_ids)
        if not any(p.cache_key in carried for p in u.pairs)
    ]
    summary.pending = sum(len(u.pairs) for u in units)
    summary.papers = len({(u.paper.arxiv_id, u.paper.version) for u in units})
    estimate_units(units, judge.prompts)
    budget, planned, chosen = settings.judge.token_budget, 0, []
    for unit in units:
        if budget is not None and planned + unit.estimated_tokens > budget:
            summary.budget_exhausted = True
            break
        planned += unit.estimated_tokens
        chosen.append(unit)
    summary.not_attempted = sum(len(u.pairs) for u in units[len(chosen) :])
    if not chosen:
        return
    mode = judge.mode or "json_schema"  # the Batch API is OpenAI's own: strict schemas work there
    requests: dict[str, Any] = {}
    lines = []
    for index, unit in enumerate(chosen):
        custom_id = f"{unit.paper.arxiv_id}v{unit.paper.version}-{index}"
        body = judge.request_body(
            judge.prompts.messages(unit.paper, unit.claims), [c.id for c in unit.claims], mode
        )
        requests[custom_id] = _unit_state(unit, body)
        lines.append(json.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}))
    data = ("\n".join(lines) + "\n").encode()
    uploaded = judge.client.files.create(file=("claim-monitor-judge.jsonl", data), purpose="batch")
    batch = judge.client.batches.create(
        input_file_id=uploaded.id,
        endpoint=ENDPOINT,
        completion_window="24h",
        metadata={"tool": "claim-monitor", "prompt_version": judge.prompt_version},
    )
    with store.session() as session:
        session.add(
            JudgeBatch(
                batch_id=batch.id,
                input_file_id=uploaded.id,
                status=batch.status,
                model=judge.model,
                prompt_version=judge.prompt_version,
                requests=requests,
                pairs=sum(len(u.pairs) for u in chosen),
                run_id=run.id if run else None,
            )
        )
    summary.batches_submitted += 1
    summary.batches_waiting += 1
    log.info("submitted batch %s with %d calls", batch.id, len(chosen))


def _collect(
    store: Store,
    judge: OpenAIJudge,
    recorder: ExchangeRecorder,
    writer: AssessmentWriter,
    summary: JudgeSummary,
) -> None:
    for row in _open_batches(store):
        batch = judge.client.batches.retrieve(row.batch_id)
        if batch.status not in FINISHED:
            summary.batches_waiting += 1
            with store.session() as session:
                session.get(JudgeBatch, row.id).status = batch.status  # type: ignore[union-attr]
            continue
        seen: set[str] = set()
        if batch.output_file_id:
            content = judge.client.files.content(batch.output_file_id).text
            for line in content.splitlines():
                if line.strip():
                    seen.add(_collect_line(json.loads(line), row, judge, recorder, writer))
        for custom_id, state in row.requests.items():
            if custom_id not in seen:  # failed, expired or cancelled before it ran: stays pending
                writer.error(
                    f"batch {row.batch_id} {custom_id}: no result ({batch.status})", len(state["pairs"])
                )
        with store.session() as session:
            stored = session.get(JudgeBatch, row.id)
            stored.status, stored.output_file_id, stored.collected_at = (  # type: ignore[union-attr]
                "collected",
                batch.output_file_id,
                utcnow(),
            )
        summary.batches_collected += 1


def _collect_line(
    line: dict[str, Any],
    row: JudgeBatch,
    judge: OpenAIJudge,
    recorder: ExchangeRecorder,
    writer: AssessmentWriter,
) -> str:
    custom_id = str(line.get("custom_id"))
    state = row.requests.get(custom_id)
    if state is None:
        log.warning("batch %s: unknown custom_id %s ignored", row.batch_id, custom_id)
        return custom_id
    unit = _unit_from_state(state)
    ids = [p.claim.id for p in unit.pairs]
    response = line.get("response") or {}
    body = response.get("body") or {}
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    text, refusal = message.get("content"), message.get("refusal")
    usage = body.get("usage") or {}
    error: str | None = None
    judgements = []
    if line.get("error") or response.get("status_code") != 200:
        error = f"batch request failed: {json.dumps(line.get('error') or body.get('error'))[:500]}"
    elif refusal or (looks_like_refusal(text) and not (text or "").lstrip().startswith("{")):
        error = f"refusal: {(refusal or text or '')[:500]}"
    else:
        try:
            judgements = parse_answer(text, ids)
        except InvalidAnswer as exc:
            error = f"invalid answer: {exc}"
    exchange_id = recorder(
        Exchange(
            provider=judge.name,
            model=row.model,
            prompt_version=row.prompt_version,
            request=state["body"],
            response=text if text is not None else refusal,
            response_format="batch",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            error=error,
            extra={"batch_id": row.batch_id, "custom_id": custom_id},
        )
    )
    if error:
        writer.error(f"{unit.paper.arxiv_id}v{unit.paper.version}: {error}", len(unit.pairs))
        return custom_id
    for judgement in judgements:
        judgement.exchange_id = exchange_id
    writer.write(unit, judgements)
    return custom_id
