"""The candidate pairs relevance writes and the LLM screen keeps or drops. What state each pair is in,
and which are the judge's work, is store/pairs.py's."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Integer, func, insert, select, update
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.functions import FunctionElement

from monitor.store.claims import is_active
from monitor.store.models import Candidate, Claim, Paper, utcnow

# `candidates.screen`: None when no LLM screen ran; else the screen's answer, or pending until it comes.
# "recheck": dropped by a first reading that kept the paper for another claim of the call, and waiting
# for the screen's second, closer reading (relevance.screen_recheck); it is still awaiting the screen.
SCREEN_PENDING, SCREEN_KEPT, SCREEN_DROPPED, SCREEN_RECHECK = "pending", "kept", "dropped", "recheck"
SCREEN_AWAITING = (SCREEN_PENDING, SCREEN_RECHECK)


class week_index(FunctionElement[int]):  # noqa: N801 (an SQL function's name)
    """SQL: the week (Monday to Sunday, an ISO week, as a digest's) a date falls in, as the number of
    weeks since Monday 1900-01-01."""

    type = Integer()
    inherit_cache = True


@compiles(week_index, "sqlite")
def _week_index_sqlite(element: week_index, compiler: Any, **kw: Any) -> str:
    day = compiler.process(element.clauses, **kw)
    return f"CAST((julianday({day}) - julianday('1900-01-01')) / 7 AS INTEGER)"


@compiles(week_index, "postgresql")
def _week_index_postgresql(element: week_index, compiler: Any, **kw: Any) -> str:
    return f"(({compiler.process(element.clauses, **kw)}) - DATE '1900-01-01') / 7"


def pending_screen_pairs(
    session: Session,
    claim_ids: Sequence[str] | None = None,
    since: dt.date | None = None,
    state: str = SCREEN_PENDING,
) -> dict[tuple[str, int], set[str]]:
    """Per paper (latest version), the active claims whose pair waits for the LLM screen in `state`
    (the first reading's, or SCREEN_RECHECK: the second's), optionally only of `claim_ids`, of papers
    published on or after `since`; ids only: a paper's text is read once, not once a claim
    (`version_texts`)."""
    query = (
        select(Candidate.arxiv_id, Candidate.version, Candidate.claim_id)
        .join(Paper, Paper.arxiv_id == Candidate.arxiv_id)
        .join(Claim, Claim.id == Candidate.claim_id)
        .where(Candidate.version == Paper.version, is_active(), Candidate.screen == state)
    )
    if claim_ids:
        query = query.where(Claim.id.in_(claim_ids))
    if since:
        query = query.where(Paper.published >= since)
    pending: dict[tuple[str, int], set[str]] = {}
    for arxiv_id, version, claim_id in session.execute(query.execution_options(yield_per=5000)):
        pending.setdefault((arxiv_id, version), set()).add(claim_id)
    return pending


def screen_tally(session: Session) -> tuple[int, int]:
    """(kept, dropped): the LLM screen's answers so far, over every pair it read."""
    query = select(Candidate.screen, func.count()).where(
        Candidate.screen.in_([SCREEN_KEPT, SCREEN_DROPPED])
    ).group_by(Candidate.screen)
    counts = dict(session.execute(query).all())
    return int(counts.get(SCREEN_KEPT, 0)), int(counts.get(SCREEN_DROPPED, 0))


def count_screen_pending(session: Session, claim_ids: Sequence[str] | None = None) -> int:
    """How many pairs (of any version, of `claim_ids` when given) still wait for the LLM screen's first
    or second reading."""
    query = select(func.count()).select_from(Candidate).where(Candidate.screen.in_(SCREEN_AWAITING))
    if claim_ids:
        query = query.where(Candidate.claim_id.in_(claim_ids))
    return session.scalar(query) or 0


def save_screen_answers(
    session: Session,
    answers: Sequence[tuple[str, int, dict[str, bool]]],
    exchange_id: int | None,
    *,
    recheck: bool = False,
    again: bool = False,
) -> tuple[int, int]:
    """For each (arxiv_id, version, {claim id: kept}), mark the paper version's pairs waiting for this
    reading kept or dropped: two or three statements a paper, not one a pair. The first reading's
    (`again` False) reads pending pairs; with `recheck`, those it drops for a paper it keeps for another
    claim wait for the second reading instead. The second reading's (`again`) reads the pairs waiting
    for it, and only those: an answer never undoes another reading's. Returns (kept, dropped): the pairs
    this answer settled."""
    waiting = SCREEN_RECHECK if again else SCREEN_PENDING
    counts = {SCREEN_KEPT: 0, SCREEN_DROPPED: 0, SCREEN_RECHECK: 0}
    for arxiv_id, version, kept in answers:
        dropped_to = SCREEN_RECHECK if recheck and not again and any(kept.values()) else SCREEN_DROPPED
        for state, keep in ((SCREEN_KEPT, True), (dropped_to, False)):
            claims = [claim_id for claim_id, k in kept.items() if k is keep]
            if not claims:
                continue
            moved = session.execute(
                update(Candidate)
                .where(
                    Candidate.arxiv_id == arxiv_id,
                    Candidate.version == version,
                    Candidate.claim_id.in_(claims),
                    Candidate.screen == waiting,
                )
                .values(screen=state, screen_exchange_id=exchange_id)
            )
            counts[state] += moved.rowcount or 0
    return counts[SCREEN_KEPT], counts[SCREEN_DROPPED]


def candidate_keys(session: Session, arxiv_ids: Iterable[str]) -> set[tuple[str, int, str]]:
    """(arxiv_id, version, claim id) of every stored candidate of the given papers."""
    query = select(Candidate.arxiv_id, Candidate.version, Candidate.claim_id)
    return {(a, v, c) for a, v, c in session.execute(query.where(Candidate.arxiv_id.in_(list(arxiv_ids))))}


def add_candidates(
    session: Session,
    pairs: Sequence[tuple[tuple[str, int, str], float]],
    method: str,
    run_id: int | None,
    screen: str | None,
) -> None:
    """New candidate pairs ((arxiv_id, version, claim id), score), each with the method that chose it;
    one executemany, not an ORM object a pair (a 1,000-claim week writes 441,368 of them)."""
    if not pairs:
        return
    now = utcnow()
    rows = [
        {
            "arxiv_id": arxiv_id,
            "version": version,
            "claim_id": claim_id,
            "score": score,
            "method": method,
            "run_id": run_id,
            "created_at": now,
            "screen": screen,
        }
        for (arxiv_id, version, claim_id), score in pairs
    ]
    session.execute(insert(Candidate), rows)
