"""The one engine for a stage's LLM work (the judge's, the relevance screen's), live or by Batch API.

A stage hands it units (monitor/llm/units.py) and a `Writer`: what to do with an answer and with a
failure. The stage keeps its prompts, its answer schema and what it writes; the engine keeps the rest:

- live: at most `workers` calls in flight, the token budget (a `TokenBudget`: what the run has left of
  `llm.token_budget`) kept by reservation, a clean stop (monitor/llm/workers.py), each finished unit
  handed to the writer as it returns;
- batch: `BatchRun` collects the stage's finished batches (an answer parsed by the writer, logged in
  `llm_exchanges`, then written) and submits the pending pairs no open batch carries, as many units
  as the token budget allows. State lives in `judge_batches` under the stage's name (monitor/llm/batch.py),
  so nothing is lost or sent twice between submit and collect.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from monitor.config import LLMSettings
from monitor.errors import MonitorError
from monitor.llm import batch as batches
from monitor.llm.answers import AnswerRejected, InvalidAnswer
from monitor.llm.cost import within_budget
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.texts import ClaimText, PaperText
from monitor.llm.transport import ChatTransport, Mode, Question
from monitor.llm.units import CallCounts, Pair, Section, WorkUnit
from monitor.llm.workers import Budget, LoopEnd, run_bounded
from monitor.store.db import Store
from monitor.store.records import JudgeBatch

log = logging.getLogger(__name__)

A = TypeVar("A")


class Writer(Protocol[A]):
    """What a stage does with its answers: the part of the work that is the stage's own."""

    def parse(self, unit: WorkUnit, text: str | None) -> A:
        """A batch reply's text as the stage's answer; raises InvalidAnswer."""
        ...

    def write(self, unit: WorkUnit, answer: A, exchange_id: int | None) -> None: ...

    def fail(self, unit: WorkUnit, message: str, error: MonitorError | None = None) -> None:
        """The unit got no usable answer (`error`: the live call's); its pairs stay pending."""
        ...


class Asker(Protocol):
    """A stage's question through the LLM layer's transport (what a batch request is built from)."""

    name: str
    model: str
    prompt_version: str
    transport: ChatTransport

    @property
    def mode(self) -> Mode | None: ...

    def unit_question(self, unit: WorkUnit) -> Question[Any]:
        """The question of one unit (its papers and claims)."""
        ...


@dataclass(frozen=True)
class TokenBudget:
    """A run's token budget (`llm.token_budget`; `limit` None: none) and what the run spent of it before
    the stage at hand. The command's orchestrator makes it once (schedule/flow.py) and hands each stage
    that calls a model what is left, so no stage rewrites the settings to carry it."""

    limit: int | None
    spent: int = 0

    @classmethod
    def of(cls, llm: LLMSettings) -> TokenBudget:
        return cls(llm.token_budget)

    @property
    def left(self) -> int | None:
        """Tokens a stage may still spend (None: no limit)."""
        return None if self.limit is None else max(0, self.limit - self.spent)

    def after(self, tokens: int) -> TokenBudget:
        """The budget once `tokens` more are spent (a later stage's, or a later period's)."""
        return TokenBudget(self.limit, self.spent + tokens)

    def exceeded(self, tokens: int) -> bool:
        """Whether spending `tokens` more goes past the limit."""
        return self.limit is not None and self.spent + tokens > self.limit


def run_live(
    units: Sequence[WorkUnit],
    call: Callable[[WorkUnit], tuple[A, int | None]],
    writer: Writer[A],
    *,
    budget: TokenBudget,
    recorder: ExchangeRecorder,
    workers: int,
    name: str,
    should_stop: Callable[[], bool] | None = None,
    before: Callable[[WorkUnit, deque[WorkUnit]], None] | None = None,
    advance: Callable[[int], None] | None = None,
) -> LoopEnd[WorkUnit]:
    """Ask `call` (an answer and its exchange id) for each unit, `workers` at a time, within what is
    left of `budget`; each result goes to the writer as it comes."""

    def finish(unit: WorkUnit, result: tuple[A, int | None] | MonitorError) -> None:
        if isinstance(result, MonitorError):
            writer.fail(unit, str(result), result)
        else:
            writer.write(unit, *result)
        if advance is not None:
            advance(len(unit.pairs))

    return run_bounded(
        units,
        call,
        finish,
        workers=workers,
        name=name,
        budget=Budget(budget.left, lambda: recorder.tokens, lambda u: u.estimated_tokens),
        should_stop=should_stop,
        before=before,
    )


def _section_state(section: Section) -> dict[str, Any]:
    paper = section.paper
    return {
        "paper": {
            "arxiv_id": paper.arxiv_id,
            "version": paper.version,
            "title": paper.title,
            "abstract": paper.abstract,
        },
        "pairs": [
            {"id": p.claim.id, "text": p.claim.text, "date_text": p.claim.date_text, "key": p.ref}
            | ({"text_hash": p.claim.text_hash} if p.claim.text_hash else {})
            for p in section.pairs
        ],
    }


