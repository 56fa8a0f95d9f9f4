"""What each page of the claim board shows, computed from the store by the stages' own functions.

The board reads `current_verdicts` (what `monitor verdicts` prints), the claim page `claim_detail`
(what `monitor show` prints) and the review page `review_queue` (what `monitor review` walks), so a
browser and a terminal never disagree; the board's pair counts are store/pairs.py's, as the judge and
the digest count them. Nothing here builds SQL or HTML. Text from papers and claims
carries LaTeX and Markdown: the pages get it as plain text (`monitor.markup.plain_text`), as the
digests print it, and the templates escape it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from monitor.config import Settings
from monitor.errors import InputError
from monitor.judge.work import ran_cut
from monitor.judge_names import shown_judge
from monitor.markup import plain_text
from monitor.report.period import Period, custom
from monitor.review.queue import ReviewItem, queue_overview, review_queue
from monitor.review.rewording import ProposalView, open_views
from monitor.store.assessments import claims_judged_on
from monitor.store.claims import active_claims
from monitor.store.db import Store
from monitor.store.digests import recent_digests
from monitor.store.lines import active_lines, anchors_of_lines
from monitor.store.models import Anchor, ClaimRewording
from monitor.store.pairs import PairScope, PairTally, pair_tally
from monitor.store.papers import abstracts_of, get_paper
from monitor.store.reviews import Decision, decisions_in_force
from monitor.store.rewordings import wording_history
from monitor.store.verdicts import verdict_history
from monitor.verdicts.detail import ClaimDetail, EvidenceLine, claim_detail
from monitor.verdicts.rollup import (
    CurrentVerdict,
    claim_dates,
    current_verdicts,
    load_evidence,
    shown_outcomes,
)
from monitor.verdicts.rules import (
    COUNTS,
    MEANINGS,
    OUT,
    SOURCE,
    STANCES,
    WAITS,
    WITHHELD,
    EvidenceItem,
    Thresholds,
    capped_note,
    capped_sides,
    counting_between,
    evidence_cutoff,
    standing,
    strength_scale,
    strengths,
)
from monitor.web.plot import SIDES, Series

LABEL_ORDER = (*STANCES, "UNRELATED")
# How a claim page groups its evidence: by how each assessment stands toward the verdict (rules.standing),
# never by the label alone, so a withheld leaning is not shown as if it were a stance.
GROUPS = (
    (COUNTS, "Counts toward the verdict"),
    (WAITS, "Waits for a curator: a stated stance from a judge whose labels need confirming"),
    (WITHHELD, "Withheld: related, but its stance is not trusted (counts for nothing)"),
    (SOURCE, "The claim's own sources: shown, never counted"),
    (OUT, "Read and found unrelated, or not counted"),
)
# Evidence cards a claim page shows at once (each carries its abstract), and rows of papers read and
# found unrelated (a title each, folded): pages stay small (issue 31), whatever the claim's history.
CARDS_PER_PAGE = 25
UNRELATED_PER_PAGE = 150


@dataclass
class BoardRow:
    verdict: CurrentVerdict
    dated: bool
    strength: dict[str, float]
    new_this_period: int
    waiting: int
    capped: list[str] = field(default_factory=list)  # sides held at the cap: no confident finding yet

    def held(self, side: str) -> str:
        """What the board says of a side held at the cap ("" when it is not)."""
        return capped_note([side]) if side in self.capped else ""

    @property
    def sentence(self) -> str:
        summary = self.verdict.evidence_summary
        return summary.sentence() if summary is not None else self.verdict.summary

    @property
    def text(self) -> str:
        return plain_text(self.verdict.text)


@dataclass
class Filters:
    line: str = ""
    verdict: str = ""
    dated: str = ""  # "" | dated | undated
    q: str = ""

    def keeps(self, row: BoardRow) -> bool:
        v = row.verdict
        if self.line and self.line not in v.lines:
            return False
        if self.verdict and v.status != self.verdict:
            return False
        if self.dated and (self.dated == "dated") != row.dated:
            return False
        needle = self.q.strip().casefold()
        return not needle or needle in v.text.casefold() or needle in v.claim_id.casefold()


@dataclass
class Board:
    rows: list[BoardRow]
    total: int
    lines: list[tuple[str, str]]  # (id, question)
    period: Period | None
    waiting: int
    scale: str = ""  # the numbers in plain words (rules.strength_scale)
    meanings: dict[str, str] = field(default_factory=lambda: dict(MEANINGS))
    # Every candidate pair's state (store/pairs.py), as the judge and the digest count them.
    pairs: PairTally = field(default_factory=PairTally)


def _period(store: Store) -> Period | None:
    """'This period': the newest digest's, which is what the curator last read about."""
    with store.session() as s:
        rows = recent_digests(s, 1)
        return custom(rows[0].period_start, rows[0].period_end) if rows else None


