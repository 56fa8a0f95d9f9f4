"""Curators' decisions (`reviews` rows): the one in force per (claim, paper), a pair's history, adding one.

The verdicts stage reads decisions through `decisions_in_force`; `monitor review` writes them with
`add_review`. A decision is never updated or deleted: the newest row that is not a note is in force.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import exists, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from monitor.store.models import Assessment, Review

ACTIONS = ("confirm", "relabel", "dismiss", "note")


@dataclass(frozen=True)
class Decision:
    """The curator's decision in force on one (claim, paper) pair."""

    review_id: int
    action: str  # confirm | relabel | dismiss
    label: str | None  # the human label; None when dismissed
    from_label: str
    note: str
    decided_at: dt.datetime
    decisive: bool = False  # the curator says this paper settles the claim: it weighs 1
    reviewer: str = ""  # who decided ("" from the terminal)


def decisions_in_force(
    session: Session, claim_ids: Iterable[str] | None = None
) -> dict[tuple[str, str], Decision]:
    """(claim_id, arxiv_id) -> the newest decision that is not a note."""
    query = select(Review).where(Review.action != "note").order_by(Review.id)
    if claim_ids is not None:
        query = query.where(Review.claim_id.in_(list(claim_ids)))
    out: dict[tuple[str, str], Decision] = {}
    for row in session.scalars(query):
        decision = Decision(
            row.id, row.action, row.label, row.from_label, row.note, row.created_at, bool(row.decisive),
            row.reviewer or "",
        )
        out[(row.claim_id, row.arxiv_id)] = decision
    return out


def has_review() -> ColumnElement[bool]:
    """SQL: the assessment's (claim, paper) pair has a review row (load it even if UNRELATED)."""
    return exists(
        select(Review.id).where(
            Review.claim_id == Assessment.claim_id, Review.arxiv_id == Assessment.arxiv_id
        )
    )


def reviewed_pairs(session: Session) -> list[tuple[str, str]]:
    """Every (claim_id, arxiv_id) with a review row, decision or note, in order."""
    query = select(Review.claim_id, Review.arxiv_id).distinct().order_by(Review.claim_id, Review.arxiv_id)
    return [(claim_id, arxiv_id) for claim_id, arxiv_id in session.execute(query)]


def history(session: Session, claim_id: str, arxiv_id: str) -> list[Review]:
    """Every decision and note on one pair, oldest first."""
    query = select(Review).where(Review.claim_id == claim_id, Review.arxiv_id == arxiv_id)
    return list(session.scalars(query.order_by(Review.id)))


def add_review(
    session: Session,
    assessment: Assessment,
    action: str,
    label: str | None,
    note: str,
    from_label: str,
    decisive: bool = False,
    reviewer: str = "",
) -> Review:
    if action not in ACTIONS:
        raise ValueError(f"unknown review action {action!r}")
    row = Review(
        claim_id=assessment.claim_id,
        arxiv_id=assessment.arxiv_id,
        assessment_id=assessment.id,
        action=action,
        from_label=from_label,
        label=label,
        note=note,
        decisive=decisive,
        reviewer=reviewer,
    )
    session.add(row)
    session.flush()
    return row
