"""Gathering a period's digest view-model from the store.

A claim's verdict in the digest is its outcome under the rules at the period's end (and, to say whether
it changed, at the day before the period began: `Period.verdict_days`) as the verdicts stage stored it
(`settle_outcomes`, which a run's entry point runs once first: the outcomes stage, schedule/flow.py);
the ask step, the digest, its mail and webhooks read it and never compute one.
"New evidence" is a counted assessment whose paper version was announced in the period. The embedded
judge's unconfirmed stances are not evidence the digest can sign: its papers are listed for triage
(ranked, with the abstract sentence closest to the claim, no stance) from a measured floor of its score
up (`TRIAGE_FLOOR`), and its labels wait in `monitor review`. What was read for each claim (who answered
its candidates) is counted, so the digest never says "no relevant paper found" of pairs nobody read.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, replace

from sqlalchemy.orm import Session

from monitor.config import Settings
from monitor.judge.embedded import measured_coverage, sentence_overlap, surface_words
from monitor.judge.sentences import split_sentences
from monitor.judge.work import ran_cut
from monitor.judge_names import triage_only_judge
from monitor.llm.cost import token_cost
from monitor.relevance.bm25 import Lexicon, load_lexicon
from monitor.report.period import Period, day_range
from monitor.report.research import DigestAsks, digest_note, research_questions
from monitor.report.strongest import attach_strongest
from monitor.report.views import (
    EVIDENCE_PER_CLAIM,
    TRIAGE_FLOOR,
    TRIAGE_PER_CLAIM,
    AnchorView,
    ClaimView,
    DigestView,
    EvidenceView,
    LineView,
    Summary,
    TriageView,
)
from monitor.review.rewording import open_views
from monitor.store.claims import active_claims, lines_by_claim
from monitor.store.db import Store
from monitor.store.digests import period_usage
from monitor.store.lines import active_lines, ungrounded_anchors
from monitor.store.models import Anchor, Claim, Line
from monitor.store.pairs import (
    PairCount,
    PairScope,
    PairTally,
    Reading,
    count_judge_work,
    count_pairs,
    readings,
    unread_by_claim,
)
from monitor.store.papers import abstracts_of, count_first_seen, count_published
from monitor.verdicts.rollup import OutcomeRun, settle_outcomes, stored_outcomes
from monitor.verdicts.rules import (
    STATUSES,
    EvidenceItem,
    EvidenceSummary,
    Outcome,
    Thresholds,
    capped_sides,
    strength_scale,
)
from monitor.verdicts.sources import anchor_ids_by_claim

OTHER_LINE_ID = "_other"
# A later sentence of the abstract is quoted instead of the first (most often background) when it
# shares at least this share of the first one's weight of claim words.
LATER_SENTENCE_SHARE = 0.8


def _triaged(item: EvidenceItem, now: Outcome) -> bool:
    """A triage-only judge's stance that nobody confirmed, or withheld: listed without a stance."""
    return triage_only_judge(item.judge) and not item.reviewed and (item.abstained or item in now.held)


def _claim_view(
    claim: Claim,
    now: Outcome,
    before: Outcome,
    period: Period,
    lines: list[str],
    sources: set[str],
    th: Thresholds,
) -> ClaimView:
    """A claim's part of the digest: its verdict at the period's end and before, and the period's papers
    on it in four lists (new evidence, triage, unsure leanings, and what the verdict rests on)."""
    appeared = [i for i in [*now.counted, *now.unclear] if period.contains(i.appeared)]
    ranked = _triage_ranked(appeared, now, sources)
    # Below the measured floor, fewer than half the model's picks bear on their claim: not listed.
    triage = [i for i in ranked if i.confidence >= TRIAGE_FLOOR]
    unsure = _unsure(now, period)
    new = _new_evidence(appeared, now)
    review = sum(1 for v in new if v.for_review) + len(ranked) + len(unsure)
    recent = now.strongest_recent
    view = ClaimView(
        id=claim.id,
        text=claim.text,
        date_text=claim.date_text,
        status=now.status,
        previous_status=before.status,
        last_changed=now.last_changed,
        new_evidence=new[:EVIDENCE_PER_CLAIM],
        strongest_recent=_view(recent, now),
        review_count=review,
        line_ids=lines,
        dated=claim.kind == "dated",
        more_evidence=max(0, len(new) - EVIDENCE_PER_CLAIM),
        moved_by=_view(now.movers[0] if now.movers else None, now),
        triage=[TriageView(i, i.evidence) for i in triage[:TRIAGE_PER_CLAIM]],
        unsure=unsure[:EVIDENCE_PER_CLAIM],
        more_triage=max(0, len(triage) - TRIAGE_PER_CLAIM),
        evidence=now.summary,
        below_floor=len(ranked) - len(triage),
    )
    _add_standing(view, now, th)
    return view


