"""Writing a judge call's answers: one assessment per pair, a call's pairs in one transaction.

A call's answers commit together (a crash loses at most the call in flight, which the rerun judges
again). Where another run wrote one of its pairs first, the pairs are written one at a time, so
that run's row stands and this run's fill the rest.

"Current" means the latest assessment per (arxiv_id, claim_id): writing one marks every older row of
that pair `is_current = False`. A pair whose answer was refused or invalid too often is parked
(monitor/store/failures.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from sqlalchemy.exc import IntegrityError

from monitor.errors import MonitorError
from monitor.judge.base import LABELS, Judge, Judgement
from monitor.judge.grounding import Grounding, ground
from monitor.judge.schema import parse_answer
from monitor.judge.work import JudgeSummary
from monitor.llm.texts import PaperText
from monitor.llm.units import Pair, WorkUnit
from monitor.store.assessments import SECOND_PENDING, add_current, judged_among, next_generations
from monitor.store.db import Store
from monitor.store.failures import FailedPair, clear_failures, record_failure

log = logging.getLogger(__name__)

MAX_LOGGED_ERRORS = 20


class AssessmentWriter:
    """The judge's writer for the LLM engine (monitor/llm/engine.py): writes one unit's judgements in
    one transaction, and counts the outcome."""

    def __init__(
        self,
        store: Store,
        judge: Judge,
        summary: JudgeSummary,
        force: bool,
        run_id: int | None,
        park_after: int = 0,
        second_look: Callable[[Judgement], bool] | None = None,
    ):
        self.store, self.judge, self.summary, self.force, self.run_id = store, judge, summary, force, run_id
        self.park_after = park_after
        # Which answers wait for a second reading before they count (judge/second_look.py); None: none.
        self.second_look = second_look
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
        answered: list[tuple[Pair, Judgement]] = []
        for pair in unit.pairs:
            judgement = by_claim.get(pair.claim.id)
            if judgement is None or judgement.label not in LABELS:
                got = "no answer" if judgement is None else f"label {judgement.label!r}"
                message = f"{unit.paper.arxiv_id}v{unit.paper.version} claim {pair.claim.id}: {got}"
                self.error(message, 1)
                self.pair_failed(unit.paper, pair, message)
                continue
            answered.append((pair, judgement))
        try:
            self._write_all(unit.paper, answered)
        except IntegrityError:
            # A concurrent run wrote one of these (cache_key, generation) first: pair by pair instead.
            for one in answered:
                try:
                    self._write_all(unit.paper, [one])
                except IntegrityError:
                    self.summary.skipped += 1  # that run's row stands

    def _write_all(self, paper: PaperText, answered: Sequence[tuple[Pair, Judgement]]) -> None:
        """Write the answered pairs of one paper in one transaction; count them once it commits."""
        if not answered:
            return
        keys = [pair.ref for pair, _ in answered]
        written: list[tuple[Judgement, bool]] = []
        skipped = 0
        with self.store.session() as session:
            if self.force:
                generations, done = next_generations(session, keys), set()
            else:
                generations, done = dict.fromkeys(keys, 0), judged_among(session, keys)
            rows = []
            for pair, judgement in answered:
                if pair.ref in done:
                    skipped += 1
                    continue
                grounding = ground(judgement, paper, pair.claim.text)
                rows.append(self._row(paper, pair, judgement, grounding, generations[pair.ref]))
                written.append((judgement, grounding.grounded))
            add_current(session, rows)
            clear_failures(session, [r["cache_key"] for r in rows])  # answered at last: unparked
        self.summary.skipped += skipped
        for judgement, grounded in written:
            self.summary.judged += 1
            self.summary.labels[judgement.label] += 1
            self.summary.ungrounded += 0 if grounded else 1

    def _row(
        self, paper: PaperText, pair: Pair, judgement: Judgement, grounding: Grounding, generation: int
    ) -> dict[str, object]:
        return {
            "cache_key": pair.ref,
            "generation": generation,
            "arxiv_id": paper.arxiv_id,
            "version": paper.version,
            "claim_id": pair.claim.id,
            "claim_text_hash": pair.claim.text_hash,
            "judge": self.judge.name,
            "model": self.judge.model,
            "prompt_version": self.judge.prompt_version,
            "label": judgement.label,
            "confidence": min(1.0, max(0.0, grounding.confidence)),
            "rationale": judgement.rationale,
            "evidence": judgement.evidence,
            "grounded": grounding.grounded,
            "abstained": judgement.abstained,
            "strength": judgement.strength or None,
            "second_look": SECOND_PENDING if self.second_look and self.second_look(judgement) else None,
            "exchange_id": judgement.exchange_id,
            "run_id": self.run_id,
        }

    def error(self, message: str, pairs: int) -> None:
        self.summary.errors += pairs
        if len(self.summary.error_messages) < MAX_LOGGED_ERRORS:
            self.summary.error_messages.append(message)
        log.warning("judge: %s", message)

    def pair_failed(self, paper: PaperText, pair: Pair, message: str) -> None:
        """Count a failure that is the pair's own (not the server's); park it when it has had enough."""
        failed = FailedPair(
            pair.ref,
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
