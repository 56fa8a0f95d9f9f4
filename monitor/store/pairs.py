"""Each (paper, claim) pair's state: the one definition the judge, its dry run, the digest's tallies and
the board read.

A pair is a paper, on its latest version, and an active claim that the relevance stage picked (a
candidate) or that a judge answered or failed on. Its state is the first of `STATE_ORDER` that holds,
else pending:

    candidate ─┬─ awaiting_screen ── screened_out    (the LLM screen, where one runs)
               └─ pending ─┬─ judged                  a current answer (by a triage-only judge or not)
                           ├─ failed                  the answer was unusable; the next run asks again
                           └─ parked                  failed too often; `monitor retest` asks again

A pending pair is `below_cut` where a triage-only judge's cut is in force (`PairScope.top_k`) and the
pair is not among its claim's `top_k` candidates of its ISO week by relevance score: not that judge's
work, so not "pending" for it. The judge's work is its pending and failed pairs above the cut
(`JUDGE_WORK`); a failed or parked pair keeps that state wherever it ranks (only an earlier judge, one
without the cut, can have failed on a pair below it).

Whose answers make a pair judged or parked is the one thing that differs between readers. A count (the
digest, the board: `count_pairs`, `count_judge_work`, in SQL) reads any judge's current answer. The
judge reads its own (`judge_rows`): an answer under its cache key, so a new model, prompt or claim
wording makes the pair its work again, and a pair parked under its key; a failed pair it asks again like
a pending one. On a store whose answers are the judge's own the two agree (tests/test_pair_states.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import chain
from typing import Any, NamedTuple, Protocol

from sqlalchemy import ColumnElement, Select, case, func, literal_column, select, union
from sqlalchemy.orm import Session, aliased

from monitor.judge_names import triage_only_stored
from monitor.store.assessments import judged_keys
from monitor.store.candidates import SCREEN_AWAITING, SCREEN_DROPPED, SCREEN_KEPT, week_index
from monitor.store.claims import is_active
from monitor.store.failures import parked_keys
from monitor.store.models import Assessment, Candidate, Claim, Paper, PaperVersion
from monitor.store.records import JudgeFailure


class PairState(StrEnum):
    """Where a pair stands (the module docstring); the values are what the counts' SQL yields."""

    AWAITING_SCREEN = "awaiting_screen"
    SCREENED_OUT = "screened_out"
    PENDING = "pending"
    JUDGED = "judged"
    FAILED = "failed"
    PARKED = "parked"


# The first that holds is the pair's state; none: pending. An answer outranks a failure (a later success
# clears it), a parked failure an unparked one, and the judge's outcome the screen's.
STATE_ORDER = (
    PairState.JUDGED,
    PairState.PARKED,
    PairState.FAILED,
    PairState.AWAITING_SCREEN,
    PairState.SCREENED_OUT,
)
JUDGE_WORK = frozenset({PairState.PENDING, PairState.FAILED})


def state_of(facts: Mapping[PairState, bool]) -> PairState:
    """The state from what holds of a pair (`STATE_ORDER`), in Python: the judge's own reading."""
    return next((state for state in STATE_ORDER if facts.get(state)), PairState.PENDING)


def _state_sql(facts: Mapping[PairState, ColumnElement[bool]]) -> ColumnElement[str]:
    """The same order in SQL: the counts' reading."""
    return case(*[(facts[state], state.value) for state in STATE_ORDER], else_=PairState.PENDING.value)


@dataclass(frozen=True)
class PairScope:
    """Which pairs: of papers published by `until` and from `since` (None: any day), of `claim_ids`
    (None: every active claim), read against a triage cut of `top_k` (None: no cut)."""

    until: dt.date | None = None
    since: dt.date | None = None
    claim_ids: Sequence[str] | None = None
    top_k: int | None = None