def board(store: Store, settings: Settings, filters: Filters) -> Board:
    verdicts = current_verdicts(store)
    period = _period(store)
    waiting = queue_overview(store, settings)
    with store.session() as s:
        claims = {c.id: c for c in active_claims(s)}
        lines = sorted((line.id, line.question) for line in active_lines(s))
        found = shown_outcomes(s, verdicts)  # what each row's verdict rests on, as stored
        pairs = pair_tally(s, PairScope(top_k=ran_cut(s, settings)))
    rows = []
    th = Thresholds.from_settings(settings.verdicts)
    for v in verdicts:
        outcome = found.get(v.claim_id)
        new = len(counting_between(outcome, period.start, period.end)) if period and outcome else 0
        strength = outcome.strength if outcome is not None else {}
        capped = capped_sides(outcome.moving, th) if outcome is not None else []
        dated = claims[v.claim_id].date_start is not None
        rows.append(BoardRow(v, dated, strength, new, waiting[v.claim_id], capped))
    kept = [r for r in rows if filters.keeps(r)]
    scale = strength_scale(th)
    return Board(kept, len(rows), lines, period, sum(waiting.values()), scale, pairs=pairs)


@dataclass
class Quoted:
    """An abstract split around the judge's quote, so the template escapes each part and marks one."""

    before: str
    quote: str
    after: str


def highlight(abstract: str, quote: str) -> Quoted:
    """The abstract around the quote, both as plain text (the quote is marked where it is found)."""
    abstract, quote = plain_text(abstract), plain_text(quote.strip().strip('"“”'))
    at = abstract.find(quote) if quote else -1
    if at < 0 and quote:
        at = abstract.casefold().find(quote.casefold())
    if at < 0:
        return Quoted(abstract, "", "")
    return Quoted(abstract[:at], abstract[at : at + len(quote)], abstract[at + len(quote) :])


def label_shown(item: EvidenceItem, kind: str) -> str:
    """An assessment's label as the board names it: a withheld leaning or a stance waiting for a curator
    is not stated as a finding."""
    said = f"{item.label} {item.confidence:.2f}"
    if kind == WITHHELD and item.abstained:
        return f"leans {said}"  # under the "Withheld" heading, its reason beside it
    if kind == WAITS:
        return f"suggests {said}"
    return said


@dataclass
class Card:
    """One assessment on a claim page, its paper's text plain and its abstract split around the quote."""

    line: EvidenceLine
    title: str
    label: str
    abstract: Quoted | None  # None: a compact card (read and found unrelated, not counted)
    rationale: str

    @property
    def item(self) -> EvidenceItem:
        return self.line.item


@dataclass
class Group:
    kind: str
    heading: str
    total: int  # in all, across pages
    cards: list[Card] = field(default_factory=list)


@dataclass
class ClaimPage:
    detail: ClaimDetail
    text: str  # the claim, plain
    groups: list[Group]  # this page's cards, grouped by how they stand
    decisions: dict[str, Decision]  # arxiv id -> the curator's decision in force
    anchors: list[Anchor]
    series: Series
    wordings: list[ClaimRewording]
    page: int = 1
    pages: int = 1
    related: int = 0  # assessments that bear on the claim (every group but OUT)
    scale: str = ""
    lines: list[tuple[str, str]] = field(default_factory=list)  # (line id, question), plain

    @property
    def meaning(self) -> str:
        return MEANINGS.get(self.detail.status, "")


def _series(store: Store, settings: Settings, detail: ClaimDetail) -> Series:
    """Strength per side (`rules.strengths` over what moves the verdict) at each day a counted paper
    appeared; the verdict changes from the stored history, at the day the status moved (else the row's
    date). One pass per day over the claim's items, not a full `decide` each."""
    th = Thresholds.from_settings(settings.verdicts)
    series = Series(move=th.move, overturn=th.overturn)
    moving = [e.item for e in detail.evidence if e.standing == COUNTS and e.item.published is not None]
    for day in sorted({i.published for i in moving if i.published}):
        side = strengths([i for i in moving if i.published and i.published <= day], th)
        series.days.append(day)
        for name in SIDES:
            series.strength[name].append(round(side[name], 3))
    with store.session() as s:
        for row in verdict_history(s, detail.id):
            if row.changed:
                since = (row.details or {}).get("status_since")
                series.changes.append((dt.date.fromisoformat(since) if since else row.as_of, row.status))
    return series


