"""The digest: gather a period's view-model from the store, render it, write it, record it.

A claim's verdict in the digest is computed by the rules at the period's end (and, to say whether it
changed, at the day before the period began), so any past period renders the same way whatever was run
since. "New evidence" is a counted assessment whose paper version was announced in the period.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.config import Settings
from monitor.files import write_atomic
from monitor.report.feed import write_feed
from monitor.report.period import Period, resolve_period
from monitor.report.render import fmt_date, render
from monitor.report.research import ResearchQuestions, research_questions
from monitor.review.rewording import ProposalView, llm_configured, open_views, propose_rewordings
from monitor.sources.base import arxiv_url
from monitor.store.db import Store
from monitor.store.failures import count_parked
from monitor.store.models import Anchor, Assessment, Claim, Line, LLMExchange, Paper
from monitor.store.models import Digest as DigestRow
from monitor.store.runs import RunRecord
from monitor.verdicts.rollup import active_claims, lines_by_claim, outcomes
from monitor.verdicts.rules import STATUSES, EvidenceItem, Outcome

log = logging.getLogger(__name__)

OTHER_LINE_ID = "_other"
# New evidence shown per claim; the rest is one line pointing at `monitor show` (a week of real volume
# otherwise buries the reader: issue 12).
EVIDENCE_PER_CLAIM = 3


@dataclass
class EvidenceView:
    """One paper's bearing on a claim, as the digest shows it."""

    item: EvidenceItem
    for_review: bool = False  # waits for a curator, or an OVERTURNS too weak to overturn the claim
    shown_under: str = ""  # shown in full under this earlier claim of the same line: one line here
    also: list[tuple[str, str]] = field(default_factory=list)  # (claim id, label) further down the line

    @property
    def url(self) -> str:
        return arxiv_url(self.item.ref)


@dataclass
class ClaimView:
    """A claim under a line: verdict at the period's end, whether it moved, and what is new."""

    id: str
    text: str
    date_text: str | None
    status: str
    previous_status: str
    last_changed: dt.date | None
    new_evidence: list[EvidenceView] = field(default_factory=list)
    strongest_recent: EvidenceView | None = None
    rests_on: list[EvidenceView] = field(default_factory=list)  # papers behind the verdict, not new
    review_count: int = 0
    line_ids: list[str] = field(default_factory=list)
    home_line: str = ""  # the line under which the claim is shown in full
    strength: dict[str, float] = field(default_factory=dict)  # per side at the period's end (rules.py)
    more_evidence: int = 0  # new evidence beyond the strongest EVIDENCE_PER_CLAIM, not shown
    dated: bool = False  # a dated claim (what the seeds' research prompts ask about): shown first
    # Confirmed RELAXES: each quote names a condition under which the claim holds (or fails) only.
    conditions: list[EvidenceView] = field(default_factory=list)
    moved_by: EvidenceView | None = None  # the strongest paper behind a changed verdict
    proposal: ProposalView | None = None  # an LLM's narrowed wording, waiting for a curator

    @property
    def changed(self) -> bool:
        return self.status != self.previous_status

    @property
    def newsworthy(self) -> bool:
        return self.changed or bool(self.new_evidence)

    @property
    def short(self) -> str:
        words = self.text.split()
        return " ".join(words[:18]) + (" …" if len(words) > 18 else "")


@dataclass
class AnchorView:
    arxiv_id: str
    title: str | None
    status: str


@dataclass
class LineView:
    """An inquiring line's section: claims in full, claims shown under another line, quiet claims."""

    id: str
    question: str
    detailed: list[ClaimView] = field(default_factory=list)
    elsewhere: list[ClaimView] = field(default_factory=list)
    quiet: list[ClaimView] = field(default_factory=list)
    ungrounded_anchors: list[AnchorView] = field(default_factory=list)
    questions: ResearchQuestions = field(default_factory=lambda: ResearchQuestions("no_evidence"))

    @property
    def claims(self) -> list[ClaimView]:
        return self.detailed + self.elsewhere + self.quiet

    @property
    def quiet_tested(self) -> list[ClaimView]:
        """Claims without news that do have a verdict: a one-line table row each."""
        return [c for c in self.quiet if c.status != "UNTESTED"]

    @property
    def untested(self) -> list[ClaimView]:
        """Claims without news and without a verdict yet: named, so the reader sees every claim."""
        return [c for c in self.quiet if c.status == "UNTESTED"]

    @property
    def quiet_untested(self) -> int:
        """How many `untested` (kept for templates that only count them)."""
        return len(self.untested)


