"""The verdict rules: pure functions from a claim's evidence to DURABLE / PERISHABLE / OVERTURNED / UNTESTED.

Nothing here touches the store; `rollup.py` loads the evidence and keeps the history. The rules, in
order (docs/verdicts.md explains them for users):

1. Evidence counts only if its paper is newer than the claim (`evidence_cutoff`), was published on or
   before `as_of`, is not UNRELATED, has confidence >= min_confidence, and states a stance: a pair the
   embedded judge marked "related, stance unclear" (abstained) is for review and counts for nothing.
2. OVERTURNED: a *grounded* OVERTURNS at or above the judge's threshold (the local judge has its own,
   stricter, calibrated threshold).
3. PERISHABLE: any RELAXES, or an OVERTURNS that did not clear rule 2 (ungrounded or not confident enough).
4. DURABLE: only SUPPORTS.
5. UNTESTED: nothing counts.
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass, field, replace

DURABLE = "DURABLE"
PERISHABLE = "PERISHABLE"
OVERTURNED = "OVERTURNED"
UNTESTED = "UNTESTED"
STATUSES = (OVERTURNED, PERISHABLE, DURABLE, UNTESTED)  # most to least urgent: the digest's order

LOCAL_JUDGE = "local"
# How strongly a label bears against a claim; used to rank "the strongest" piece of work.
_AGAINST = {"OVERTURNS": 2, "RELAXES": 1}


@dataclass(frozen=True)
class EvidenceItem:
    """One current assessment of a paper version against a claim, with what the rules and digest need."""

    assessment_id: int
    arxiv_id: str
    version: int
    title: str
    published: dt.date | None  # the paper's v1 date: decides "newer than the claim" and "as of"
    appeared: dt.date | None  # when this version became public (v1: published; vN: its update)
    label: str
    confidence: float
    grounded: bool
    judge: str
    model: str = ""
    evidence: str = ""
    rationale: str = ""
    abstained: bool = False  # "related, stance unclear": for review, never counted

    @property
    def local(self) -> bool:
        return self.judge == LOCAL_JUDGE

    @property
    def ref(self) -> str:
        return f"{self.arxiv_id}v{self.version}"


@dataclass(frozen=True)
class Thresholds:
    """The configurable numbers the rules use (settings.verdicts)."""

    overturn: float = 0.7
    local_overturn: float = 0.9
    min_confidence: float = 0.3
    recent_months: int = 6

    @classmethod
    def from_settings(cls, verdicts: object) -> Thresholds:
        return cls(
            overturn=verdicts.overturn_threshold,  # type: ignore[attr-defined]
            local_overturn=verdicts.local_overturn_threshold,  # type: ignore[attr-defined]
            min_confidence=verdicts.min_confidence,  # type: ignore[attr-defined]
            recent_months=verdicts.recent_months,  # type: ignore[attr-defined]
        )

    def overturn_for(self, judge: str) -> float:
        return self.local_overturn if judge == LOCAL_JUDGE else self.overturn


@dataclass(frozen=True)
class ClaimDate:
    """A claim's date as the claims stage parsed it: a period [start, end] with a precision."""

    start: dt.date | None = None
    end: dt.date | None = None
    precision: str | None = None  # day | month | year
    approximate: bool = False


@dataclass
class Outcome:
    """A claim's verdict at one date, with the papers behind it."""

    status: str
    movers: list[EvidenceItem] = field(default_factory=list)  # the papers that put it in this status
    for_review: list[EvidenceItem] = field(default_factory=list)  # local OVERTURNS below its threshold
    unclear: list[EvidenceItem] = field(default_factory=list)  # "related, stance unclear", in the window
    strongest_recent: EvidenceItem | None = None  # strongest RELAXES/OVERTURNS of the recent window
    counted: list[EvidenceItem] = field(default_factory=list)  # every item that passed rule 1
    last_changed: dt.date | None = None  # when the status last moved (None: never left UNTESTED)

    @property
    def mover_ids(self) -> list[int]:
        return sorted(item.assessment_id for item in self.movers)