def claim_page(store: Store, settings: Settings, claim_id: str, page: int = 1) -> ClaimPage:
    """The claim and its evidence grouped by standing, `CARDS_PER_PAGE` cards a page (page 1 first)."""
    detail = claim_detail(store, settings, claim_id)
    order = {kind: i for i, (kind, _) in enumerate(GROUPS)}
    ranked = sorted(detail.evidence, key=lambda e: order.get(e.standing, len(GROUPS)))  # stable: newest first
    related = [e for e in ranked if e.standing != OUT]
    unrelated = [e for e in ranked if e.standing == OUT]
    pages = max(1, -(-len(related) // CARDS_PER_PAGE), -(-len(unrelated) // UNRELATED_PER_PAGE))
    page = min(max(1, page), pages)
    shown = related[(page - 1) * CARDS_PER_PAGE : page * CARDS_PER_PAGE]
    shown += unrelated[(page - 1) * UNRELATED_PER_PAGE : page * UNRELATED_PER_PAGE]
    totals = {kind: sum(1 for e in ranked if e.standing == kind) for kind, _ in GROUPS}
    with store.session() as s:
        keys = [(e.item.arxiv_id, e.item.version) for e in shown if e.standing != OUT]
        texts = abstracts_of(s, keys)
        decisions = {paper: d for (_, paper), d in decisions_in_force(s, [detail.id]).items()}
        anchors = anchors_of_lines(s, [line_id for line_id, _ in detail.lines])
        wordings = wording_history(s, detail.id)
    groups: list[Group] = []
    for e in shown:
        if not groups or groups[-1].kind != e.standing:
            heading = dict(GROUPS).get(e.standing, e.standing)
            groups.append(Group(e.standing, heading, totals.get(e.standing, 0)))
        abstract = None
        if e.standing != OUT:
            abstract = highlight(texts.get((e.item.arxiv_id, e.item.version), ""), e.item.evidence)
        title, rationale = plain_text(e.item.title), plain_text(e.item.rationale)
        groups[-1].cards.append(Card(e, title, label_shown(e.item, e.standing), abstract, rationale))
    series = _series(store, settings, detail)
    return ClaimPage(
        detail,
        plain_text(detail.text),
        groups,
        decisions,
        anchors,
        series,
        wordings,
        page=page,
        pages=pages,
        related=len(related),
        scale=detail.scale,
        lines=[(line_id, plain_text(question)) for line_id, question in detail.lines],
    )


@dataclass
class PaperClaim:
    claim_id: str
    claim: str
    label: str
    confidence: float
    judge: str
    quote: str
    standing: str
    why: str

    @property
    def bears(self) -> bool:
        """It bears on the claim: a stance (stated, withheld or a curator's), not unrelated or dismissed."""
        return self.label != "UNRELATED" and self.why != "dismissed by a curator"


@dataclass
class PaperPage:
    arxiv_id: str
    version: int
    title: str
    abstract: str
    published: dt.date | None
    authors: list[str]
    claims: list[PaperClaim] = field(default_factory=list)
    scale: str = ""

    @property
    def bearing(self) -> list[PaperClaim]:
        return [c for c in self.claims if c.bears]

    @property
    def unrelated(self) -> list[PaperClaim]:
        """Claims the paper was read against and found unrelated (or a curator dismissed): folded."""
        return [c for c in self.claims if not c.bears]


def paper_page(store: Store, settings: Settings, arxiv_id: str) -> PaperPage:
    th = Thresholds.from_settings(settings.verdicts)
    with store.session() as s:
        paper = get_paper(s, arxiv_id)
        if paper is None:
            raise InputError("paper", None, f"no paper {arxiv_id!r} in the store")
        page = PaperPage(
            paper.arxiv_id,
            paper.version,
            plain_text(paper.title),
            plain_text(paper.abstract),
            paper.published,
            list(paper.authors),
            scale=strength_scale(th),
        )
        claims = active_claims(s, claims_judged_on(s, arxiv_id))
        dates = claim_dates(s, claims)
        evidence = load_evidence(s, settings, [c.id for c in claims], include_unrelated=True)
        for claim in claims:
            for item in evidence.get(claim.id, []):
                if item.arxiv_id != arxiv_id:
                    continue
                kind, why = standing(item, evidence_cutoff(dates[claim.id]), None, th)
                page.claims.append(
                    PaperClaim(
                        claim.id,
                        plain_text(claim.text),
                        item.label,
                        item.confidence,
                        shown_judge(item.judge),
                        plain_text(item.evidence),
                        kind,
                        why,
                    )
                )
    page.claims.sort(key=lambda c: (LABEL_ORDER.index(c.label), -c.confidence))
    return page


@dataclass
class ReviewPage:
    items: list[ReviewItem]
    total: int
    proposals: list[ProposalView]


def review_page(store: Store, settings: Settings, limit: int = 50) -> ReviewPage:
    """The same queue `monitor review` walks, in its order; the first `limit` items."""
    queue = review_queue(store, settings)
    return ReviewPage(queue[:limit], len(queue), open_views(store))


def digests(store: Store) -> list[dict[str, object]]:
    with store.session() as s:
        return [
            {
                "key": r.period_key,
                "start": r.period_start,
                "end": r.period_end,
                "created": r.created_at,
                "stats": dict(r.stats or {}),
                "markdown": r.markdown_path or "",
                "html": r.html_path or "",
            }
            for r in recent_digests(s, 500)
        ]
