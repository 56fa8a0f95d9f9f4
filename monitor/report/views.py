"""The digest's view-model: what a template shows of a period, built by gather.py."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from monitor.judge.embedded import Coverage
from monitor.report.labels import label_phrase
from monitor.report.period import Period
from monitor.report.research import ResearchQuestions, not_asked
from monitor.report.strongest import StrongestWork
from monitor.review.rewording import ProposalView
from monitor.sources.base import arxiv_url
from monitor.store.pairs import PairTally, Reading
from monitor.verdicts.rules import (
    MEANINGS,
    UNTESTED,
    EvidenceItem,
    EvidenceSummary,
    capped_note,
    side_figures,
    uncounted_note,
)

# New evidence shown per claim; the rest is one line pointing at `monitor show` (a week of real volume
# otherwise buries the reader: issue 12).
EVIDENCE_PER_CLAIM = 3
# Papers listed per claim for triage: those the embedded model ranks closest, stance not stated.
TRIAGE_PER_CLAIM = 3
# A triage entry is listed only from this score of the embedded model up (its calibrated confidence in
# the stance it leans to, as stored on the assessment). Measured by bench/triage_floor.py on teacher
# pairs it was not trained on and domain_dev (docs/digest_trust.md): of the pairs it flags at or
# above 0.55, 18 of 25 bear on their claim; below, 22 of 48. Remeasure after retraining the model.
TRIAGE_FLOOR = 0.55
TRIAGE_FLOOR_MEASURED = (18, 25)  # (bear on their claim, entries at or above the floor)
# A claim's text where a digest names it in one line: cut at a word, the full text on the board.
BRIEF_CHARS = 100


def brief(text: str, limit: int = BRIEF_CHARS) -> str:
    """`text` on one line, cut at the last whole word within `limit` characters ("…" marks the cut)."""
    words = text.split()
    out = ""
    for word in words:
        if len(out) + len(word) + 1 > limit and out:
            return out.rstrip(",;:—–-") + " …"
        out = f"{out} {word}" if out else word
    return out


@dataclass
class EvidenceView:
    """One paper's bearing on a claim, as the digest shows it."""

    item: EvidenceItem
    for_review: bool = False  # waits for a curator, or an OVERTURNS too weak to overturn the claim
    # The label of a judge whose labels wait for a curator (verdicts.confirm_judges): a suggestion the
    # digest must not print as a finding.
    unconfirmed: bool = False

    @property
    def url(self) -> str:
        return arxiv_url(self.item.ref)

    @property
    def label(self) -> str:
        return label_phrase(self.item, self.unconfirmed)


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
    capped: list[str] = field(default_factory=list)  # sides held at the cap: no confident finding yet
    more_evidence: int = 0  # new evidence beyond the strongest EVIDENCE_PER_CLAIM, not shown
    dated: bool = False  # a dated claim (what the seeds' research prompts ask about): shown first
    # Confirmed RELAXES: each quote names a condition under which the claim holds (or fails) only.
    conditions: list[EvidenceView] = field(default_factory=list)
    moved_by: EvidenceView | None = None  # the strongest paper behind a changed verdict
    proposal: ProposalView | None = None  # an LLM's narrowed wording, waiting for a curator
    triage: list[TriageView] = field(default_factory=list)  # closest by the embedded model, no stance
    # The period's LLM labels withheld as too unsure: listed for review with their leaning, never as a
    # finding (no quote, no rationale printed).
    unsure: list[EvidenceView] = field(default_factory=list)
    more_triage: int = 0  # triage papers beyond TRIAGE_PER_CLAIM, not shown
    # How its evidence stands at the period's end: the account `monitor verdicts` and `show` print too.
    evidence: EvidenceSummary = field(default_factory=EvidenceSummary)
    unread: int = 0  # its candidate pairs of the period that failed or were parked: not read
    below_floor: int = 0  # the period's triage papers the embedded model ranks below TRIAGE_FLOOR
    reading: Reading = field(default_factory=Reading)  # its candidates to the period's end, who read them

    @property
    def changed(self) -> bool:
        return self.status != self.previous_status

    def capped_note(self) -> str:
        """Which sides are held at the cap, said beside the numbers ("" when none): without it, "0.60, a
        verdict needs 0.80" reads as if one more paper would settle the claim."""
        return capped_note(self.capped)

    def strength_figures(self, sep: str) -> str:
        """Its sides' strengths, joined by `sep` (`side_figures`)."""
        return side_figures(self.strength, sep)

    @property
    def strength_notes(self) -> str:
        """What the strengths leave out and which sides are held at the cap, each after "; " ("" for
        none): said beside the numbers, in every format."""
        notes = (uncounted_note(self.evidence), self.capped_note())
        return "".join(f"; {note}" for note in notes if note)

    def evidence_sentence(self) -> str:
        """Its evidence in one sentence (`EvidenceSummary.sentence`), and what of the period the judge
        could not read: a claim whose pairs failed never reads "no relevant paper found yet"."""
        if not self.unread:
            return self.evidence.sentence()
        failed = f"{_pairs(self.unread)} of this period failed (the judge's answers were unusable), not read"
        return f"{self.evidence.sentence()}; {failed}" if self.evidence.related else failed

    @property
    def newsworthy(self) -> bool:
        return self.changed or bool(self.new_evidence) or bool(self.triage) or bool(self.unsure)

    @property
    def short(self) -> str:
        """The claim in one line, cut at a word (the full text: `monitor show`, the board)."""
        return brief(self.text)

    @property
    def meaning(self) -> str:
        return MEANINGS.get(self.status, "")

    @property
    def read_note(self) -> str:
        """What was read for the claim to date, in words; "no relevant paper found" only where a judge
        that reads stance read every candidate and none bore on the claim."""
        r = self.reading
        if not r.candidates:
            return "the relevance stage has picked no candidate paper for it yet"
        were = "was" if r.candidates == 1 else "were"
        if r.all_read_by_llm:
            if not self.evidence.related:
                return f"no relevant paper found: an LLM judge read its {_papers(r.candidates)}"
            return f"an LLM judge read its {_papers(r.candidates)}"
        if r.read_embedded == r.candidates:
            return f"its {_papers(r.candidates)} {were} read only by the embedded model (triage, no stance)"
        if r.not_read == r.candidates:
            return f"its {_papers(r.candidates)} {were} not read yet"
        parts = []
        if r.read_llm:
            parts.append(f"{r.read_llm:,} read by an LLM judge")
        if r.read_embedded:
            parts.append(f"{r.read_embedded:,} only by the embedded model (triage, no stance)")
        if r.not_read:
            parts.append(f"{r.not_read:,} not read yet")
        return f"of its {_papers(r.candidates)}, " + ", ".join(parts)