def _view(item: EvidenceItem | None, now: Outcome) -> EvidenceView | None:
    return EvidenceView(item, item in now.for_review) if item is not None else None


def _triage_ranked(appeared: list[EvidenceItem], now: Outcome, sources: set[str]) -> list[EvidenceItem]:
    """The period's unconfirmed embedded stances, best first, that may be listed for triage: the claim's
    own sources (its lines' anchors) are not news about it, whatever the settings say."""
    return sorted(
        {i for i in appeared if _triaged(i, now) and not i.source and i.arxiv_id not in sources},
        key=lambda i: (-i.confidence, i.arxiv_id),
    )


def _unsure(now: Outcome, period: Period) -> list[EvidenceView]:
    """The period's LLM labels withheld as too unsure (below verdicts.min_confidence, or for RELAXES and
    OVERTURNS min_confidence_against), grounded and read twice where asked: leanings for review, surest
    first."""
    unsure = [
        EvidenceView(i, True)
        for i in now.withheld
        if period.contains(i.appeared) and not triage_only_judge(i.judge) and i.grounded
        and not i.abstained and i.second_look != "pending" and not i.source
    ]
    return sorted(unsure, key=lambda v: (-v.item.confidence, v.item.arxiv_id))


def _new_evidence(appeared: list[EvidenceItem], now: Outcome) -> list[EvidenceView]:
    """The period's counted papers that are not triage, strongest first: against before for, then by
    confidence."""
    new = [EvidenceView(i, i in now.for_review, unconfirmed=i in now.held) for i in now.counted]
    new = [v for v in new if v.item in appeared and not _triaged(v.item, now)]
    return sorted(
        new, key=lambda v: (v.item.label != "OVERTURNS", v.item.label != "RELAXES", -v.item.confidence)
    )


def _add_standing(view: ClaimView, now: Outcome, th: Thresholds) -> None:
    """What the verdict stands on beyond the period's news: the papers it rests on (not shown already),
    its strength per side (none where only triage counts), and the conditions curators confirmed."""
    shown = {v.item for v in view.new_evidence} | ({now.strongest_recent} if now.strongest_recent else set())
    view.rests_on = [EvidenceView(m, m in now.for_review) for m in now.movers[:3] if m not in shown]
    view.strength = now.strength if [i for i in now.counted if not _triaged(i, now)] else {}
    view.capped = capped_sides(now.moving, th) if view.strength else []
    view.conditions = [
        EvidenceView(i) for i in now.counted if i.reviewed and i.label == "RELAXES" and i.evidence
    ]


def _quote_triage(s: Session, claims: list[Claim], views: dict[str, ClaimView]) -> None:
    """Each triage entry's sentence: the abstract sentence sharing most with the claim (the model's
    own pick is kept where the abstract has nothing closer), preferring a later one over the first,
    background sentence when it shares nearly as much."""
    texts = {c.id: c.text for c in claims}
    entries = [(cid, t) for cid, v in views.items() for t in v.triage]
    if not entries:
        return
    abstracts = abstracts_of(s, [(t.item.arxiv_id, t.item.version) for _, t in entries])
    lexicon = load_lexicon()
    for claim_id, entry in entries:
        abstract = abstracts.get((entry.item.arxiv_id, entry.item.version), "")
        entry.sentence, entry.words = closest_sentence(lexicon, texts[claim_id], abstract, entry.sentence)


def closest_sentence(lexicon: Lexicon, claim: str, abstract: str, fallback: str) -> tuple[str, list[str]]:
    """The abstract sentence that shares most with the claim, and the claim's words it shares."""
    sentences = [s.text for s in split_sentences(abstract)]
    scored = sentence_overlap(lexicon, claim, sentences) if sentences else []
    if not scored or max(score for score, _ in scored) <= 0:
        return fallback, []
    order = sorted(range(len(scored)), key=lambda i: (-scored[i][0], i))
    best = order[0]
    if best == 0 and len(order) > 1 and scored[order[1]][0] >= LATER_SENTENCE_SHARE * scored[0][0]:
        best = order[1]
    return sentences[best], surface_words(sentences[best], scored[best][1][:4])


