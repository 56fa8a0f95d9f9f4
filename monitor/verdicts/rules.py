"""The verdict rules: pure functions from a claim's evidence to a status.

Nothing here touches the store; `rollup.py` loads the evidence and keeps the history. The rules, in
order (docs/verdicts.md explains them for users, with worked examples):

1. Evidence counts only if its paper is newer than the claim (`evidence_cutoff`), was published on or
   before `as_of`, is not UNRELATED, is *grounded* (its quote is a real span of the abstract), has
   confidence >= min_confidence, and states a stance (an abstained "related, stance unclear" pair is for
   review and counts for nothing), and is not one of the claim's own sources (`sources.py`: the work
   a claim rests on is shown as its source, never as new evidence). A curator's decision (`monitor
   review`) overrides the judge's: a dismissed pair counts for nothing, a confirmed or relabelled one
   counts with its human label (weight below). Labels from a judge in `confirm_judges` (default: the
   embedded one) wait for a curator's confirmation before they move a verdict.
   An LLM's label that waits for its second reading (judge/second_look.py) counts for nothing yet;
   one whose second reading disagreed waits for a curator.
2. Each counted label has a *weight*: its confidence, capped at the precision measured for its judge
   and label (`monitor eval`), since a judge's self-reported confidence can run ahead of how often it
   is right, times its evidence's strength factor (`STRENGTH_FACTOR`: direct 1, indirect 0.75, weak
   0.4), so an indirect finding needs corroboration and weak ones several; and a side moves a verdict
   only when one of its papers is a confident finding (stated at 0.7 or more, not weak; or a
   curator's), else it weighs at most `WEAK_SIDE_CAP`. A side's *strength* is
   the chance that at least one of its distinct papers is right, 1 - prod(1 - w) over papers (a
   paper's best weight, once), so a verdict moves on several papers or one strong one, never on one
   weak label. A curator's confirmed or relabelled label weighs
   `CURATOR_WEIGHT` (or its judge's weight, if higher): one keypress never settles a claim alone. Only
   a decision marked *decisive* (`monitor review set ID --label S --decisive`) weighs 1.
3. CONTESTED: OVERTURNS and SUPPORTS are both at least `move` strong.
4. OVERTURNED: OVERTURNS at least `overturn` strong.
5. PERISHABLE: RELAXES and OVERTURNS together at least `move` strong.
6. DURABLE: SUPPORTS at least `move` strong.
7. UNSETTLED: papers count, but no side is strong enough yet (they are kept and shown).
8. UNTESTED: no paper counts yet (none was judged relevant, or every one waits for a curator, is
   withheld or is the claim's own source).
"""

from __future__ import annotations

import calendar
import datetime as dt
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from monitor.judge_names import EMBEDDED, stored_judge_name

# Part of every stored outcome's fingerprint (rollup.py): bump it when a rule, or what `Outcome` keeps,
# changes, so outcomes stored by the older code are computed again rather than read.
# 2: UNSETTLED (papers count, none strong enough) is told apart from UNTESTED (no paper counts).
# 3: an LLM label's strength weighs it (weak papers alone move nothing); a label waiting for its second
# reading is withheld, one whose readings disagree waits for a curator.
RULES_VERSION = 3

DURABLE = "DURABLE"
PERISHABLE = "PERISHABLE"
CONTESTED = "CONTESTED"
OVERTURNED = "OVERTURNED"
UNSETTLED = "UNSETTLED"
UNTESTED = "UNTESTED"
# Most to least urgent: the digest's order.
STATUSES = (OVERTURNED, CONTESTED, PERISHABLE, DURABLE, UNSETTLED, UNTESTED)
# What each verdict means, in the words every reader (digest, board, `monitor verdicts`) prints.
MEANINGS = {
    OVERTURNED: "strong evidence contradicts it",
    CONTESTED: "strong evidence both contradicts and supports it",
    PERISHABLE: "strong evidence relaxes or contradicts it",
    DURABLE: "strong evidence supports it",
    UNSETTLED: "papers count toward it, none strong enough yet to move it",
    UNTESTED: "no paper counts toward it yet",
}
STANCES = ("SUPPORTS", "RELAXES", "OVERTURNS")
CONFIRMED, RELABELLED, DISMISSED = "confirmed", "relabelled", "dismissed"
# A curator's label that is not marked decisive: below `move` alone, so one confirmation moves no
# verdict, while two confirmed papers (1 - 0.3^2 = 0.91) settle DURABLE, PERISHABLE or OVERTURNED.
CURATOR_WEIGHT = 0.7