def cache_key(
    arxiv_id: str, version: int, claim_text: str, judge: str, model: str, prompt_version: str
) -> str:
    """The identity of one judgement: the same inputs are never judged twice (unless forced)."""
    payload = json.dumps([arxiv_id, version, claim_text, judge, model, prompt_version], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def for_the_judge() -> ColumnElement[bool]:
    """SQL, on `Candidate`: a pair no LLM screen holds back (none ran, or it kept the pair)."""
    return Candidate.screen.is_(None) | (Candidate.screen == SCREEN_KEPT)


def within_triage_cut(top_k: int) -> Select[Any]:
    """Ids of the candidates among their claim's `top_k` of highest relevance score (ties by arXiv id) of
    their paper's ISO week, counting only pairs the judge may judge (a paper's latest version, kept by
    any LLM screen). What a triage-only judge reads when its cut applies (judge/work.py `triage_cut`);
    the rest are below its cut."""
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
        .where(Candidate.version == Paper.version, for_the_judge())
        .subquery()
    )
    return select(ranked.c.id).where(ranked.c.rank <= top_k)


def _scoped(query: Select[Any], scope: PairScope, claim_id: Any) -> Select[Any]:
    if scope.until is not None:
        query = query.where(Paper.published <= scope.until)
    if scope.since is not None:
        query = query.where(Paper.published >= scope.since)
    if scope.claim_ids:
        query = query.where(claim_id.in_(list(scope.claim_ids)))
    return query


# --- the counts' reading: any judge's current answer, in SQL -------------------------------------


def _pair_states(scope: PairScope) -> Any:
    """A subquery, one row per pair in `scope`: arxiv_id, claim_id, state, below_cut (1 or 0) and
    triage_only (1: its current answer is a triage-only judge's)."""
    keys = union(
        select(Candidate.arxiv_id, Candidate.version, Candidate.claim_id),
        select(Assessment.arxiv_id, Assessment.version, Assessment.claim_id).where(Assessment.is_current),
        select(JudgeFailure.arxiv_id, JudgeFailure.version, JudgeFailure.claim_id),
    ).subquery("pair_keys")
    candidate = aliased(Candidate)

    def of_pair(table: Any) -> ColumnElement[bool]:
        return (
            (table.arxiv_id == keys.c.arxiv_id)
            & (table.version == keys.c.version)
            & (table.claim_id == keys.c.claim_id)
        )

    failure = select(JudgeFailure.id).where(of_pair(JudgeFailure))
    if scope.top_k is None:
        below: ColumnElement[int] = literal_column("0")
    else:
        outside = candidate.id.is_not(None) & candidate.id.not_in(within_triage_cut(scope.top_k))
        below = case((outside, 1), else_=0)
    facts = (
        select(
            keys.c.arxiv_id,
            keys.c.claim_id,
            candidate.screen,
            select(Assessment.judge)
            .where(of_pair(Assessment), Assessment.is_current)
            .limit(1)
            .scalar_subquery()
            .label("answered_by"),
            failure.where(JudgeFailure.parked_at.is_not(None)).exists().label("parked"),
            failure.where(JudgeFailure.parked_at.is_(None)).exists().label("failed"),
            below.label("below_cut"),
        )
        .select_from(keys)
        .join(Paper, (Paper.arxiv_id == keys.c.arxiv_id) & (Paper.version == keys.c.version))
        .join(Claim, Claim.id == keys.c.claim_id)
        .outerjoin(candidate, of_pair(candidate))
        .where(is_active())
    )
    f = _scoped(facts, scope, keys.c.claim_id).subquery("pair_facts")
    state = _state_sql(
        {
            PairState.JUDGED: f.c.answered_by.is_not(None),
            PairState.PARKED: f.c.parked,
            PairState.FAILED: f.c.failed,
            PairState.AWAITING_SCREEN: f.c.screen.in_(SCREEN_AWAITING),
            PairState.SCREENED_OUT: f.c.screen == SCREEN_DROPPED,
        }
    )
    triage = case((f.c.answered_by.in_(triage_only_stored()), 1), else_=0)
    return select(
        f.c.arxiv_id,
        f.c.claim_id,
        state.label("state"),
        f.c.below_cut,
        triage.label("triage_only"),
    ).subquery("pair_states")