def _urgency(view: ClaimView) -> tuple[int, int, str]:
    order = {status: i for i, status in enumerate(STATUSES)}
    return (0 if view.changed else 1, order.get(view.status, 9), view.id)


@dataclass
class PeriodPairs:
    """What became of the pairs a digest accounts for (store/pairs.py, read once): the period's, and all
    of papers published by its end, against the cut of the judge that last judged the store."""

    cut: int | None
    in_period: list[PairCount]
    to_date: list[PairCount]
    unjudged: tuple[int, int]  # (pairs, papers) published by the period's end that are the judge's work

    @classmethod
    def read(cls, s: Session, settings: Settings, period: Period) -> PeriodPairs:
        cut = ran_cut(s, settings)
        to_date = PairScope(until=period.end, top_k=cut)
        return cls(
            cut,
            count_pairs(s, replace(to_date, since=period.start)),
            count_pairs(s, to_date),
            count_judge_work(s, to_date),
        )


def _summary(
    s: Session, settings: Settings, period: Period, claims: list[ClaimView], pairs: PeriodPairs
) -> Summary:
    start, stop = day_range(period)
    usage = period_usage(s, period.start, period.end, start, stop, period.key)
    # Priced as the judge prices its own calls (llm/cost.py): cached prompt tokens at their rate, Batch API
    # answers at half price.
    live = (
        usage.prompt_tokens - usage.batch_prompt_tokens,
        usage.completion_tokens - usage.batch_completion_tokens,
    )
    cost = token_cost(
        settings, *live, cached_tokens=usage.cached_tokens - usage.batch_cached_tokens
    ) + token_cost(
        settings,
        usage.batch_prompt_tokens,
        usage.batch_completion_tokens,
        batch=True,
        cached_tokens=usage.batch_cached_tokens,
    )
    counts = Counter(c.status for c in claims)
    # Pairs below a triage-only judge's cut are not its work: counted apart, not as "not judged yet".
    judging = PairTally.of(pairs.in_period)
    return Summary(
        counts={status: counts.get(status, 0) for status in STATUSES},
        changed=sorted((c for c in claims if c.changed), key=_urgency),
        papers_published=count_published(s, period.start, period.end),
        papers_first_seen=count_first_seen(s, start, stop),
        pairs_judged=usage.judged,
        new_evidence=sum(len(c.new_evidence) + c.more_evidence for c in claims),
        triaged=sum(len(c.triage) + c.more_triage for c in claims),
        judging=judging,
        for_review=sum(c.review_count for c in claims),
        tokens=usage.prompt_tokens + usage.completion_tokens,
        cost_usd=float(cost),
        parked=PairTally.of(pairs.to_date).parked,
        judged_embedded=usage.judged_embedded,
        embedded_coverage=measured_coverage() if usage.judged_embedded else None,
        evidence=EvidenceSummary.total([c.evidence for c in claims]),
        unjudged_pairs=pairs.unjudged[0],
        unjudged_papers=pairs.unjudged[1],
        triage_cut=pairs.cut,
        below_cut=judging.below_cut,
    )


