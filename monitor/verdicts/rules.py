"""The verdict rules: pure functions from a claim's evidence to a status.

Nothing here touches the store; `rollup.py` loads the evidence and keeps the history. The rules, in
order (docs/verdicts.md explains them for users, with worked examples):

1. Evidence counts only if its paper is newer than the claim (`evidence_cutoff`), was published on or
   before `as_of`, is not UNRELATED, is *grounded* (its quote is a real span of the abstract), has
   confidence >= min_confidence, and states a stance (an abstained "related, stance unclear" pair is for
   review and counts for nothing). A curator's decision (`monitor review`) overrides the judge's: a
   dismissed pair counts for nothing, a confirmed or relabelled one counts with its human label at
   full weight. Labels from a judge in `confirm_judges` (default: the embedded one) wait for a
   curator's confirmation before they move a verdict.
2. Each counted label has a *weight*: its confidence, capped at the precision measured for its judge
   and label (`monitor eval`), since a judge's self-reported confidence can run ahead of how often it
   is right. A side's *strength* is the chance that at least one of its distinct papers is right,
   1 - prod(1 - w) over papers (a paper's best weight, once), so a verdict moves on several papers or
   one strong one, never on one weak label.
3. CONTESTED: OVERTURNS and SUPPORTS are both at least `move` strong.
4. OVERTURNED: OVERTURNS at least `overturn` strong.
5. PERISHABLE: RELAXES and OVERTURNS together at least `move` strong.
6. DURABLE: SUPPORTS at least `move` strong.
7. UNTESTED: nothing strong enough (the weak evidence is kept and shown, for review).
"""

from __future__ import annotations

import calendar
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

DURABLE = "DURABLE"
PERISHABLE = "PERISHABLE"
CONTESTED = "CONTESTED"
OVERTURNED = "OVERTURNED"
UNTESTED = "UNTESTED"
# Most to least urgent: the digest's order.
STATUSES = (OVERTURNED, CONTESTED, PERISHABLE, DURABLE, UNTESTED)
STANCES = ("SUPPORTS", "RELAXES", "OVERTURNS")
CONFIRMED, RELABELLED, DISMISSED = "confirmed", "relabelled", "dismissed"

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
    review: str = ""  # a curator's decision in force: "" | confirmed | relabelled | dismissed
    model_label: str = ""  # the judge's own label, where a curator relabelled it

    @property
    def reviewed(self) -> bool:
        """A curator confirmed or relabelled it: the label is theirs."""
        return self.review in (CONFIRMED, RELABELLED)

    @property
    def ref(self) -> str:
        return f"{self.arxiv_id}v{self.version}"


# Measured precision of each judge's stated labels (`monitor eval`, docs/verdicts.md): the embedded
# judge's on the teacher set's calibration split (its confidences are calibrated to it); the `openai`
# judge's with a capable LLM (the teacher) answering, domain_dev and SciFact dev pooled: SUPPORTS
# 136/158, RELAXES 8/10, OVERTURNS 68/87. Your own LLM may differ: measure it with `monitor eval`.
DEFAULT_PRECISION: dict[str, dict[str, float]] = {
    "local": {"SUPPORTS": 0.76, "RELAXES": 0.7, "OVERTURNS": 0.71},
    "openai": {"SUPPORTS": 0.86, "RELAXES": 0.8, "OVERTURNS": 0.78},
}
UNKNOWN_JUDGE_PRECISION = 0.5  # a judge nobody measured: its labels need corroboration


@dataclass(frozen=True)
class Thresholds:
    """The configurable numbers the rules use (settings.verdicts)."""

    move: float = 0.8  # strength a side needs to make a claim DURABLE, PERISHABLE or CONTESTED
    overturn: float = 0.9  # OVERTURNS strength for OVERTURNED
    min_confidence: float = 0.3
    recent_months: int = 6
    precision: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: DEFAULT_PRECISION)
    # Judges whose labels move a verdict only once a curator confirmed them. Read against the
    # abstracts, about half of the embedded judge's stated SUPPORTS in a real week were not support.
    confirm_judges: frozenset[str] = frozenset({LOCAL_JUDGE})

    @classmethod
    def from_settings(cls, verdicts: object) -> Thresholds:
        return cls(
            move=verdicts.move_strength,  # type: ignore[attr-defined]
            overturn=verdicts.overturn_strength,  # type: ignore[attr-defined]
            min_confidence=verdicts.min_confidence,  # type: ignore[attr-defined]
            recent_months=verdicts.recent_months,  # type: ignore[attr-defined]
            precision=_merged(DEFAULT_PRECISION, verdicts.precision),  # type: ignore[attr-defined]
            confirm_judges=frozenset(verdicts.confirm_judges),  # type: ignore[attr-defined]
        )

    def weight(self, item: EvidenceItem) -> float:
        """Rule 2: an item's confidence, capped at its judge's measured precision for its label.

        A curator's label weighs 1: they read the paper.
        """
        if item.reviewed:
            return 1.0
        cap = self.precision.get(item.judge, {}).get(item.label, UNKNOWN_JUDGE_PRECISION)
        return min(item.confidence, cap)

    def held(self, item: EvidenceItem) -> bool:
        """A stance that waits for a curator's confirmation before it moves a verdict."""
        return item.label in STANCES and item.judge in self.confirm_judges and not item.reviewed