class PairCount(NamedTuple):
    """How many of a claim's pairs are in one state (`below_cut`: ranked below the cut in force;
    `triage_only`: judged pairs whose current answer is a triage-only judge's)."""

    claim_id: str
    state: PairState
    below_cut: bool
    triage_only: bool
    pairs: int


def count_pairs(session: Session, scope: PairScope) -> list[PairCount]:
    """The pairs in `scope` by claim and state: what the digest's tallies and the board read."""
    pairs = _pair_states(scope)
    columns = (pairs.c.claim_id, pairs.c.state, pairs.c.below_cut, pairs.c.triage_only)
    query = select(*columns, func.count()).group_by(*columns)
    return [
        PairCount(claim_id, PairState(state), bool(below), bool(t), int(n))
        for claim_id, state, below, t, n in session.execute(query)
    ]


def count_judge_work(session: Session, scope: PairScope) -> tuple[int, int]:
    """(pairs, papers) in `scope` that are the judge's work (`JUDGE_WORK`, above the cut): no verdict
    rests on them yet (the sample's earlier papers after `monitor run --source sample`)."""
    pairs = _pair_states(scope)
    query = select(func.count(), func.count(func.distinct(pairs.c.arxiv_id))).where(
        pairs.c.state.in_([s.value for s in JUDGE_WORK]), pairs.c.below_cut == 0
    )
    found, papers = session.execute(query).one()
    return int(found or 0), int(papers or 0)


class PairTally(NamedTuple):
    """What became of some pairs: all of them but those the LLM screen dropped, and by state."""

    pairs: int = 0
    judged: int = 0  # a current answer
    failed: int = 0  # the judge's answer was unusable; asked again by the next run
    parked: int = 0  # failed too often: no longer asked until `monitor retest`
    pending: int = 0  # not asked yet (or waiting for the LLM screen)
    # With the LLM screen (relevance.screen): of `pending`, the pairs it has not answered yet (its call
    # failed, or the run stopped), and, besides `pairs`, those it read and found not to bear.
    awaiting_screen: int = 0
    screened_out: int = 0
    below_cut: int = 0  # of `pending`, those below a triage-only judge's cut: not its work
    judge_work: int = 0  # the judge's work (`JUDGE_WORK` above the cut): `count_judge_work`'s pairs

    @classmethod
    def of(cls, counts: Iterable[PairCount]) -> PairTally:
        by = Counter[PairState]()
        below = work = 0
        for count in counts:
            by[count.state] += count.pairs
            below += count.pairs if count.below_cut and count.state is PairState.PENDING else 0
            work += count.pairs if count.state in JUDGE_WORK and not count.below_cut else 0
        return cls(
            pairs=sum(by.values()) - by[PairState.SCREENED_OUT],
            judged=by[PairState.JUDGED],
            failed=by[PairState.FAILED],
            parked=by[PairState.PARKED],
            pending=by[PairState.PENDING] + by[PairState.AWAITING_SCREEN],
            awaiting_screen=by[PairState.AWAITING_SCREEN],
            screened_out=by[PairState.SCREENED_OUT],
            below_cut=below,
            judge_work=work,
        )


def pair_tally(session: Session, scope: PairScope) -> PairTally:
    return PairTally.of(count_pairs(session, scope))


class Reading(NamedTuple):
    """One claim's (or a line's, summed) candidate pairs and who read them: a digest may say "no
    relevant paper found" only of a claim whose every pair a judge that reads stance (an LLM) read."""

    candidates: int = 0
    read_llm: int = 0  # a current answer from a judge that reads stance (not a triage-only one)
    read_embedded: int = 0  # only a triage-only judge (the embedded model) answered it
    not_read: int = 0  # no current answer: not asked yet, failed, parked, below the triage cut

    def __add__(self, other: object) -> Reading:
        if not isinstance(other, Reading):
            return NotImplemented
        return Reading(*(a + b for a, b in zip(self, other, strict=True)))

    @property
    def all_read_by_llm(self) -> bool:
        return self.candidates > 0 and self.read_llm == self.candidates


