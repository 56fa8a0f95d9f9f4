"""The candidate pairs a stage works on, with the text it reads: shared by relevance (which writes
them), the LLM screen (which keeps or drops them) and the judge (which judges the kept ones)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Integer, Row, Select, func, insert, select, update
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.functions import FunctionElement

from monitor.store.claims import is_active
from monitor.store.models import Assessment, Candidate, Claim, Paper, PaperVersion, utcnow
from monitor.store.records import JudgeFailure

# `candidates.screen`: None when no LLM screen ran; else the screen's answer, or pending until it comes.
SCREEN_PENDING, SCREEN_KEPT, SCREEN_DROPPED = "pending", "kept", "dropped"


def candidate_pairs(*claim_columns: Any) -> Select[Any]:
    """Rows (arxiv_id, version, claim id, claim text, *claim_columns, title, abstract) of the candidates
    of active claims on each paper's latest version, in paper then claim order.

    An older version's candidates are left out: a new version supersedes what its predecessor said.
    """
    return (
        select(
            Candidate.arxiv_id,
            Candidate.version,
            Claim.id,
            Claim.text,
            *claim_columns,
            func.coalesce(PaperVersion.title, Paper.title),
            func.coalesce(PaperVersion.abstract, Paper.abstract),
        )
        .join(Paper, Paper.arxiv_id == Candidate.arxiv_id)
        .join(Claim, Claim.id == Candidate.claim_id)
        .outerjoin(
            PaperVersion,
            (PaperVersion.arxiv_id == Candidate.arxiv_id) & (PaperVersion.version == Candidate.version),
        )
        .where(Candidate.version == Paper.version, is_active())
        .order_by(Candidate.arxiv_id, Candidate.version, Claim.id)
    )


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


def within_triage_cut(top_k: int) -> ColumnElement[bool]:
    """SQL, on a query joining `Candidate`: the pair is among its claim's `top_k` candidates of highest
    relevance score (ties by arXiv id) of its paper's ISO week, counting only the pairs the judge may
    judge (a paper's latest version, kept by any LLM screen). What the embedded judge reads when
    `judge.embedded_top_k` applies (monitor/judge/work.py); the rest are below its triage cut."""
    ranked = (
        select(
            Candidate.id,
            func.row_number()
            .over(
                partition_by=(Candidate.claim_id, week_index(Paper.published)),
                order_by=(Candidate.score.desc(), Candidate.arxiv_id),
            )
            .label("rank"),
        )
        .join(Paper, Paper.arxiv_id == Candidate.arxiv_id)
        .where(Candidate.version == Paper.version, _for_the_judge())
        .subquery()
    )
    return Candidate.id.in_(select(ranked.c.id).where(ranked.c.rank <= top_k))


def pairs_to_judge(
    session: Session,
    claim_ids: Sequence[str] | None = None,
    since: dt.date | None = None,
    top_k: int | None = None,
) -> Iterator[Row[Any]]:
    """Candidate rows (as `candidate_pairs`, with the claim's date text and the paper's publication day)
    the judge may judge: those no LLM screen ran on, or that it kept; optionally only of `claim_ids`,
    of papers published on or after `since`, and within a triage cut of `top_k` (`within_triage_cut`).

    Streamed, a thousand rows at a time (read them inside the session): each row carries its paper's
    abstract, and a large library's pending pairs held at once took a gigabyte."""
    query = candidate_pairs(Claim.date_text, Paper.published).where(_for_the_judge())
    if top_k is not None:
        query = query.where(within_triage_cut(top_k))
    if claim_ids:
        query = query.where(Claim.id.in_(claim_ids))
    if since:
        query = query.where(Paper.published >= since)
    return iter(session.execute(query.execution_options(yield_per=1000)))


def _for_the_judge() -> ColumnElement[bool]:
    """SQL: a pair the judge may judge. Pairs an LLM screen has not kept (pending or dropped) are not the
    judge's."""
    return Candidate.screen.is_(None) | (Candidate.screen == SCREEN_KEPT)


def _of_the_candidate(table: type[Assessment] | type[JudgeFailure]) -> ColumnElement[bool]:
    """SQL: `table`'s row is about the candidate's paper version and claim."""
    return (
        (table.arxiv_id == Candidate.arxiv_id)
        & (table.version == Candidate.version)
        & (table.claim_id == Candidate.claim_id)
    )


def count_unjudged(
    session: Session,
    until: dt.date,
    top_k: int | None = None,
    below_cut: bool = False,
    claim_ids: Sequence[str] | None = None,
    since: dt.date | None = None,
) -> tuple[int, int]:
    """(pairs, papers): the pairs `pairs_to_judge` would give (with `top_k`), of papers published by
    `until`, that have no current assessment of that version and are not parked. A verdict as of `until`
    does not rest on them yet (e.g. the sample's earlier papers after `monitor run --source sample`,
    docs/operations.md). With `below_cut`, instead those ranked below the triage cut of `top_k`: not
    pending for the judge with that cut (an LLM judge reads them). `claim_ids` and `since` narrow it
    as they narrow `pairs_to_judge`."""
    judged = select(Assessment.id).where(_of_the_candidate(Assessment), Assessment.is_current)
    parked = select(JudgeFailure.id).where(
        _of_the_candidate(JudgeFailure), JudgeFailure.parked_at.is_not(None)
    )
    query = (
        select(func.count(), func.count(func.distinct(Candidate.arxiv_id)))
        .select_from(Candidate)
        .join(Paper, Paper.arxiv_id == Candidate.arxiv_id)
        .join(Claim, Claim.id == Candidate.claim_id)
        .where(Candidate.version == Paper.version, is_active(), _for_the_judge(), Paper.published <= until)
        .where(~judged.exists(), ~parked.exists())
    )
    if claim_ids:
        query = query.where(Claim.id.in_(claim_ids))
    if since:
        query = query.where(Paper.published >= since)
    if top_k is not None:
        cut = within_triage_cut(top_k)
        query = query.where(~cut if below_cut else cut)
    elif below_cut:
        return 0, 0
    pairs, papers = session.execute(query).one()
    return int(pairs or 0), int(papers or 0)


def pending_screen_pairs(
    session: Session, claim_ids: Sequence[str] | None = None, since: dt.date | None = None
) -> dict[tuple[str, int], set[str]]:
    """Per paper (latest version), the active claims whose pair waits for the LLM screen (optionally only
    of `claim_ids`, of papers published on or after `since`); ids only: a paper's text is read once,
    not once a claim (`version_texts`)."""
    query = (
        select(Candidate.arxiv_id, Candidate.version, Candidate.claim_id)
        .join(Paper, Paper.arxiv_id == Candidate.arxiv_id)
        .join(Claim, Claim.id == Candidate.claim_id)
        .where(Candidate.version == Paper.version, is_active(), Candidate.screen == SCREEN_PENDING)
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
    """How many pairs (of any version, of `claim_ids` when given) still wait for the LLM screen."""
    query = select(func.count()).select_from(Candidate).where(Candidate.screen == SCREEN_PENDING)
    if claim_ids:
        query = query.where(Candidate.claim_id.in_(claim_ids))
    return session.scalar(query) or 0


def save_screen_answers(
    session: Session, answers: Sequence[tuple[str, int, dict[str, bool]]], exchange_id: int | None
) -> None:
    """For each (arxiv_id, version, {claim id: kept}), mark those of the paper version's pairs still
    pending kept or dropped: two statements a paper, not one a pair."""
    for arxiv_id, version, kept in answers:
        for state, keep in ((SCREEN_KEPT, True), (SCREEN_DROPPED, False)):
            claims = [claim_id for claim_id, k in kept.items() if k is keep]
            if not claims:
                continue
            session.execute(
                update(Candidate)
                .where(
                    Candidate.arxiv_id == arxiv_id,
                    Candidate.version == version,
                    Candidate.claim_id.in_(claims),
                    Candidate.screen == SCREEN_PENDING,
                )
                .values(screen=state, screen_exchange_id=exchange_id)
            )


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