def gather_digest(
    store: Store, settings: Settings, period: Period, asked: DigestAsks | None = None
) -> DigestView:
    """Build the digest view-model for one period. A pure reader: it calls no LLM, computes no verdict
    and writes nothing; the run settles the period's outcomes first (`settle_period`, once: the
    pipeline's outcomes step), and a missing or stale one raises OutcomesNotStored.

    Research questions are `asked`'s (the ask step before the digest, report/asks.py), else an earlier
    identical request's stored answer; proposed wordings are the open ones in the store.
    """
    with store.session() as s:
        claims = active_claims(s)
        # The outcomes the verdicts stage stored for the period's dates (every item behind each verdict:
        # counted, unclear, unconfirmed, for review). Its caller settled them just before, on the
        # evidence as it is now (a replay judges past weeks today), so a period renders the same
        # whatever was run after it; a missing or stale one raises rather than being computed here.
        end, eve = period.verdict_days
        stored = stored_outcomes(s, settings, (end, eve), claims)
        now, before = stored[end], stored[eve]
        by_claim = lines_by_claim(s)
        sources = anchor_ids_by_claim(s)
        th = Thresholds.from_settings(settings.verdicts)
        views = {
            c.id: _claim_view(
                c, now[c.id], before[c.id], period, by_claim.get(c.id, []), sources.get(c.id, set()), th
            )
            for c in claims
        }
        _quote_triage(s, claims, views)
        pairs = PeriodPairs.read(s, settings, period)
        for claim_id, unread in unread_by_claim(pairs.in_period).items():
            if claim_id in views:
                views[claim_id].unread = unread
        for claim_id, reading in readings(pairs.to_date).items():
            if claim_id in views:
                views[claim_id].reading = reading
        in_period = readings(pairs.in_period)
        line_rows = {ln.id: ln for ln in active_lines(s)}
        # An anchor nobody checked yet is not news; one checked and not found as cited is.
        anchors = [a for a in ungrounded_anchors(s) if a.status != "unverified"]
        summary = _summary(s, settings, period, list(views.values()), pairs)
    for proposal in open_views(store, list(views)):
        views[proposal.claim_id].proposal = proposal
        summary.proposals += 1
    lines = _line_views(views, line_rows, anchors)
    for line in lines:
        line.period_reading = sum((in_period.get(c.id, Reading()) for c in line.claims), Reading())
        found = asked.questions.get(line.id) if asked is not None else None
        line.questions = found or research_questions(store, settings, line, line.detailed, ask=False)
    attach_strongest(store, settings, period, now, lines)
    return DigestView(
        title=settings.report.title,
        period=period,
        generated_at=dt.datetime.now(dt.UTC).replace(microsecond=0, tzinfo=None),
        summary=summary,
        lines=lines,
        llm=settings.judge_provider() == "openai",
        recent_months=settings.verdicts.recent_months,
        move_strength=settings.verdicts.move_strength,
        overturn_strength=settings.verdicts.overturn_strength,
        min_confidence=th.floor("SUPPORTS"),
        against_floor=th.floor("RELAXES"),
        research_note=digest_note([line.questions for line in lines]),
        scale=strength_scale(th),
    )


def settle_period(store: Store, settings: Settings, period: Period, run_id: int | None = None) -> OutcomeRun:
    """The verdicts stage's outcomes at the period's dates, computed where the evidence changed since
    they were stored: what a run does once before anything calls `gather_digest` (the outcomes stage,
    schedule/flow.py; report/channels.py `SettledPeriods` for a digest delivered on its own)."""
    return settle_outcomes(store, settings, period.verdict_days, run_id)


def _line_views(
    views: dict[str, ClaimView], line_rows: dict[str, Line], anchors: list[Anchor]
) -> list[LineView]:
    sections: dict[str, LineView] = {
        line_id: LineView(id=line_id, question=row.question) for line_id, row in line_rows.items()
    }
    for view in views.values():
        if not [lid for lid in view.line_ids if lid in sections]:
            sections.setdefault(OTHER_LINE_ID, LineView(id=OTHER_LINE_ID, question="Claims outside any line"))
            view.line_ids = [OTHER_LINE_ID]
    for anchor in anchors:
        if anchor.line_id in sections:
            sections[anchor.line_id].ungrounded_anchors.append(
                AnchorView(anchor.arxiv_id, anchor.cited_title, anchor.status)
            )

    ordered = sorted(sections, key=lambda lid: (lid == OTHER_LINE_ID, *_weight(views, lid)))
    _place_claims(views, sections, ordered)
    return [sections[lid] for lid in ordered if sections[lid].claims]


def _weight(views: dict[str, ClaimView], line_id: str) -> tuple[int, int, str]:
    """A line's rank: most changed verdicts, then most new papers (evidence or triage), then id."""
    mine = [v for v in views.values() if line_id in v.line_ids]
    news = sum(len(v.new_evidence) + v.more_evidence + len(v.triage) + v.more_triage for v in mine)
    return (-sum(v.changed for v in mine), -news, line_id)


def _place_claims(views: dict[str, ClaimView], sections: dict[str, LineView], ordered: list[str]) -> None:
    """Each claim under its first line (in `ordered`): in full with news, else in the quiet lists;
    named once under each of its other lines."""
    position = {lid: i for i, lid in enumerate(ordered)}
    for view in sorted(views.values(), key=lambda v: (not v.dated, *_urgency(v))):
        homes = sorted((lid for lid in view.line_ids if lid in sections), key=position.__getitem__)
        view.home_line = homes[0]
        for lid in homes:
            section = sections[lid]
            if lid != view.home_line:
                (section.elsewhere if view.newsworthy else section.quiet_elsewhere).append(view)
            elif view.newsworthy:
                section.detailed.append(view)
            else:
                section.quiet.append(view)
