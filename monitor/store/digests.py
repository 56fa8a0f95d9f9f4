"""Recorded digests (`digests` rows) and the judging work a digest period accounts for (what became of
its pairs is store/pairs.py's)."""

from __future__ import annotations

import datetime as dt
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Select, case, false, func, select
from sqlalchemy.orm import Session

from monitor.judge_names import triage_only_stored
from monitor.store.models import Assessment, Candidate, Paper, SecondLook
from monitor.store.records import Digest, LLMExchange, Run

# `digests.stats` keys that record mail delivery (monitor/report/delivery.py), not the rendering:
# re-rendering a digest keeps them, so a later run still knows what an earlier send did.
EMAIL_ATTEMPT = "email_attempt"  # a send began: when, and its Message-ID
EMAIL_UNCONFIRMED = "email_unconfirmed"  # the message went out but the server never answered
EMAIL_REFUSED = "email_refused"  # recipients the server refused
EMAIL_STATE = (EMAIL_ATTEMPT, EMAIL_UNCONFIRMED, EMAIL_REFUSED)
# Webhooks the digest was posted to (monitor/report/webhooks.py): {webhook key: {"at": ..., "status": ...}}.
WEBHOOKS_POSTED = "webhooks_posted"
DELIVERY_STATE = (*EMAIL_STATE, WEBHOOKS_POSTED)


class PeriodUsage(NamedTuple):
    """Pairs judged for a period and the tokens its LLM calls used."""

    judged: int
    prompt_tokens: int
    completion_tokens: int
    judged_embedded: int = 0  # of `judged`, by a triage-only judge (the embedded offline one)
    batch_prompt_tokens: int = 0  # of the tokens, those answered through the Batch API (half price)
    batch_completion_tokens: int = 0
    cached_tokens: int = 0  # of the prompt tokens, served from the provider's prefix cache (a cheaper rate)
    batch_cached_tokens: int = 0  # of those, through the Batch API


def _judged_for_period(
    first: dt.date, last: dt.date, start: dt.datetime, stop: dt.datetime
) -> ColumnElement[bool]:
    """The judgements a period accounts for: made in [start, stop), or made later about papers published
    on `first`..`last` (a replay judges past weeks today)."""
    in_period = (Assessment.created_at >= start) & (Assessment.created_at < stop)
    about_period = Assessment.arxiv_id.in_(
        select(Paper.arxiv_id).where(Paper.published.between(first, last))
    ) & (Assessment.created_at >= start)
    return in_period | about_period


class JudgedPair(NamedTuple):
    """One (claim, paper) pair a judge read for a period."""

    claim_id: str
    arxiv_id: str
    judge: str
    model: str


def judged_pairs(
    session: Session, first: dt.date, last: dt.date, start: dt.datetime, stop: dt.datetime
) -> list[JudgedPair]:
    """The distinct pairs each judge read for a period (the judgements `period_usage` counts)."""
    query = (
        select(Assessment.claim_id, Assessment.arxiv_id, Assessment.judge, Assessment.model)
        .where(_judged_for_period(first, last, start, stop))
        .distinct()
    )
    return [JudgedPair(*row) for row in session.execute(query)]


# The commands that work for one digest's period: a replay, a retest or `monitor judge` works for many,
# and their calls count where their answers are about a period's papers.
ONE_PERIOD_COMMANDS = ("run", "daemon:digest", "report")


def period_runs(key: str) -> Select[tuple[int]]:
    """The runs that worked for the digest of period `key`: a `monitor run` records the period it
    reports before it judges ("period"), and every run that asks for a digest or writes one records it
    under "asks" and "report", so a run that stopped before its digest (every answer invalid) is one."""
    return select(Run.id).where(
        Run.command.in_(ONE_PERIOD_COMMANDS),
        (Run.counts[("period", "key")].as_string() == key)
        | (Run.counts[("asks", "period")].as_string() == key)
        | (Run.counts[("report", "period")].as_string() == key),
    )


