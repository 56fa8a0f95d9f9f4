"""What was read for each claim: its candidate pairs and which kind of judge has a current answer for
each. A digest may say "no relevant paper found" only of a claim whose every candidate a judge that
reads stance (an LLM) has read; the embedded model's triage and pairs nobody read yet are told apart.

A pair is a (paper, active claim) on the paper's latest version, published by a date: a candidate the
relevance stage picked (and no LLM screen dropped), or one a judge answered. Papers the relevance stage
never picked for a claim are in no count: nothing read them.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any, NamedTuple

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from monitor.judge_names import triage_only_stored
from monitor.store.candidates import SCREEN_DROPPED
from monitor.store.claims import is_active
from monitor.store.models import Assessment, Candidate, Claim, Paper


class Reading(NamedTuple):
    """One claim's (or a line's, summed) candidate pairs and who read them."""

    candidates: int = 0
    read_llm: int = 0  # a current answer from a judge that reads stance (any but the embedded model)
    read_embedded: int = 0  # only the embedded model's triage answered it
    not_read: int = 0  # no current answer: not asked yet, failed, parked, below the triage cut

    def __add__(self, other: object) -> Reading:
        if not isinstance(other, Reading):
            return NotImplemented
        return Reading(*(a + b for a, b in zip(self, other, strict=True)))

    @property
    def all_read_by_llm(self) -> bool:
        return self.candidates > 0 and self.read_llm == self.candidates


def claim_readings(session: Session, until: dt.date, since: dt.date | None = None) -> dict[str, Reading]:
    """Per active claim, its pairs of papers published by `until` (and from `since`), and who read them."""
    published = [Paper.published <= until] + ([Paper.published >= since] if since else [])

    def pairs(model: type[Candidate] | type[Assessment], *where: Any) -> Select[Any]:
        return (
            select(model.claim_id, model.arxiv_id)
            .join(Paper, Paper.arxiv_id == model.arxiv_id)
            .join(Claim, Claim.id == model.claim_id)
            .where(model.version == Paper.version, is_active(), *published, *where)
        )

    screened = Candidate.screen.is_(None) | (Candidate.screen != SCREEN_DROPPED)
    picked = {(c, a) for c, a in session.execute(pairs(Candidate, screened))}
    current = Assessment.is_current.is_(True)
    llm = Assessment.judge.not_in(triage_only_stored())
    by_llm = {(c, a) for c, a in session.execute(pairs(Assessment, current, llm))}
    by_embedded = {(c, a) for c, a in session.execute(pairs(Assessment, current, ~llm))} - by_llm
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for claim_id, arxiv_id in picked | by_llm | by_embedded:
        tally = out[claim_id]
        tally[0] += 1
        pair = (claim_id, arxiv_id)
        tally[1 if pair in by_llm else 2 if pair in by_embedded else 3] += 1
    return {claim_id: Reading(*tally) for claim_id, tally in out.items()}