@dataclass
class Summary:
    """The numbers at the top of a digest."""

    counts: dict[str, int]
    changed: list[ClaimView]
    papers_published: int
    papers_first_seen: int
    pairs_judged: int
    new_evidence: int
    for_review: int
    tokens: int
    cost_usd: float
    proposals: int = 0  # narrowed wordings waiting for a curator (`monitor review`)
    parked: int = 0  # pairs the judge failed too often to keep asking (monitor/store/failures.py)

    def as_stats(self) -> dict[str, Any]:
        return {
            "verdicts": dict(self.counts),
            "changed": len(self.changed),
            "papers_published": self.papers_published,
            "papers_first_seen": self.papers_first_seen,
            "pairs_judged": self.pairs_judged,
            "new_evidence": self.new_evidence,
            "for_review": self.for_review,
            "proposals": self.proposals,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 4),
        }


@dataclass
class Digest:
    """Everything a digest template needs."""

    title: str
    period: Period
    generated_at: dt.datetime
    summary: Summary
    lines: list[LineView]
    llm: bool
    recent_months: int = 6
    move_strength: float = 0.8
    overturn_strength: float = 0.9

    @property
    def no_announcements(self) -> bool:
        return self.summary.papers_published == 0 and self.summary.papers_first_seen == 0

    @property
    def no_relevant(self) -> bool:
        return self.summary.new_evidence == 0 and not self.summary.changed


@dataclass
class DigestResult:
    """What `write_digest` did."""

    period: Period
    digest_id: int
    paths: dict[str, Path]
    stats: dict[str, Any]
    content_sha256: str
    sent: bool | None = None  # None: not asked to send

    def as_dict(self) -> dict[str, Any]:
        return {
            "period": self.period.key,
            "digest_id": self.digest_id,
            "paths": {fmt: str(path) for fmt, path in self.paths.items()},
            "content_sha256": self.content_sha256,
            "sent": self.sent,
            **self.stats,
        }


def _day_range(period: Period) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(period.start, dt.time())
    return start, start + dt.timedelta(days=(period.end - period.start).days + 1)


def _claim_view(claim: Claim, now: Outcome, before: Outcome, period: Period, lines: list[str]) -> ClaimView:
    new = [EvidenceView(i, i in now.for_review) for i in now.counted if period.contains(i.appeared)]
    # "Related, stance unclear" pairs of the period are shown for review; they move no verdict.
    new += [EvidenceView(i, True) for i in now.unclear if period.contains(i.appeared)]
    # Strongest first: stated before "stance unclear", against before for, then confidence.
    new.sort(
        key=lambda v: (
            v.item.abstained,
            v.item.label != "OVERTURNS",
            v.item.label != "RELAXES",
            -v.item.confidence,
        )
    )
    more = max(0, len(new) - EVIDENCE_PER_CLAIM)
    review = sum(1 for v in new if v.for_review)
    new = new[:EVIDENCE_PER_CLAIM]
    recent = now.strongest_recent
    shown = {v.item for v in new} | ({recent} if recent else set())
    return ClaimView(
        id=claim.id,
        text=claim.text,
        date_text=claim.date_text,
        status=now.status,
        previous_status=before.status,
        last_changed=now.last_changed,
        new_evidence=new,
        strongest_recent=EvidenceView(recent, recent in now.for_review) if recent else None,
        rests_on=[EvidenceView(m, m in now.for_review) for m in now.movers[:3] if m not in shown],
        review_count=review,
        line_ids=lines,
        strength=now.strength if now.counted else {},
        dated=claim.kind == "dated",
        conditions=[
            EvidenceView(i) for i in now.counted if i.reviewed and i.label == "RELAXES" and i.evidence
        ],
        more_evidence=more,
        moved_by=EvidenceView(now.movers[0], now.movers[0] in now.for_review) if now.movers else None,
    )


def _urgency(view: ClaimView) -> tuple[int, int, str]:
    order = {status: i for i, status in enumerate(STATUSES)}
    return (0 if view.changed else 1, order.get(view.status, 9), view.id)