# How each assessment stands toward the claim's verdict (`standing`): the one definition every reader
# (verdict table, `monitor show`, digest, feed) uses.
COUNTS = "counts"  # moves the verdict
WAITS = "waits"  # a stance from a judge in `confirm_judges`: waits for a curator's confirmation
WITHHELD = "withheld"  # related, but its stance is not trusted: stance unclear, ungrounded, too unsure
SOURCE = "source"  # the claim's own source paper: shown as such, never evidence about it
OUT = "out"  # bears on nothing: unrelated, dismissed, older than the claim or newer than `as_of`
WHY_UNCLEAR = "related, stance unclear: for review"
WHY_UNGROUNDED = "ungrounded: its quote is not a real span of the abstract"
WHY_WAITS = "for review: waits for a curator's confirmation (`monitor review`)"
WHY_SECOND_PENDING = "waits for its second reading"
WHY_SECOND_DISAGREED = "for review: a second reading disagreed; waits for a curator (`monitor review`)"
# The states of an LLM label's second reading (assessments.second_look; judge/second_look.py).
PENDING, AGREED, DISAGREED = "pending", "agreed", "disagreed"
# How much of a label's weight its evidence carries (the judge says direct, indirect or weak): an
# indirect finding (a neighbouring setting or a proxy) needs a second paper to move a verdict, a weak one
# (confounded, correlational, built to show the effect) several. A label with no strength (the embedded
# judge's, older rows) weighs as before.
STRENGTH_FACTOR = {"direct": 1.0, "indirect": 0.75, "weak": 0.4}
# A side moves a verdict only when one of its papers is a confident finding: stated at ANCHOR_CONFIDENCE
# or more, and not weak (or a curator's label). Without one it weighs at most WEAK_SIDE_CAP, below every
# threshold a verdict moves at (`move`, 0.8): many unsure or weak labels never add up to a verdict. 0.7
# is the line under which an answer is "unsure" (`judge.second_look_below`): graders read two PERISHABLE
# verdicts carried by seven indirect RELAXES at 0.50-0.55 as "not" signable (docs/digest_trust.md).
ANCHOR_CONFIDENCE = 0.7
WEAK_SIDE_CAP = 0.6

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
    decisive: bool = False  # the curator marked their decision decisive: it weighs 1
    source: str = ""  # why the paper is one of the claim's own sources ("" when it is not)
    strength: str = ""  # direct | indirect | weak (LLM judges); "" where the judge says none
    second_look: str = ""  # "" none asked | pending | agreed | disagreed
    second_label: str = ""  # where the two readings disagree, the other reading's label

    @property
    def reviewed(self) -> bool:
        """A curator confirmed or relabelled it: the label is theirs."""
        return self.review in (CONFIRMED, RELABELLED)

    @property
    def ref(self) -> str:
        return f"{self.arxiv_id}v{self.version}"

    def to_dict(self) -> dict[str, Any]:
        """Every field, dates as ISO strings (stored with an `Outcome`, and hashed into its fingerprint).
        Field by field: every one is a plain value, and `dataclasses.asdict` deep-copies each."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["published"] = _iso(self.published)
        out["appeared"] = _iso(self.appeared)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvidenceItem:
        return cls(**{**data, "published": _day(data["published"]), "appeared": _day(data["appeared"])})


def _iso(day: dt.date | None) -> str | None:
    return day.isoformat() if day is not None else None


def _day(text: str | None) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None


# Measured precision of each judge's stated labels (`monitor eval`, docs/verdicts.md): the embedded
# judge's on the teacher set's calibration split (its confidences are calibrated to it); the `openai`
# judge's with a capable LLM (the teacher) answering, domain_dev and SciFact dev pooled: SUPPORTS
# 136/158, RELAXES 8/10, OVERTURNS 68/87. Your own LLM may differ: measure it with `monitor eval`.
DEFAULT_PRECISION: dict[str, dict[str, float]] = {
    stored_judge_name(EMBEDDED): {"SUPPORTS": 0.76, "RELAXES": 0.7, "OVERTURNS": 0.71},
    "openai": {"SUPPORTS": 0.86, "RELAXES": 0.8, "OVERTURNS": 0.78},
}
UNKNOWN_JUDGE_PRECISION = 0.5  # a judge nobody measured: its labels need corroboration


@dataclass(frozen=True)
class Thresholds:
    """The configurable numbers the rules use (settings.verdicts)."""

    move: float = 0.8  # strength a side needs to make a claim DURABLE, PERISHABLE or CONTESTED
    overturn: float = 0.9  # OVERTURNS strength for OVERTURNED
    min_confidence: float = 0.5
    min_confidence_against: float = 0.6  # RELAXES and OVERTURNS need this much too (`floor`)
    recent_months: int = 6
    precision: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: DEFAULT_PRECISION)
    # Judges whose labels move a verdict only once a curator confirmed them. Read against the
    # abstracts, about half of the embedded judge's stated SUPPORTS in a real week were not support.
    confirm_judges: frozenset[str] = frozenset({stored_judge_name(EMBEDDED)})

    @classmethod
    def from_settings(cls, verdicts: object) -> Thresholds:
        return cls(
            move=verdicts.move_strength,  # type: ignore[attr-defined]
            overturn=verdicts.overturn_strength,  # type: ignore[attr-defined]
            min_confidence=verdicts.min_confidence,  # type: ignore[attr-defined]
            min_confidence_against=verdicts.min_confidence_against,  # type: ignore[attr-defined]
            recent_months=verdicts.recent_months,  # type: ignore[attr-defined]
            precision=_merged(DEFAULT_PRECISION, _stored_names(verdicts.precision)),  # type: ignore[attr-defined]
            confirm_judges=frozenset(_stored_names(verdicts.confirm_judges)),  # type: ignore[attr-defined]
        )

    def as_dict(self) -> dict[str, Any]:
        """Every number the rules read, in a stable order (part of a stored outcome's fingerprint)."""
        return {
            "move": self.move,
            "overturn": self.overturn,
            "min_confidence": self.min_confidence,
            "min_confidence_against": self.min_confidence_against,
            "recent_months": self.recent_months,
            "precision": {j: dict(sorted(labels.items())) for j, labels in sorted(self.precision.items())},
            "confirm_judges": sorted(self.confirm_judges),
        }

    def floor(self, label: str) -> float:
        """The confidence a judge's label needs to count: RELAXES and OVERTURNS, which move a claim
        toward PERISHABLE or OVERTURNED, may need more than SUPPORTS."""
        if label in _AGAINST:
            return max(self.min_confidence, self.min_confidence_against)
        return self.min_confidence

    def weight(self, item: EvidenceItem) -> float:
        """Rule 2: an item's confidence, capped at its judge's measured precision for its label.

        A curator's label weighs `CURATOR_WEIGHT`, or what the judge's same label weighs if that is
        more (a confirmation never weakens a label); 1 only when they marked it decisive.
        """
        if item.reviewed and item.decisive:
            return 1.0
        judged = min(item.confidence, self._cap(item.judge, item.model_label or item.label))
        judged *= STRENGTH_FACTOR.get(item.strength, 1.0)
        if item.review == RELABELLED:
            return CURATOR_WEIGHT  # the judge's weight was for another label
        if item.review == CONFIRMED:
            return max(CURATOR_WEIGHT, judged)
        return judged

    def _cap(self, judge: str, label: str) -> float:
        return self.precision.get(judge, {}).get(label, UNKNOWN_JUDGE_PRECISION)

    def held(self, item: EvidenceItem) -> bool:
        """A stance that waits for a curator's confirmation before it moves a verdict: a judge's in
        `confirm_judges`, or one whose two readings disagreed."""
        if item.label not in STANCES or item.reviewed:
            return False
        return item.judge in self.confirm_judges or item.second_look == DISAGREED


def strength_scale(th: Thresholds) -> str:
    """The numbers in plain words: the one sentence every digest, board page and `monitor show` prints
    beside them, so "RELAXES 0.50" and "strength 0.50" never go unexplained."""
    return (
        "How to read the numbers: a label's number (RELAXES 0.50) is its judge's confidence, from 0 to 1. "
        "A side's strength is the chance that at least one of its papers is right, each weighed at its "
        "confidence capped at how often that judge was right on that label when measured, and by how "
        "directly its finding speaks to the claim (direct in full, indirect three quarters, weak 0.4); a "
        f"side moves a verdict only with at least one confident finding ({ANCHOR_CONFIDENCE:.2f} or more, "
        "not weak): many unsure labels never add up to one. "
        f"A side at {th.move:.2f} moves a verdict (DURABLE, PERISHABLE or CONTESTED), "
        f"OVERTURNS at {th.overturn:.2f} makes it OVERTURNED; weaker evidence that counts leaves it "
        "UNSETTLED, and with none that counts it is UNTESTED."
    )


def _stored_names(by_judge: Any) -> Any:
    """Config names judges as users do ("embedded"); the rules compare the names rows are stored under."""
    if isinstance(by_judge, Mapping):
        return {stored_judge_name(k): v for k, v in by_judge.items()}
    return [stored_judge_name(name) for name in by_judge]


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

    def as_dict(self) -> dict[str, Any]:
        return {
            "start": _iso(self.start),
            "end": _iso(self.end),
            "precision": self.precision,
            "approximate": self.approximate,
        }


@dataclass(frozen=True)
class EvidenceSummary:
    """How a claim's evidence stands at one date, in distinct papers: the one account of it that the
    verdict table, `monitor verdicts --json`, `monitor show`, the digest and the feed all print."""

    counted: dict[str, int] = field(default_factory=dict)  # per label, papers that move the verdict
    waiting: int = 0  # stances that wait for a curator's confirmation (`confirm_judges`)
    withheld: dict[str, int] = field(default_factory=dict)  # stance unclear | ungrounded | too unsure
    sources: int = 0  # the claim's own source papers: shown, never counted

    @property
    def related(self) -> int:
        return sum(self.counted.values()) + self.waiting + sum(self.withheld.values()) + self.sources

    def sentence(self) -> str:
        """One sentence, the same wherever the claim is shown."""
        if not self.related:
            # Not "no relevant paper found": the rules do not know who read the candidates, nor what
            # the relevance stage never picked; the digest says what was read (docs/verdicts.md).
            return "no paper judged relevant yet"
        total = sum(self.counted.values())
        labels = ", ".join(f"{n} {label}" for label, n in self.counted.items() if n)
        counting = f"{_papers(total)} count{'s' if total == 1 else ''} ({labels})"
        parts = [counting if total else "no paper counts yet"]
        if self.waiting:
            parts.append(f"{_papers(self.waiting)} wait{'s' if self.waiting == 1 else ''} for a curator")
        if self.withheld:
            why = ", ".join(f"{n} {reason}" for reason, n in self.withheld.items())
            parts.append(f"{_papers(sum(self.withheld.values()))} withheld ({why})")
        if self.sources:
            own = "is the claim's own source" if self.sources == 1 else "are the claim's own sources"
            parts.append(f"{_papers(self.sources)} {own}")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, object]:
        return {
            "counted": dict(self.counted),
            "waiting": self.waiting,
            "withheld": dict(self.withheld),
            "sources": self.sources,
            "sentence": self.sentence(),
        }

    @classmethod
    def total(cls, summaries: list[EvidenceSummary]) -> EvidenceSummary:
        """Summed over claims: (claim, paper) pairs, as a digest's or a feed entry's totals."""
        counted: Counter[str] = Counter()
        withheld: Counter[str] = Counter()
        for one in summaries:
            counted.update(one.counted)
            withheld.update(one.withheld)
        return cls(
            {label: counted[label] for label in STANCES if counted[label]},
            sum(one.waiting for one in summaries),
            _in_order(withheld),
            sum(one.sources for one in summaries),
        )

    def totals_sentence(self) -> str:
        """The totals over claims in words: pairs of a claim and a paper, since a paper may bear on two."""
        if not self.related:
            return "No paper judged relevant to any claim yet"
        withheld = sum(self.withheld.values())
        parts = [
            f"{sum(self.counted.values())} count",
            f"{self.waiting} wait for a curator",
            f"{withheld} withheld"
            + (f" ({', '.join(f'{n} {w}' for w, n in self.withheld.items())})" if withheld else ""),
            f"{self.sources} are a claim's own source",
        ]
        return "Claim-paper pairs to date: " + "; ".join(parts)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> EvidenceSummary:
        return cls(
            counted=dict(data.get("counted") or {}),  # type: ignore[call-overload]
            waiting=int(data.get("waiting") or 0),  # type: ignore[call-overload]
            withheld=dict(data.get("withheld") or {}),  # type: ignore[call-overload]
            sources=int(data.get("sources") or 0),  # type: ignore[call-overload]
        )


