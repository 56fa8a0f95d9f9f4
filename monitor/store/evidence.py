"""Current assessments as the verdict rules read them: one row per (claim, paper), with the paper's
title and the dates that say when the assessed version appeared."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.store.assessments import SECOND_DISAGREED
from monitor.store.models import Assessment, Paper, PaperVersion, SecondLook
from monitor.store.reviews import has_review


class AssessmentRow(NamedTuple):
    """A current assessment with what the rules need of its paper and version."""

    id: int
    claim_id: str
    arxiv_id: str
    version: int
    label: str
    confidence: float
    grounded: bool
    abstained: bool | None
    judge: str
    model: str | None
    evidence: str | None
    rationale: str | None
    paper_title: str
    published: dt.date | None
    version_title: str | None
    version_updated: dt.datetime | None
    strength: str | None = None
    second_look: str | None = None  # pending | agreed | disagreed (judge/second_look.py)
    # The latest second reading, where there is one: label, strength, confidence, quote, rationale, grounded.
    second_label: str | None = None
    second_strength: str | None = None
    second_confidence: float | None = None
    second_evidence: str | None = None
    second_rationale: str | None = None
    second_grounded: bool | None = None


def current_assessments(
    session: Session, claim_ids: Iterable[str] | None = None, include_unrelated: bool = False
) -> Iterator[AssessmentRow]:
    """Current assessments (of `claim_ids` only, when given), in id order.

    UNRELATED ones are left out unless asked for, a curator reviewed the pair (they may have
    relabelled it) or its second reading disagreed. Each row carries its latest second reading.
    """
    latest = (
        select(SecondLook.assessment_id, func.max(SecondLook.id).label("id"))
        .group_by(SecondLook.assessment_id)
        .subquery()
    )
    query = (
        select(
            Assessment.id,
            Assessment.claim_id,
            Assessment.arxiv_id,
            Assessment.version,
            Assessment.label,
            Assessment.confidence,
            Assessment.grounded,
            Assessment.abstained,
            Assessment.judge,
            Assessment.model,
            Assessment.evidence,
            Assessment.rationale,
            Paper.title,
            Paper.published,
            PaperVersion.title,
            PaperVersion.updated,
            Assessment.strength,
            Assessment.second_look,
            SecondLook.label,
            SecondLook.strength,
            SecondLook.confidence,
            SecondLook.evidence,
            SecondLook.rationale,
            SecondLook.grounded,
        )
        .join(Paper, Paper.arxiv_id == Assessment.arxiv_id)
        .outerjoin(
            PaperVersion,
            (PaperVersion.arxiv_id == Assessment.arxiv_id) & (PaperVersion.version == Assessment.version),
        )
        .outerjoin(latest, latest.c.assessment_id == Assessment.id)
        .outerjoin(SecondLook, SecondLook.id == latest.c.id)
        .where(Assessment.is_current.is_(True))
        .order_by(Assessment.id)
    )
    if not include_unrelated:
        # An UNRELATED first reading that a second reading disagreed with waits for a curator: evidence.
        bears = (Assessment.label != "UNRELATED") | (Assessment.second_look == SECOND_DISAGREED)
        query = query.where(bears | has_review())
    if claim_ids is not None:
        query = query.where(Assessment.claim_id.in_(list(claim_ids)))
    for row in session.execute(query):
        yield AssessmentRow(*row)