def readings(counts: Iterable[PairCount]) -> dict[str, Reading]:
    """Per claim, its pairs (but those the LLM screen dropped) and who read them."""
    out: dict[str, list[int]] = {}
    for count in counts:
        if count.state is PairState.SCREENED_OUT:
            continue
        tally = out.setdefault(count.claim_id, [0, 0, 0, 0])
        tally[0] += count.pairs
        if count.state is PairState.JUDGED:
            tally[2 if count.triage_only else 1] += count.pairs
        else:
            tally[3] += count.pairs
    return {claim_id: Reading(*tally) for claim_id, tally in out.items()}


def unread_by_claim(counts: Iterable[PairCount]) -> dict[str, int]:
    """Per claim, its failed and parked pairs: pairs the judge could not read, which a digest must not
    count as "no relevant paper"."""
    unread: Counter[str] = Counter()
    for count in counts:
        if count.state in (PairState.FAILED, PairState.PARKED):
            unread[count.claim_id] += count.pairs
    return dict(unread)


# --- the judge's reading: its own answers, by cache key ------------------------------------------


class JudgeKey(Protocol):
    """What makes a judge's cache keys (monitor/judge/base.py `Judge`)."""

    name: str
    model: str
    prompt_version: str


class WorkRow(NamedTuple):
    """A candidate pair for the judge, with what it reads, its cache key and its state for the judge."""

    arxiv_id: str
    version: int
    claim_id: str
    claim_text: str
    date_text: str | None
    published: dt.date | None
    title: str
    abstract: str
    key: str
    state: PairState


def judge_rows(
    session: Session,
    judge: JudgeKey,
    scope: PairScope,
    force: bool = False,
    retry_parked: bool = False,
) -> Iterator[WorkRow]:
    """The pairs in `scope` (above its cut) that are `judge`'s work, and those parked for it (state
    PARKED, for the caller to count), paper by paper. `force`: every pair is its work; `retry_parked`:
    parked ones too.

    Streamed, a thousand rows at a time (read them inside the session): each row carries its paper's
    abstract, and a large library's pending pairs held at once took a gigabyte. The judge's own answers
    are read only once a row comes (a run with nothing pending reads none)."""
    query = (
        select(
            Candidate.arxiv_id,
            Candidate.version,
            Claim.id,
            Claim.text,
            Claim.date_text,
            Paper.published,
            func.coalesce(PaperVersion.title, Paper.title),
            func.coalesce(PaperVersion.abstract, Paper.abstract),
        )
        .join(Paper, Paper.arxiv_id == Candidate.arxiv_id)
        .join(Claim, Claim.id == Candidate.claim_id)
        .outerjoin(
            PaperVersion,
            (PaperVersion.arxiv_id == Candidate.arxiv_id) & (PaperVersion.version == Candidate.version),
        )
        .where(Candidate.version == Paper.version, is_active(), for_the_judge())
        .order_by(Candidate.arxiv_id, Candidate.version, Claim.id)
    )
    if scope.top_k is not None:
        query = query.where(Candidate.id.in_(within_triage_cut(scope.top_k)))
    rows = iter(session.execute(_scoped(query, scope, Claim.id).execution_options(yield_per=1000)))
    first = next(rows, None)
    if first is None:
        return
    mine = (judge.name, judge.model, judge.prompt_version)
    done = set() if force else judged_keys(session, *mine, scope.claim_ids)
    parked = set() if force or retry_parked else parked_keys(session)
    for arxiv_id, version, claim_id, text, date_text, published, title, abstract in chain([first], rows):
        key = cache_key(arxiv_id, version, text, *mine)
        # Screen facts are false here: the query keeps only pairs the screen does not hold back.
        state = state_of({PairState.JUDGED: key in done, PairState.PARKED: key in parked})
        if state is not PairState.JUDGED:
            row = (arxiv_id, version, claim_id, text, date_text, published, title or "", abstract or "")
            yield WorkRow(*row, key, state)