def _papers(n: int) -> str:
    return f"{n} paper{'' if n == 1 else 's'}"


_WITHHELD_AS = {
    WHY_UNCLEAR: "stance unclear",
    WHY_UNGROUNDED: "ungrounded",
    WHY_SECOND_PENDING: "awaiting a second reading",
}
_WITHHELD_ORDER = ("awaiting a second reading", "stance unclear", "ungrounded", "too unsure")


def _in_order(withheld: Mapping[str, int]) -> dict[str, int]:
    return {why: withheld[why] for why in _WITHHELD_ORDER if withheld.get(why)}


def summarise_evidence(standings: list[tuple[EvidenceItem, str, str]]) -> EvidenceSummary:
    """Count distinct papers per standing (a paper judged twice, or by two judges, is one paper, in
    its best standing)."""
    rank = (COUNTS, WAITS, WITHHELD, SOURCE)
    best: dict[str, tuple[int, str]] = {}  # paper -> (its best standing, the label or why withheld)
    for item, kind, why in standings:
        if kind not in rank:
            continue
        detail = item.label if kind == COUNTS else _WITHHELD_AS.get(why, "too unsure")
        if item.arxiv_id not in best or rank.index(kind) < best[item.arxiv_id][0]:
            best[item.arxiv_id] = (rank.index(kind), detail)
    tally: dict[str, Counter[str]] = {kind: Counter() for kind in rank}
    for index, detail in best.values():
        tally[rank[index]][detail] += 1
    counted = {label: tally[COUNTS][label] for label in STANCES if tally[COUNTS][label]}
    return EvidenceSummary(counted, tally[WAITS].total(), _in_order(tally[WITHHELD]), tally[SOURCE].total())


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
    sources: list[EvidenceItem] = field(default_factory=list)  # the claim's own sources: never counted
    withheld: list[EvidenceItem] = field(default_factory=list)  # related, stance not trusted
    summary: EvidenceSummary = field(default_factory=EvidenceSummary)

    @property
    def mover_ids(self) -> list[int]:
        return sorted(item.assessment_id for item in self.movers)

    @property
    def moving(self) -> list[EvidenceItem]:
        """What counts toward the verdict now: passed rule 1 and waits for no curator."""
        return [i for i in self.counted if i not in self.held]

    _LISTS: ClassVar[tuple[str, ...]] = (
        *("movers", "for_review", "held", "unclear", "counted", "sources", "withheld"),
    )

    def to_dict(self) -> dict[str, Any]:
        """The whole outcome as JSON-ready data: each item once (by assessment id), the lists as ids."""
        lists = {name: getattr(self, name) for name in self._LISTS}
        everything = [i for items in lists.values() for i in items]
        if self.strongest_recent is not None:
            everything.append(self.strongest_recent)
        recent = self.strongest_recent
        return {
            "status": self.status,
            "items": {str(i.assessment_id): i.to_dict() for i in everything},
            **{name: [i.assessment_id for i in items] for name, items in lists.items()},
            "strongest_recent": recent.assessment_id if recent is not None else None,
            "strength": dict(self.strength),
            "last_changed": _iso(self.last_changed),
            "summary": self.summary.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        items = {int(key): EvidenceItem.from_dict(item) for key, item in data["items"].items()}
        recent = data["strongest_recent"]
        return cls(
            status=data["status"],
            **{name: [items[i] for i in data[name]] for name in cls._LISTS},
            strongest_recent=items[recent] if recent is not None else None,
            strength=dict(data["strength"]),
            last_changed=_day(data["last_changed"]),
            summary=EvidenceSummary.from_dict(data["summary"]),
        )


def counting_between(
    outcome: Outcome, start: dt.date, end: dt.date, labels: tuple[str, ...] = STANCES
) -> list[EvidenceItem]:
    """The evidence that counts for a claim (standing COUNTS: not waiting for a curator, not withheld,
    not one of its sources) with one of `labels`, whose version appeared in [start, end], strongest
    first. For a digest period: `counting_between(now, period.start, period.end, ("RELAXES", "OVERTURNS"))`
    with `now` the claim's outcome at the period's end."""
    chosen = [
        i
        for i in outcome.moving
        if i.label in labels and i.appeared is not None and start <= i.appeared <= end
    ]
    return _strongest_first(chosen)


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


def published_by(item: EvidenceItem, as_of: dt.date | None) -> bool:
    """Whether the paper was public at `as_of` (None: everything known); a later one bears on nothing."""
    return as_of is None or item.published is None or item.published <= as_of


def standing(
    item: EvidenceItem, cutoff: dt.date | None, as_of: dt.date | None, th: Thresholds
) -> tuple[str, str]:
    """Rule 1 for one assessment: how it stands (COUNTS, WAITS, WITHHELD, SOURCE, OUT) and why."""
    if item.review == DISMISSED:
        return OUT, "dismissed by a curator"
    if item.label not in STANCES:
        return OUT, "unrelated"
    if not published_by(item, as_of):
        return OUT, f"published after {as_of}"
    if item.source:
        return SOURCE, f"the claim's own source ({item.source}), not evidence about it"
    if cutoff is not None and (item.published is None or item.published <= cutoff):
        return OUT, f"not newer than the claim (published {item.published}, cutoff {cutoff})"
    return (COUNTS, "") if item.reviewed else _judged(item, th)


def _judged(item: EvidenceItem, th: Thresholds) -> tuple[str, str]:
    """A judge's stance nobody reviewed, on a paper newer than the claim: trusted or not yet."""
    if item.abstained:
        return WITHHELD, WHY_UNCLEAR
    if item.second_look == PENDING:
        return WITHHELD, WHY_SECOND_PENDING
    if not item.grounded:
        return WITHHELD, WHY_UNGROUNDED
    floor = th.floor(item.label)
    if item.confidence < floor:
        setting = "min_confidence_against" if floor > th.min_confidence else "min_confidence"
        return WITHHELD, f"below {setting} {floor}"
    if item.second_look == DISAGREED:
        return WAITS, WHY_SECOND_DISAGREED
    if th.held(item):
        return WAITS, WHY_WAITS
    return COUNTS, ""


def counts(item: EvidenceItem, cutoff: dt.date | None, as_of: dt.date | None, th: Thresholds) -> bool:
    """Rule 1: whether one assessment passes into the rules (it moves the verdict or waits to)."""
    return standing(item, cutoff, as_of, th)[0] in (COUNTS, WAITS)


def side_strength(items: list[EvidenceItem], labels: tuple[str, ...], th: Thresholds) -> float:
    """Rule 2: the chance that at least one distinct paper with one of `labels` is right; a side with no
    confident finding (`anchors`) stays below `WEAK_SIDE_CAP`: unsure or weak labels alone, however many,
    move no verdict."""
    raw, anchored = _side(items, labels, th)
    return raw if anchored else min(raw, WEAK_SIDE_CAP)


def _side(items: list[EvidenceItem], labels: tuple[str, ...], th: Thresholds) -> tuple[float, bool]:
    """A side's strength before the cap, and whether a confident finding (`anchors`) is among it."""
    best: dict[str, float] = {}
    anchored = False
    for item in items:
        if item.label in labels:
            best[item.arxiv_id] = max(best.get(item.arxiv_id, 0.0), th.weight(item))
            anchored = anchored or anchors(item)
    missed = 1.0
    for weight in best.values():
        missed *= 1.0 - weight
    return 1.0 - missed, anchored


def capped_sides(items: list[EvidenceItem], th: Thresholds) -> list[str]:
    """The sides (`strengths`' keys) held at WEAK_SIDE_CAP: their papers would add up to more, but none
    is a confident finding. A reader told only "0.60, a verdict needs 0.80" would think one more paper
    settles it."""
    capped = []
    for side, labels in _SIDES.items():
        raw, anchored = _side(items, labels, th)
        if not anchored and raw > WEAK_SIDE_CAP:
            capped.append(side)
    return capped


SIDE_NAMES = {"SUPPORTS": "supports", "AGAINST": "relaxes or overturns", "OVERTURNS": "overturns"}


def side_figures(strength: Mapping[str, float], sep: str) -> str:
    """Each side's strength as the digest prints it; a side no paper counts toward reads "none counted",
    not 0.00, which readers took for evidence that nothing points that way."""
    return sep.join(
        f"{SIDE_NAMES[side]} {value:.2f}" if value > 0 else f"{SIDE_NAMES[side]}: none counted"
        for side, value in strength.items()
    )


def uncounted_note(summary: EvidenceSummary) -> str:
    """Said beside the strengths when some of a claim's papers are withheld or wait for a curator ("" when
    none): they weigh nothing on either side, so the figures are not a tally of every paper that leans."""
    if not summary.withheld and not summary.waiting:
        return ""
    return "papers withheld or waiting weigh nothing, whichever way they lean"


def capped_note(sides: list[str]) -> str:
    """The words a digest or the board prints beside sides held at the cap (`capped_sides`); "" for none."""
    if not sides:
        return ""
    named = " and ".join(SIDE_NAMES[side] for side in sides)
    return (
        f"{named} held at {WEAK_SIDE_CAP:.2f}: no finding stated at {ANCHOR_CONFIDENCE:.2f} or more yet, "
        "and more unsure papers will not move it"
    )


def anchors(item: EvidenceItem) -> bool:
    """A paper that can carry a side to a verdict: a curator's label, or a judge's stated at
    ANCHOR_CONFIDENCE or more on evidence that is not weak."""
    return item.reviewed or (item.confidence >= ANCHOR_CONFIDENCE and item.strength != "weak")


_SIDES = {"SUPPORTS": ("SUPPORTS",), "AGAINST": ("RELAXES", "OVERTURNS"), "OVERTURNS": ("OVERTURNS",)}


def strengths(items: list[EvidenceItem], th: Thresholds) -> dict[str, float]:
    return {side: side_strength(items, labels, th) for side, labels in _SIDES.items()}


def strength(item: EvidenceItem) -> tuple[int, int, float, str]:
    """Sort key, strongest first when reversed: against-ness, grounding, confidence, then id."""
    return (_AGAINST.get(item.label, 0), int(item.grounded), item.confidence, item.arxiv_id)


def classify(items: list[EvidenceItem], th: Thresholds) -> tuple[str, list[EvidenceItem]]:
    """Rules 3-8 on items that already passed rule 1: the status and the papers that set it."""
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
    # Evidence that counts but moves nothing yet is not "untested": a reader must tell the two apart.
    return (UNSETTLED if items else UNTESTED), []


def decide(
    items: list[EvidenceItem], th: Thresholds, date: ClaimDate, as_of: dt.date | None = None
) -> Outcome:
    """A claim's full outcome at `as_of` (None: everything known) from its current assessments."""
    cutoff = evidence_cutoff(date)
    standings = [(i, *standing(i, cutoff, as_of, th)) for i in items]
    counted = [i for i, kind, _ in standings if kind in (COUNTS, WAITS)]
    withheld = [i for i, kind, _ in standings if kind == WITHHELD]
    status, movers = classify(counted, th)
    held = [i for i in counted if th.held(i)]
    moving = [i for i in counted if i not in held]  # = Outcome.moving: not what waits for a curator
    settled = status in (OVERTURNED, CONTESTED)
    for_review = [
        i for i in counted if i in held or (i.label == "OVERTURNS" and not settled and not i.reviewed)
    ]
    unclear = [i for i in withheld if i.abstained]
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
        sources=_strongest_first([i for i, kind, _ in standings if kind == SOURCE]),
        withheld=_strongest_first(withheld),
        summary=summarise_evidence(standings),
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