def period_usage(
    session: Session,
    first: dt.date,
    last: dt.date,
    start: dt.datetime,
    stop: dt.datetime,
    key: str | None = None,
) -> PeriodUsage:
    """Judgements made in [start, stop), or made later about papers published on `first`..`last`
    (a replay judges past weeks today); tokens are those of their exchanges, of any other call made in
    [start, stop), and, with the period's `key`, of every call of the runs that worked for its digest
    (`period_runs`: failed and invalid answers, the screen, research questions, wordings), and of the
    LLM screen's and the second look's calls about the period's papers."""
    judged_here = _judged_for_period(first, last, start, stop)
    judged, embedded = session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(case((Assessment.judge.in_(triage_only_stored()), 1), else_=0)), 0),
        )
        .select_from(Assessment)
        .where(judged_here)
    ).one()
    exchange_ids = select(Assessment.exchange_id).where(judged_here & Assessment.exchange_id.is_not(None))
    second_ids = (
        select(SecondLook.exchange_id)
        .join(Assessment, Assessment.id == SecondLook.assessment_id)
        .where(judged_here & SecondLook.exchange_id.is_not(None))
    )
    screen_ids = (
        select(Candidate.screen_exchange_id)
        .join(Paper, Paper.arxiv_id == Candidate.arxiv_id)
        .where(Paper.published.between(first, last), Candidate.screen_exchange_id.is_not(None))
    )
    batch = LLMExchange.response_format == "batch"
    prompt, completion, batch_prompt, batch_completion, cached, batch_cached = session.execute(
        select(
            func.coalesce(func.sum(LLMExchange.prompt_tokens), 0),
            func.coalesce(func.sum(LLMExchange.completion_tokens), 0),
            func.coalesce(func.sum(case((batch, LLMExchange.prompt_tokens), else_=0)), 0),
            func.coalesce(func.sum(case((batch, LLMExchange.completion_tokens), else_=0)), 0),
            func.coalesce(func.sum(LLMExchange.cached_tokens), 0),
            func.coalesce(func.sum(case((batch, LLMExchange.cached_tokens), else_=0)), 0),
        ).where(
            ((LLMExchange.created_at >= start) & (LLMExchange.created_at < stop))
            | LLMExchange.id.in_(exchange_ids)
            | LLMExchange.id.in_(second_ids)
            | LLMExchange.id.in_(screen_ids)
            | (LLMExchange.run_id.in_(period_runs(key)) if key is not None else false())
        )
    ).one()
    return PeriodUsage(
        int(judged or 0),
        int(prompt),
        int(completion),
        int(embedded or 0),
        int(batch_prompt),
        int(batch_completion),
        int(cached),
        int(batch_cached),
    )


def save_digest(
    session: Session,
    period_key: str,
    period_start: dt.date,
    period_end: dt.date,
    fields: dict[str, Any],
) -> Digest:
    """The period's one digest row, created if needed, with `fields` set; flushed, so it has an id.

    New `stats` replace the rendering's counts but keep the row's delivery state (DELIVERY_STATE).
    """
    row = session.scalars(select(Digest).where(Digest.period_key == period_key)).first()
    if row is None:
        row = Digest(period_key=period_key, period_start=period_start, period_end=period_end)
        session.add(row)
    elif "stats" in fields and row.stats:
        delivered = {k: v for k, v in row.stats.items() if k in DELIVERY_STATE}
        fields = {**fields, "stats": {**fields["stats"], **delivered}}
    for name, value in fields.items():
        setattr(row, name, value)
    session.flush()
    return row


def recent_digests(session: Session, limit: int) -> list[Digest]:
    """The newest `limit` digest rows, latest period first."""
    query = select(Digest).order_by(Digest.period_end.desc(), Digest.id.desc()).limit(limit)
    return list(session.scalars(query))


def digest_path(session: Session, period_key: str) -> str | None:
    """Where the period's digest was written ("" when recorded without a file); None when there is none."""
    row = session.execute(select(Digest.markdown_path).where(Digest.period_key == period_key)).first()
    return (row[0] or "") if row else None


def unsent_digests(
    session: Session, since: dt.datetime, commands: tuple[str, ...], mailed_too: bool = False
) -> list[int]:
    """Ids of digests written since `since` by runs of `commands` and never mailed (with `mailed_too`,
    mailed or not: webhooks keep their own record), oldest period first."""
    query = (
        select(Digest.id)
        .join(Run, Run.id == Digest.run_id)
        .where(Digest.created_at >= since, Run.command.in_(commands))
        .order_by(Digest.period_start, Digest.id)
    )
    if not mailed_too:
        query = query.where(Digest.sent_at.is_(None))
    return list(session.scalars(query))


def period_keys(session: Session, digest_ids: list[int]) -> list[str]:
    """The period keys of these digests, in the order given."""
    keys = dict(session.execute(select(Digest.id, Digest.period_key).where(Digest.id.in_(digest_ids))).all())
    return [keys[i] for i in digest_ids if i in keys]
