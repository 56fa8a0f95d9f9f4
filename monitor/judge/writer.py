"""Writing a judge call's answers: one assessment per pair, each in its own small transaction.

"Current" means the latest assessment per (arxiv_id, claim_id): writing one marks every older row of
that pair `is_current = False`. A pair whose answer was refused or invalid too often is parked
(monitor/store/failures.py).
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import IntegrityError

from monitor.errors import MonitorError
from monitor.judge.base import LABELS, Judge, Judgement
from monitor.judge.grounding import ground
from monitor.judge.schema import parse_answer
from monitor.judge.work import JudgeSummary
from monitor.llm.texts import PaperText
from monitor.llm.units import Pair, WorkUnit
from monitor.store.assessments import add_assessment, is_judged, next_generation, supersede
from monitor.store.db import Store
from monitor.store.failures import FailedPair, clear_failure, record_failure

log = logging.getLogger(__name__)

MAX_LOGGED_ERRORS = 20


class AssessmentWriter:
    """The judge's writer for the LLM engine (monitor/llm/engine.py): writes one unit's judgements, each
    in its own transaction, and counts the outcome."""

    def __init__(
        self,
        store: Store,
        judge: Judge,
        summary: JudgeSummary,
        force: bool,
        run_id: int | None,
        park_after: int = 0,
    ):
        self.store, self.judge, self.summary, self.force, self.run_id = store, judge, summary, force, run_id
        self.park_after = park_after
        self.parked_messages: list[str] = []

    def parse(self, unit: WorkUnit, text: str | None) -> list[Judgement]:
        return parse_answer(text, [p.claim.id for p in unit.pairs])

    def write(self, unit: WorkUnit, judgements: list[Judgement], exchange_id: int | None = None) -> None:
        from monitor.testhooks import pause_at

        for judgement in judgements if exchange_id is not None else []:
            judgement.exchange_id = exchange_id
        self._write(unit, judgements)
        pause_at("judge:after_first_batch")  # test-only crash point; a no-op otherwise

    def fail(self, unit: WorkUnit, message: str, error: MonitorError | None = None) -> None:
        """No usable answer for the unit; a fault that is its pairs' own (not the server's) counts
        towards parking them."""
        self.error(message, len(unit.pairs))
        if getattr(error, "pair_fault", False):
            for pair in unit.pairs:
                self.pair_failed(unit.paper, pair, message)

    def _write(self, unit: WorkUnit, judgements: list[Judgement]) -> None:
        by_claim = {j.claim_id: j for j in judgements}
        for pair in unit.pairs:
            judgement = by_claim.get(pair.claim.id)
            if judgement is None or judgement.label not in LABELS:
                got = "no answer" if judgement is None else f"label {judgement.label!r}"
                message = f"{unit.paper.arxiv_id}v{unit.paper.version} claim {pair.claim.id}: {got}"
                self.error(message, 1)
                self.pair_failed(unit.paper, pair, message)
                continue
            self._write_one(unit.paper, pair, judgement)

    def error(self, message: str, pairs: int) -> None:
        self.summary.errors += pairs
        if len(self.summary.error_messages) < MAX_LOGGED_ERRORS:
            self.summary.error_messages.append(message)
        log.warning("judge: %s", message)

    def pair_failed(self, paper: PaperText, pair: Pair, message: str) -> None:
        """Count a failure that is the pair's own (not the server's); park it when it has had enough."""
        failed = FailedPair(
            pair.key,
            paper.arxiv_id,
            paper.version,
            pair.claim.id,
            self.judge.name,
            self.judge.model,
            self.judge.prompt_version,
        )
        if record_failure(self.store, failed, message, self.run_id, self.park_after):
            self.summary.newly_parked += 1
            if len(self.parked_messages) < MAX_LOGGED_ERRORS:
                self.parked_messages.append(f"claim {pair.claim.id}: {message}")

    def _write_one(self, paper: PaperText, pair: Pair, judgement: Judgement) -> None:
        grounding = ground(judgement, paper, pair.claim.text)
        try:
            with self.store.session() as session:
                generation = 0
                if self.force:
                    generation = next_generation(session, pair.key)
                elif is_judged(session, pair.key):
                    self.summary.skipped += 1
                    return
                row = add_assessment(
                    session,
                    {
                        "cache_key": pair.key,
                        "generation": generation,
                        "arxiv_id": paper.arxiv_id,
                        "version": paper.version,
                        "claim_id": pair.claim.id,
                        "claim_text_hash": pair.text_hash,
                        "judge": self.judge.name,
                        "model": self.judge.model,
                        "prompt_version": self.judge.prompt_version,
                        "label": judgement.label,
                        "confidence": min(1.0, max(0.0, grounding.confidence)),
                        "rationale": judgement.rationale,
                        "evidence": judgement.evidence,
                        "grounded": grounding.grounded,
                        "abstained": judgement.abstained,
                        "exchange_id": judgement.exchange_id,
                        "run_id": self.run_id,
                    },
                )
                clear_failure(session, pair.key)  # answered at last: no longer failing or parked
                supersede(session, row)
        except IntegrityError:
            # A concurrent run wrote this (cache_key, generation) first: its row stands.
            self.summary.skipped += 1
            return
        self.summary.judged += 1
        self.summary.labels[judgement.label] += 1
        self.summary.ungrounded += 0 if grounding.grounded else 1