def _merged(
    defaults: Mapping[str, Mapping[str, float]], mine: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float]]:
    """Per judge and label: the configured precision where given, else the shipped default."""
    out = {judge: dict(labels) for judge, labels in defaults.items()}
    for judge, labels in mine.items():
        out.setdefault(judge, {}).update(labels)
    return out


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
    for_review: list[EvidenceItem] = field(default_factory=list)  # OVERTURNS too weak to overturn
    held: list[EvidenceItem] = field(default_factory=list)  # a confirm_judges label nobody confirmed yet
    unclear: list[EvidenceItem] = field(default_factory=list)  # "related, stance unclear", in the window
    strongest_recent: EvidenceItem | None = None  # strongest RELAXES/OVERTURNS of the recent window
    counted: list[EvidenceItem] = field(default_factory=list)  # every item that passed rule 1
    strength: dict[str, float] = field(default_factory=dict)  # per side (SUPPORTS, AGAINST, OVERTURNS)
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
    if item.label not in STANCES or item.review == DISMISSED:
        return False
    if not item.reviewed and (item.abstained or not item.grounded or item.confidence < th.min_confidence):
        return False
    if cutoff is not None and (item.published is None or item.published <= cutoff):
        return False
    return not (as_of is not None and item.published is not None and item.published > as_of)


def side_strength(items: list[EvidenceItem], labels: tuple[str, ...], th: Thresholds) -> float:
    """Rule 2: the chance that at least one distinct paper with one of `labels` is right."""
    best: dict[str, float] = {}
    for item in items:
        if item.label in labels:
            best[item.arxiv_id] = max(best.get(item.arxiv_id, 0.0), th.weight(item))
    missed = 1.0
    for weight in best.values():
        missed *= 1.0 - weight
    return 1.0 - missed


def strengths(items: list[EvidenceItem], th: Thresholds) -> dict[str, float]:
    return {
        "SUPPORTS": side_strength(items, ("SUPPORTS",), th),
        "AGAINST": side_strength(items, ("RELAXES", "OVERTURNS"), th),
        "OVERTURNS": side_strength(items, ("OVERTURNS",), th),
    }


def strength(item: EvidenceItem) -> tuple[int, int, float, str]:
    """Sort key, strongest first when reversed: against-ness, grounding, confidence, then id."""
    return (_AGAINST.get(item.label, 0), int(item.grounded), item.confidence, item.arxiv_id)


def classify(items: list[EvidenceItem], th: Thresholds) -> tuple[str, list[EvidenceItem]]:
    """Rules 3-7 on items that already passed rule 1: the status and the papers that set it."""
    items = [i for i in items if not th.held(i)]
    side = strengths(items, th)

    def having(*labels: str) -> list[EvidenceItem]:
        return _strongest_first([i for i in items if i.label in labels])

    if side["OVERTURNS"] >= th.move and side["SUPPORTS"] >= th.move:
        return CONTESTED, having("OVERTURNS", "SUPPORTS")
    if side["OVERTURNS"] >= th.overturn:
        return OVERTURNED, having("OVERTURNS")
    if side["AGAINST"] >= th.move:
        return PERISHABLE, having("RELAXES", "OVERTURNS")
    if side["SUPPORTS"] >= th.move:
        return DURABLE, having("SUPPORTS")
    return UNTESTED, []


def decide(
    items: list[EvidenceItem], th: Thresholds, date: ClaimDate, as_of: dt.date | None = None
) -> Outcome:
    """A claim's full outcome at `as_of` (None: everything known) from its current assessments."""
    cutoff = evidence_cutoff(date)
    counted = [i for i in items if counts(i, cutoff, as_of, th)]
    status, movers = classify(counted, th)
    held = [i for i in counted if th.held(i)]
    moving = [i for i in counted if i not in held]  # what moves verdicts: not what waits for a curator
    settled = status in (OVERTURNED, CONTESTED)
    for_review = [
        i for i in counted if i in held or (i.label == "OVERTURNS" and not settled and not i.reviewed)
    ]
    unclear = [i for i in items if i.abstained and counts(replace(i, abstained=False), cutoff, as_of, th)]
    return Outcome(
        status=status,
        movers=movers,
        for_review=_strongest_first(for_review),
        held=held,
        unclear=_strongest_first(unclear),
        strongest_recent=_strongest_recent(moving, th, as_of),
        counted=counted,
        strength=strengths(moving, th),
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