def _summary(s: Session, settings: Settings, period: Period, claims: list[ClaimView]) -> Summary:
    start, stop = _day_range(period)
    published = s.scalar(
        select(func.count()).select_from(Paper).where(Paper.published.between(period.start, period.end))
    )
    first_seen = s.scalar(
        select(func.count()).select_from(Paper).where(Paper.first_seen >= start, Paper.first_seen < stop)
    )
    # Judgements made in the period, or made later about papers published in it (a replay judges
    # past weeks today); tokens are those of their exchanges plus any other call made in the period.
    in_period = (Assessment.created_at >= start) & (Assessment.created_at < stop)
    about_period = Assessment.arxiv_id.in_(
        select(Paper.arxiv_id).where(Paper.published.between(period.start, period.end))
    ) & (Assessment.created_at >= start)
    judged = s.scalar(select(func.count()).select_from(Assessment).where(in_period | about_period))
    exchange_ids = select(Assessment.exchange_id).where(
        (in_period | about_period) & Assessment.exchange_id.is_not(None)
    )
    prompt, completion = s.execute(
        select(
            func.coalesce(func.sum(LLMExchange.prompt_tokens), 0),
            func.coalesce(func.sum(LLMExchange.completion_tokens), 0),
        ).where(
            ((LLMExchange.created_at >= start) & (LLMExchange.created_at < stop))
            | LLMExchange.id.in_(exchange_ids)
        )
    ).one()
    cost = (
        prompt * settings.judge.price_input_per_million + completion * settings.judge.price_output_per_million
    ) / 1e6
    counts = Counter(c.status for c in claims)
    return Summary(
        counts={status: counts.get(status, 0) for status in STATUSES},
        changed=sorted((c for c in claims if c.changed), key=_urgency),
        papers_published=int(published or 0),
        papers_first_seen=int(first_seen or 0),
        pairs_judged=int(judged or 0),
        new_evidence=sum(len(c.new_evidence) + c.more_evidence for c in claims),
        for_review=sum(c.review_count for c in claims),
        tokens=int(prompt + completion),
        cost_usd=float(cost),
        parked=count_parked(s),
    )


def gather_digest(
    store: Store, settings: Settings, period: Period, run: RunRecord | None = None, ask_llm: bool = True
) -> Digest:
    """Build the digest view-model for one period (and ask for research questions when configured)."""
    with store.session() as s:
        claims = active_claims(s)
        now = outcomes(s, settings, period.end, claims)
        before = outcomes(s, settings, period.start - dt.timedelta(days=1), claims)
        by_claim = lines_by_claim(s)
        views = {
            c.id: _claim_view(c, now[c.id], before[c.id], period, by_claim.get(c.id, [])) for c in claims
        }
        line_rows = {ln.id: ln for ln in s.scalars(select(Line).where(Line.retired_at.is_(None)))}
        anchors = s.scalars(
            select(Anchor)
            .where(Anchor.retired_at.is_(None), Anchor.status != "grounded")
            .order_by(Anchor.position)
        ).all()
        summary = _summary(s, settings, period, list(views.values()))
    if ask_llm:
        _propose_wordings(store, settings, views, run)
    for proposal in open_views(store, list(views)):
        views[proposal.claim_id].proposal = proposal
        summary.proposals += 1
    lines = _line_views(views, line_rows, anchors)
    if ask_llm:
        for line in lines:
            line.questions = research_questions(store, settings, line, line.detailed, run)
    return Digest(
        title=settings.report.title,
        period=period,
        generated_at=dt.datetime.now(dt.UTC).replace(microsecond=0, tzinfo=None),
        summary=summary,
        lines=lines,
        llm=settings.judge.resolved_provider() == "openai",
        recent_months=settings.verdicts.recent_months,
        move_strength=settings.verdicts.move_strength,
        overturn_strength=settings.verdicts.overturn_strength,
    )


def _propose_wordings(
    store: Store, settings: Settings, views: dict[str, ClaimView], run: RunRecord | None
) -> None:
    """With an LLM configured, a narrowed wording for each claim that confirmed RELAXES evidence bounds."""
    due = [v.id for v in views.values() if v.conditions]
    if not due or not llm_configured(settings):
        return
    done = propose_rewordings(store, settings, due, run.id if run else None)
    if run is not None:
        run.warnings.extend(f"no proposed wording for {failure}" for failure in done.failed)


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

    def weight(line_id: str) -> tuple[int, int, str]:
        mine = [v for v in views.values() if line_id in v.line_ids]
        news = sum(len(v.new_evidence) + v.more_evidence for v in mine)
        return (-sum(v.changed for v in mine), -news, line_id)

    ordered = sorted(sections, key=lambda lid: (lid == OTHER_LINE_ID, *weight(lid)))
    position = {lid: i for i, lid in enumerate(ordered)}
    for view in sorted(views.values(), key=lambda v: (not v.dated, *_urgency(v))):
        homes = sorted((lid for lid in view.line_ids if lid in sections), key=position.__getitem__)
        view.home_line = homes[0]
        for lid in homes:
            section = sections[lid]
            if not view.newsworthy:
                section.quiet.append(view)
            elif lid == view.home_line:
                section.detailed.append(view)
            else:
                section.elsewhere.append(view)
    for section in sections.values():
        _each_paper_once(section)
    return [sections[lid] for lid in ordered if sections[lid].claims]


