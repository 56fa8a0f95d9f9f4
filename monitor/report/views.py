"""The digest's view-model: what a template shows of a period, built by gather.py."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from monitor.judge.embedded import Coverage
from monitor.report.period import Period
from monitor.report.research import ResearchQuestions, not_asked
from monitor.report.strongest import StrongestWork
from monitor.review.rewording import ProposalView
from monitor.sources.base import arxiv_url
from monitor.store.digests import PairTally
from monitor.verdicts.rules import EvidenceItem, EvidenceSummary

# New evidence shown per claim; the rest is one line pointing at `monitor show` (a week of real volume
# otherwise buries the reader: issue 12).
EVIDENCE_PER_CLAIM = 3
# Papers listed per claim for triage: those the embedded model ranks closest, stance not stated.
TRIAGE_PER_CLAIM = 3


@dataclass
class EvidenceView:
    """One paper's bearing on a claim, as the digest shows it."""

    item: EvidenceItem
    for_review: bool = False  # waits for a curator, or an OVERTURNS too weak to overturn the claim
    shown_under: str = ""  # shown in full under this earlier claim of the same line: one line here
    also: list[tuple[str, str]] = field(default_factory=list)  # (claim id, label) further down the line
    # The label of a judge whose labels wait for a curator (verdicts.confirm_judges): a suggestion the
    # digest must not print as a finding.
    unconfirmed: bool = False

    @property
    def url(self) -> str:
        return arxiv_url(self.item.ref)


@dataclass
class TriageView:
    """A paper the embedded model ranks close to a claim, shown without a stance: on this hardware its
    stance labels are not precise enough to print (they wait in `monitor review`). `sentence` is the
    abstract sentence that shares most with the claim, verbatim."""

    item: EvidenceItem
    sentence: str
    words: list[str] = field(default_factory=list)  # the claim's words the sentence shares, as written

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
    triage: list[TriageView] = field(default_factory=list)  # closest by the embedded model, no stance
    more_triage: int = 0  # triage papers beyond TRIAGE_PER_CLAIM, not shown
    # How its evidence stands at the period's end: the account `monitor verdicts` and `show` print too.
    evidence: EvidenceSummary = field(default_factory=EvidenceSummary)
    unread: int = 0  # its candidate pairs of the period that failed or were parked: not read

    @property
    def changed(self) -> bool:
        return self.status != self.previous_status

    def evidence_sentence(self) -> str:
        """Its evidence in one sentence (`EvidenceSummary.sentence`), and what of the period the judge
        could not read: a claim whose pairs failed never reads "no relevant paper found yet"."""
        if not self.unread:
            return self.evidence.sentence()
        failed = f"{_pairs(self.unread)} of this period failed (the judge's answers were unusable), not read"
        return f"{self.evidence.sentence()}; {failed}" if self.evidence.related else failed

    @property
    def newsworthy(self) -> bool:
        return self.changed or bool(self.new_evidence) or bool(self.triage)

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
    questions: ResearchQuestions = field(default_factory=not_asked)
    strongest: StrongestWork | None = None  # a month or longer: strongest contradicting work (strongest.py)
    folded: int = 0  # claims of a large library not listed here (budget.py): `monitor verdicts --line`

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
    # Pairs the embedded offline judge decided, and how much of what bears on a claim it finds: a
    # reader must not take its UNRELATED for "nothing bears on the claim".
    judged_embedded: int = 0
    embedded_coverage: Coverage | None = None
    triaged: int = 0  # papers the embedded model ranks close to a claim, listed without a stance
    # What became of the period's candidate pairs: a judge that failed must not read as "none bears".
    judging: PairTally = field(default_factory=PairTally)
    evidence: EvidenceSummary = field(default_factory=EvidenceSummary)  # summed over the claims
    # Candidate pairs of papers published by the period's end that no judge has answered yet (the
    # sample's earlier papers after the quickstart): the verdicts do not rest on them.
    unjudged_pairs: int = 0
    unjudged_papers: int = 0
    # The embedded judge's triage cut in force (candidates it reads per claim and week; None: all), and
    # the period's pairs ranked below it: not read, not failed, not waiting for `monitor judge`.
    triage_cut: int | None = None
    below_cut: int = 0

    @property
    def unjudged(self) -> int:
        """The period's pairs without a current judgement: failed, parked or not asked yet."""
        return self.judging.pairs - self.judging.judged

    @property
    def waiting(self) -> int:
        """The period's pairs not asked yet that `monitor judge` would ask (not those below the cut)."""
        return max(0, self.judging.pending - self.below_cut)

    def evidence_sentence(self) -> str:
        """The totals over claims (`EvidenceSummary.totals_sentence`), and the period's pairs that
        failed or were parked: "no claim has a relevant paper" is never said of pairs nobody read."""
        unread = self.judging.failed + self.judging.parked
        if not unread:
            return self.evidence.totals_sentence()
        failed = f"{_pairs(unread)} of this period failed, not read"
        if not self.evidence.related:
            return f"No claim has a relevant paper among the pairs read; {failed}"
        return f"{self.evidence.totals_sentence()}; {failed}"

    @property
    def final(self) -> bool:
        """False when most of the period's pairs failed or were parked: the digest then says what
        failed, is not mailed, and the run that wrote it exits 6; a later run rewrites it."""
        return 2 * (self.judging.failed + self.judging.parked) <= self.judging.pairs

    def as_stats(self) -> dict[str, Any]:
        return {
            "verdicts": dict(self.counts),
            "changed": len(self.changed),
            "papers_published": self.papers_published,
            "papers_first_seen": self.papers_first_seen,
            "pairs_judged": self.pairs_judged,
            "new_evidence": self.new_evidence,
            "for_review": self.for_review,
            "judged_embedded": self.judged_embedded,
            "triaged": self.triaged,
            "unjudged_pairs": self.unjudged_pairs,
            "below_cut": self.below_cut,
            "proposals": self.proposals,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 4),
            "judging": self.judging._asdict(),
            "final": self.final,
            "evidence": self.evidence.as_dict() | {"sentence": self.evidence_sentence()},
        }


@dataclass
class DigestView:
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
    research_note: str = ""  # why no line has research questions, said once (research.digest_note)
    # A large library's digest (budget.py): lines with no claim shown, claims not shown anywhere, and
    # how many changed verdicts the summary lists (None: all).
    folded_lines: int = 0
    folded_claims: int = 0
    changes_listed: int | None = None

    @property
    def no_claims(self) -> bool:
        """Nothing to test: a digest must not read "none bears on a claim" when there is no claim."""
        return not any(self.summary.counts.values())

    @property
    def no_announcements(self) -> bool:
        return self.summary.papers_published == 0 and self.summary.papers_first_seen == 0

    @property
    def no_relevant(self) -> bool:
        return self.summary.new_evidence == 0 and not self.summary.changed and not self.summary.triaged


def _pairs(n: int) -> str:
    return f"{n} candidate pair{'s' if n != 1 else ''}"