def evidence_cutoff(date: ClaimDate) -> dt.date | None:
    """The last day a paper can be published and still be *older* than the claim; None: undated.

    A short, exact date (a day or a month) means the claim was made with that period's work in hand,
    so only papers after the period count. A coarse or fuzzy date ("2025", "~2025", "2024-09..2025-05")
    could mean any time in it; excluding the whole period would hide months of relevant work, so papers
    after its first day count.
    """
    if date.start is None:
        return None
    short = date.precision in ("day", "month") and not date.approximate
    if short and date.end is not None and (date.end - date.start).days <= 31:
        return date.end
    return date.start


def counts(item: EvidenceItem, cutoff: dt.date | None, as_of: dt.date | None, th: Thresholds) -> bool:
    """Rule 1: whether one assessment bears on the claim's verdict at all."""
    if item.label not in ("SUPPORTS", "RELAXES", "OVERTURNS") or item.abstained:
        return False
    if item.confidence < th.min_confidence:
        return False
    if cutoff is not None and (item.published is None or item.published <= cutoff):
        return False
    return not (as_of is not None and item.published is not None and item.published > as_of)


def overturns(item: EvidenceItem, th: Thresholds) -> bool:
    """Rule 2: a grounded OVERTURNS confident enough for its judge."""
    return item.label == "OVERTURNS" and item.grounded and item.confidence >= th.overturn_for(item.judge)


def strength(item: EvidenceItem) -> tuple[int, int, float, str]:
    """Sort key, strongest first when reversed: against-ness, grounding, confidence, then id."""
    return (_AGAINST.get(item.label, 0), int(item.grounded), item.confidence, item.arxiv_id)


def classify(items: list[EvidenceItem], th: Thresholds) -> tuple[str, list[EvidenceItem]]:
    """Rules 2-5 on items that already passed rule 1: the status and the papers that set it."""
    strong = [i for i in items if overturns(i, th)]
    if strong:
        return OVERTURNED, _strongest_first(strong)
    against = [i for i in items if i.label in ("RELAXES", "OVERTURNS")]
    if against:
        return PERISHABLE, _strongest_first(against)
    supports = [i for i in items if i.label == "SUPPORTS"]
    if supports:
        return DURABLE, _strongest_first(supports)
    return UNTESTED, []


def decide(
    items: list[EvidenceItem], th: Thresholds, date: ClaimDate, as_of: dt.date | None = None
) -> Outcome:
    """A claim's full outcome at `as_of` (None: everything known) from its current assessments."""
    cutoff = evidence_cutoff(date)
    counted = [i for i in items if counts(i, cutoff, as_of, th)]
    status, movers = classify(counted, th)
    for_review = [i for i in counted if i.label == "OVERTURNS" and i.local and not overturns(i, th)]
    unclear = [i for i in items if i.abstained and counts(replace(i, abstained=False), cutoff, as_of, th)]
    return Outcome(
        status=status,
        movers=movers,
        for_review=_strongest_first(for_review),
        unclear=_strongest_first(unclear),
        strongest_recent=_strongest_recent(counted, th, as_of),
        counted=counted,
        last_changed=_last_changed(counted, th),
    )


def months_before(day: dt.date, months: int) -> dt.date:
    """The same day `months` calendar months earlier, clamped to the month's length."""
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    month += 1
    return dt.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _strongest_first(items: list[EvidenceItem]) -> list[EvidenceItem]:
    return sorted(items, key=strength, reverse=True)


def _strongest_recent(
    counted: list[EvidenceItem], th: Thresholds, as_of: dt.date | None
) -> EvidenceItem | None:
    end = as_of or max((i.published for i in counted if i.published), default=None)
    if end is None:
        return None
    start = months_before(end, th.recent_months)
    recent = [
        i for i in counted if i.label in _AGAINST and i.published is not None and start < i.published <= end
    ]
    return _strongest_first(recent)[0] if recent else None


def _last_changed(counted: list[EvidenceItem], th: Thresholds) -> dt.date | None:
    """Replay the evidence in publication order; the last day the status moved."""
    days = sorted({i.published for i in counted if i.published is not None})
    status, changed = UNTESTED, None
    for day in days:
        now, _ = classify([i for i in counted if i.published is not None and i.published <= day], th)
        if now != status:
            status, changed = now, day
    return changed