def _each_paper_once(section: LineView) -> None:
    """A paper bearing on several claims of a line is shown in full once, under the first of them;
    later claims name it in one line, and the full entry lists the other claims it bears on."""
    first: dict[str, tuple[str, EvidenceView]] = {}
    for claim in section.detailed:
        for view in claim.new_evidence:
            ref = view.item.ref
            if ref not in first:
                first[ref] = (claim.id, view)
                continue
            home, full = first[ref]
            view.shown_under = home
            full.also.append((claim.id, view.item.label))


def content_hash(markdown: str, digest: Digest) -> str:
    """sha256 of the Markdown without its generation time, so it changes only when the content does."""
    return hashlib.sha256(markdown.replace(fmt_date(digest.generated_at), "").encode()).hexdigest()


# A store whose newest paper is older than this before the default period is a snapshot or a
# replayed history (e.g. `monitor fetch --source sample`), not a live feed that had a quiet week.
STALE_STORE_DAYS = 14


def _data_today(store: Store, spec: str, today: dt.date, run: RunRecord | None) -> dt.date:
    """The day the default period is counted back from: today, or just after the store's newest paper.

    A live deployment reports the last complete week even when it was empty (the digest says so).
    A store filled from a snapshot ends months ago; its default digest is its own last period.
    """
    default = resolve_period(spec, None, None, today)
    with store.session() as s:
        newest = s.scalar(select(func.max(Paper.published)))
    if newest is None or newest >= default.start - dt.timedelta(days=STALE_STORE_DAYS):
        return today
    shifted = newest + dt.timedelta(days=7) if spec == "week" else _first_of_next_month(newest)
    note = f"newest stored paper is from {newest}; reporting the period that holds it, not the last one"
    log.warning(note)
    if run is not None:
        run.warnings.append(note)
    return shifted


def _first_of_next_month(day: dt.date) -> dt.date:
    return (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)


def write_digest(
    store: Store,
    settings: Settings,
    period: str | Period | None = "week",
    since: dt.date | None = None,
    until: dt.date | None = None,
    formats: list[str] | None = None,
    run: RunRecord | None = None,
    force: bool = False,
    email: bool | None = None,
    today: dt.date | None = None,
) -> DigestResult:
    """Render the period's digest to settings.paths.reports and record it; optionally email it.

    Markdown is always written (it is the source of truth); `formats` may add "html". Re-rendering a
    period overwrites its files and updates its one `digests` row. With `email` (default
    settings.report.email) the digest is sent unless it was already sent for this period (`force` resends).
    """
    from monitor.report.delivery import send_digest  # delivery imports this module

    default_period = not isinstance(period, Period) and period in (None, "week", "month")
    if default_period and since is None and until is None:
        today = _data_today(store, period or "week", today or dt.datetime.now(dt.UTC).date(), run)
    chosen = period if isinstance(period, Period) else resolve_period(period, since, until, today)
    wanted = ["md", *[f for f in (formats or settings.report.formats) if f != "md"]]
    digest = gather_digest(store, settings, chosen, run)
    paths: dict[str, Path] = {}
    texts = {fmt: render(digest, fmt, settings) for fmt in wanted}
    for fmt, text in texts.items():
        path = Path(settings.paths.reports) / f"{chosen.stem}.{fmt}"
        write_atomic(path, text)
        paths[fmt] = path
    sha = content_hash(texts["md"], digest)
    stats = digest.summary.as_stats() | {"lines": len(digest.lines)}
    with store.session() as s:
        row = s.scalars(select(DigestRow).where(DigestRow.period_key == chosen.key)).first()
        if row is None:
            row = DigestRow(period_key=chosen.key, period_start=chosen.start, period_end=chosen.end)
            s.add(row)
        row.markdown_path = str(paths["md"])
        row.html_path = str(paths["html"]) if "html" in paths else row.html_path
        row.content_sha256 = sha
        row.stats = stats
        row.created_at = digest.generated_at
        row.run_id = run.id if run else None
        s.flush()
        digest_id = row.id
    result = DigestResult(chosen, digest_id, paths, stats, sha)
    write_feed(store, settings)
    if run is not None:
        run.add("report", {"period": chosen.key, **{k: v for k, v in stats.items() if k != "verdicts"}})
    if settings.report.email if email is None else email:
        result.sent = send_digest(store, settings, digest_id, force=force)
    return result