def unit_state(unit: WorkUnit, body: dict[str, Any]) -> dict[str, Any]:
    """What a batch row keeps of a unit: enough to write its answer whatever changed since. A one-paper
    unit keeps the shape batches had before units had sections, so either reads back."""
    if len(unit.sections) == 1:
        return _section_state(unit.sections[0]) | {"body": body}
    return {"sections": [_section_state(s) for s in unit.sections], "body": body}


def _all_pairs(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for section in state.get("sections", [state]) for p in section["pairs"]]


def _pair_ref(pair: dict[str, Any]) -> str:
    # A batch row records a pair's `ref` as "key"; batches submitted before one engine, as "cache_key".
    return str(pair.get("key") or pair.get("cache_key") or "")


def unit_from_state(state: dict[str, Any]) -> WorkUnit:
    sections = []
    for section in state.get("sections", [state]):
        pairs = [
            Pair(ClaimText(p["id"], p["text"], p.get("date_text"), p.get("text_hash", "")), _pair_ref(p))
            for p in section["pairs"]
        ]
        sections.append(Section(PaperText(**section["paper"]), pairs))
    return WorkUnit(sections)


class BatchRun(Generic[A]):
    """One stage's Batch API pass: collect what finished, submit what is pending."""

    def __init__(
        self,
        store: Store,
        stage: batches.Stage,
        asker: Asker,
        writer: Writer[A],
        recorder: ExchangeRecorder,
        counts: CallCounts,
    ) -> None:
        self.store, self.stage, self.asker, self.writer = store, stage, asker, writer
        self.recorder, self.counts = recorder, counts

    def collect(self) -> None:
        """Write the answers of every finished batch of the stage; count those still running."""
        for row in batches.open_batches(self.store, self.stage):
            status, lines = batches.poll(self.store, self.asker.transport.client, row)
            if lines is None:
                self.counts.batches_waiting += 1
                continue
            seen = {self._collect_line(line, row) for line in lines}
            for custom_id in row.requests.keys() - seen:  # failed, expired or cancelled before it ran
                unit = unit_from_state(row.requests[custom_id])
                self.writer.fail(unit, f"batch {row.batch_id} {custom_id}: no result ({status})")
            batches.mark_collected(self.store, row)
            self.counts.batches_collected += 1

    def _collect_line(self, line: dict[str, Any], row: JudgeBatch) -> str:
        reply = batches.read_reply(line)
        state = row.requests.get(reply.custom_id)
        if state is None:
            log.warning("batch %s: unknown custom_id %s ignored", row.batch_id, reply.custom_id)
            return reply.custom_id
        unit = unit_from_state(state)
        answer: A | None = None
        rejected: AnswerRejected | None = None
        if reply.error is None:
            try:
                answer = self.writer.parse(unit, reply.text)
            except InvalidAnswer as exc:
                reply.error = f"invalid answer: {exc}"
                # The pairs' own fault, as a live answer still invalid after its corrective turn is (a
                # batch gets none); an error line instead is the server's.
                rejected = AnswerRejected(f"{unit.label}: {reply.error}")
        exchange_id = batches.record_reply(self.recorder, self.asker.name, row, reply)
        if reply.error is not None or answer is None:
            self.writer.fail(unit, f"{unit.label}: {reply.error}", rejected)
        else:
            self.writer.write(unit, answer, exchange_id)
        return reply.custom_id

    def not_carried(self, units: list[WorkUnit]) -> list[WorkUnit]:
        """`units` less the pairs an open batch of the stage already carries (never sent twice)."""
        rows = batches.open_batches(self.store, self.stage)
        carried = {_pair_ref(p) for row in rows for state in row.requests.values() for p in _all_pairs(state)}
        kept = []
        for unit in units:
            for section in unit.sections:
                section.pairs = [p for p in section.pairs if p.ref not in carried]
            unit.sections = [s for s in unit.sections if s.pairs]
            if unit.sections:
                kept.append(unit)
        return kept

    def submit(self, units: list[WorkUnit], llm: LLMSettings, run_id: int | None) -> list[WorkUnit]:
        """Submit the leading units that fit the token budget as one batch; returns those left out."""
        chosen, _ = within_budget(units, lambda u: u.estimated_tokens, llm.token_budget)
        if not chosen:
            return units
        asker = self.asker
        mode = asker.mode or "json_schema"  # the Batch API is OpenAI's own: strict schemas work there
        requests = {
            f"{unit.label}-{index}": unit_state(
                unit, asker.transport.request_body(asker.unit_question(unit), mode)
            )
            for index, unit in enumerate(chosen)
        }
        meta = {"model": asker.model, "prompt_version": asker.prompt_version, "run_id": run_id}
        meta["pairs"] = sum(len(u.pairs) for u in chosen)
        batches.submit(self.store, asker.transport.client, self.stage, requests, meta)
        self.counts.batches_submitted += 1
        self.counts.batches_waiting += 1
        return units[len(chosen) :]