def _papers(n: int) -> str:
    return "1 candidate paper" if n == 1 else f"{n:,} candidate papers"


@dataclass
class PaperEntry:
    """A paper of the period under a line, shown once, with each claim of the line it bears on (the
    label and the quote the judge gave for that claim) and each the embedded model ranks it close to
    (no stance: the abstract sentence closest to that claim)."""

    number: int
    item: EvidenceItem  # the paper (its first listed assessment: title, link, date, version)
    bearings: list[tuple[ClaimView, EvidenceView]] = field(default_factory=list)
    unsure: list[tuple[ClaimView, EvidenceView]] = field(default_factory=list)  # leanings, for review
    close: list[tuple[ClaimView, TriageView]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return arxiv_url(self.item.ref)


# Why a line's anchor paper did not check out (`monitor anchors verify`, sources/anchors.py).
ANCHOR_WHY = {
    "not_found": "arXiv has no paper under this id",
    "title_differs": "the paper under this id has another title than the one cited",
    "date_differs": "the paper under this id is dated outside the date cited",
    "not_in_snapshot": "checked offline against a snapshot that lacks it",
}


@dataclass
class AnchorView:
    arxiv_id: str
    title: str | None
    status: str

    @property
    def why(self) -> str:
        return ANCHOR_WHY.get(self.status, self.status.replace("_", " "))


@dataclass
class LineView:
    """An inquiring line's section: claims in full, claims shown under another line, quiet claims."""

    id: str
    question: str
    detailed: list[ClaimView] = field(default_factory=list)
    elsewhere: list[ClaimView] = field(default_factory=list)
    quiet: list[ClaimView] = field(default_factory=list)
    # Claims of the line without news that are listed under another line (their first): named once.
    quiet_elsewhere: list[ClaimView] = field(default_factory=list)
    ungrounded_anchors: list[AnchorView] = field(default_factory=list)
    questions: ResearchQuestions = field(default_factory=not_asked)
    strongest: StrongestWork | None = None  # a month or longer: strongest contradicting work (strongest.py)
    folded: int = 0  # claims of a large library not listed here (budget.py): `monitor verdicts --line`
    period_reading: Reading = field(default_factory=Reading)  # the period's pairs of its claims, read how

    @property
    def claims(self) -> list[ClaimView]:
        return self.detailed + self.elsewhere + self.quiet + self.quiet_elsewhere

    @property
    def quiet_tested(self) -> list[ClaimView]:
        """Claims without news that do have a verdict: a one-line table row each."""
        return [c for c in self.quiet if c.status != UNTESTED]

    @property
    def untested(self) -> list[ClaimView]:
        """Claims without news and without a verdict yet: named, so the reader sees every claim."""
        return [c for c in self.quiet if c.status == UNTESTED]

    @property
    def papers(self) -> list[PaperEntry]:
        """The period's papers on the claims shown here in full, each once, numbered: first those with a
        judged bearing (strongest claim first), then those only the embedded model ranks close. Computed
        from `detailed`, so a large library's trim (budget.py) holds."""
        entries: dict[str, PaperEntry] = {}

        def entry(item: EvidenceItem) -> PaperEntry:
            if item.ref not in entries:
                entries[item.ref] = PaperEntry(0, item)
            return entries[item.ref]

        for claim in self.detailed:
            for view in claim.new_evidence:
                entry(view.item).bearings.append((claim, view))
        for claim in self.detailed:
            for view in claim.unsure:
                entry(view.item).unsure.append((claim, view))
        for claim in self.detailed:
            for close in claim.triage:
                entry(close.item).close.append((claim, close))
        # Stable, first seen first: papers with a finding, then those with only unsure leanings, then picks.
        ordered = sorted(entries.values(), key=lambda e: (not e.bearings, not e.unsure))
        for number, paper in enumerate(ordered, start=1):
            paper.number = number
        return ordered

    @property
    def triaged(self) -> bool:
        """Some paper here is listed only as the embedded model's pick, with no stance."""
        return any(p.close for p in self.papers)

    @property
    def triaged_elsewhere(self) -> bool:
        """A claim of this line shown in full under another line lists the embedded model's picks there."""
        return any(c.triage or c.more_triage for c in self.elsewhere)

    @property
    def judged(self) -> bool:
        return any(p.bearings or p.unsure for p in self.papers)

    def numbers(self, claim: ClaimView, triage: bool = False, unsure: bool = False) -> list[int]:
        """The numbers under which `claim`'s new papers (or its triage papers, or its unsure leanings) are
        listed in this line."""
        if triage:
            return [p.number for p in self.papers if any(c is claim for c, _ in p.close)]
        if unsure:
            return [p.number for p in self.papers if any(c is claim for c, _ in p.unsure)]
        return [p.number for p in self.papers if any(c is claim for c, _ in p.bearings)]

    def number_of(self, ref: str, claim_id: str) -> int | None:
        """The number of the listed paper `ref` where it is shown bearing on `claim_id`, if it is."""
        for paper in self.papers:
            if paper.item.ref == ref and any(c.id == claim_id for c, _ in paper.bearings):
                return paper.number
        return None

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
        """False when most of the period's pairs failed, were parked or still wait for an LLM screen that
        did not answer (of all it was to read): the digest then says what failed, is not mailed, and the
        run that wrote it exits 6; a later run rewrites it."""
        j = self.judging
        return 2 * (j.failed + j.parked + j.awaiting_screen) <= j.pairs + j.screened_out

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
    min_confidence: float = 0.5  # a label below it is too unsure to count: listed for review only
    against_floor: float = 0.5  # what RELAXES and OVERTURNS need: Thresholds.floor (min_confidence_against)
    research_note: str = ""  # why no line has research questions, said once (research.digest_note)
    scale: str = ""  # the numbers in plain words (rules.strength_scale), printed once in the summary
    triage_floor: float = TRIAGE_FLOOR
    triage_measured: tuple[int, int] = TRIAGE_FLOOR_MEASURED
    # A large library's digest (budget.py): lines with no claim shown, claims not shown anywhere, and
    # how many changed verdicts the summary lists (None: all).
    folded_lines: int = 0
    folded_claims: int = 0
    changes_listed: int | None = None

    @property
    def unsure_bar(self) -> str:
        """What a stated label needs, said on each "stance unsure" line without naming the leaning (graders
        read a shown leaning as a claim: docs/digest_trust.md)."""
        if self.against_floor == self.min_confidence:
            return f"below {self.min_confidence:.2f}"
        against = f"{self.against_floor:.2f} to relax or overturn a claim"
        return f"a label needs {self.min_confidence:.2f}, or {against}"

    @property
    def unsure_line(self) -> str:
        """What every format prints for a paper whose label is under its bar. "Possibly relevant" stays:
        worded "nor that the paper bears on the claim at all", graders signed 42 of 70 such lines against
        65 of 70, reading it as understating papers that do bear (docs/digest_trust.md)."""
        return (
            "possibly relevant, stance unsure: the judge read it but is not confident enough of any label to "
            f"state one ({self.unsure_bar}); not counted"
        )

    @property
    def no_claims(self) -> bool:
        """Nothing to test: a digest must not read "none bears on a claim" when there is no claim."""
        return not any(self.summary.counts.values())

    @property
    def no_announcements(self) -> bool:
        return self.summary.papers_published == 0 and self.summary.papers_first_seen == 0

    @property
    def meanings(self) -> dict[str, str]:
        return dict(MEANINGS)

    @property
    def no_relevant(self) -> bool:
        return self.summary.new_evidence == 0 and not self.summary.changed and not self.summary.triaged


def _pairs(n: int) -> str:
    return f"{n:,} candidate pair{'s' if n != 1 else ''}"
