"""The LLM screen through the OpenAI Batch API (`relevance.screen_batch`), for backfills at half price.

Each screening pass first collects the screen batches that have finished (marking their pairs kept or
dropped exactly as the live screen does), then submits the pending pairs no open batch carries as one
new batch. Batches live in `judge_batches` (monitor/llm/batch.py): a batch submitted is never submitted
again, and a rerun, or the next `monitor run`, collects it. A pair whose answer failed (refused,
invalid, expired) stays pending and goes into the next batch; batches get no corrective turn. Until a
pair is collected it is pending, so the judge does not see it.
"""

from __future__ import annotations

from typing import Any

import openai

from monitor.config import Settings
from monitor.llm import batch as batches
from monitor.llm.answers import InvalidAnswer
from monitor.llm.cost import within_budget
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.texts import ClaimText, PaperText
from monitor.relevance.screen import (
    LLMScreen,
    ScreenSummary,
    ScreenUnit,
    estimate_screen_units,
    parse_screen,
    pending_screen_units,
    save_answer,
)
from monitor.store import Store
from monitor.store.records import JudgeBatch


def _pair_key(paper: PaperText, claim_id: str) -> str:
    return f"{paper.arxiv_id}v{paper.version}/{claim_id}"


def _unit_state(unit: ScreenUnit, body: dict[str, Any]) -> dict[str, Any]:
    paper = unit.paper
    return {
        "paper": {
            "arxiv_id": paper.arxiv_id,
            "version": paper.version,
            "title": paper.title,
            "abstract": paper.abstract,
        },
        "pairs": [{"id": c.id, "text": c.text, "key": _pair_key(paper, c.id)} for c in unit.claims],
        "body": body,
    }


def _unit_from_state(state: dict[str, Any]) -> ScreenUnit:
    return ScreenUnit(PaperText(**state["paper"]), [ClaimText(p["id"], p["text"]) for p in state["pairs"]])


def screen_by_batch(
    store: Store,
    settings: Settings,
    screen: LLMScreen | None,
    recorder: ExchangeRecorder,
    summary: ScreenSummary,
    claim_ids: list[str] | None,
) -> None:
    """Collect finished screen batches, then submit what is pending; counts go into `summary`."""
    open_rows = batches.open_batches(store, "screen")
    if not open_rows and not pending_screen_units(
        store, settings.relevance.screen_claims_per_call, claim_ids
    ):
        return  # nothing to collect or send: no LLM needed
    screen = screen or LLMScreen(settings)
    failed: set[tuple[str, int]] = set()
    done: set[tuple[str, int]] = set()
    try:
        for row in open_rows:
            _collect(store, screen, row, recorder, summary, (done, failed))
        _submit(store, settings, screen, summary, claim_ids, recorder.run_id)
    except openai.APIError as exc:
        # The pairs stay pending and what was submitted stays recorded: the next pass picks both up.
        summary.stopped = f"Batch API: {screen.transport.describe(exc)}"
        summary.errors.append(summary.stopped)
    summary.papers = len(done - failed)
    summary.failed_papers = len(failed)


def _collect(
    store: Store,
    screen: LLMScreen,
    row: JudgeBatch,
    recorder: ExchangeRecorder,
    summary: ScreenSummary,
    outcome: tuple[set[tuple[str, int]], set[tuple[str, int]]],
) -> None:
    done, failed = outcome
    status, lines = batches.poll(store, screen.transport.client, row)
    if lines is None:
        summary.batches_waiting += 1
        return
    seen: set[str] = set()
    for line in lines:
        reply = batches.read_reply(line)
        state = row.requests.get(reply.custom_id)
        if state is None:
            continue  # not one of ours: nothing to mark
        seen.add(reply.custom_id)
        unit = _unit_from_state(state)
        kept: set[str] = set()
        if reply.error is None:
            try:
                kept = parse_screen(reply.text, [c.id for c in unit.claims])
            except InvalidAnswer as exc:
                reply.error = f"invalid answer: {exc}"
        exchange_id = batches.record_reply(recorder, screen.name, row, reply)
        if reply.error:
            failed.add(unit.key)
            summary.errors.append(f"{unit.paper.arxiv_id}v{unit.paper.version}: {reply.error}")
            continue
        k, d = save_answer(store, unit, kept, exchange_id)
        summary.kept, summary.dropped = summary.kept + k, summary.dropped + d
        done.add(unit.key)
    for custom_id in row.requests.keys() - seen:  # failed, expired or cancelled before it ran
        failed.add(_unit_from_state(row.requests[custom_id]).key)
        summary.errors.append(f"batch {row.batch_id} {custom_id}: no result ({status})")
    batches.mark_collected(store, row)
    summary.batches_collected += 1


def _submit(
    store: Store,
    settings: Settings,
    screen: LLMScreen,
    summary: ScreenSummary,
    claim_ids: list[str] | None,
    run_id: int | None,
) -> None:
    carried = batches.carried(batches.open_batches(store, "screen"), "key")
    units = []
    for unit in pending_screen_units(store, settings.relevance.screen_claims_per_call, claim_ids):
        unit.claims = [c for c in unit.claims if _pair_key(unit.paper, c.id) not in carried]
        if unit.claims:
            units.append(unit)
    estimate_screen_units(units, screen.prompts)
    budget = settings.judge.token_budget
    chosen, exhausted = within_budget(units, lambda u: u.estimated_tokens, budget)
    if exhausted:
        summary.stopped = f"token budget {budget} spent"
    if not chosen:
        return
    mode = screen.mode or "json_schema"  # the Batch API is OpenAI's own: strict schemas work there
    requests = {
        f"{unit.paper.arxiv_id}v{unit.paper.version}-{index}": _unit_state(
            unit, screen.transport.request_body(screen.question(unit.paper, unit.claims), mode)
        )
        for index, unit in enumerate(chosen)
    }
    meta = {"model": screen.model, "prompt_version": screen.prompt_version, "run_id": run_id}
    meta["pairs"] = sum(len(u.claims) for u in chosen)
    batches.submit(store, screen.transport.client, "screen", requests, meta)
    summary.batches_submitted += 1
    summary.batches_waiting += 1
