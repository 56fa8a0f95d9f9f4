"""What needs a curator, and recording what they decided (`monitor review`).

The queue is every pair whose label a careful reader should check before trusting the digest, most
urgent first:

1. a label that waits for confirmation before it moves a verdict (`confirm_judges`),
2. an OVERTURNS not strong enough to overturn the claim,
3. a paper behind a claim's current verdict,
4. "related, stance unclear" (the embedded judge withheld its stance),
5. weak evidence that moves nothing on its own.

A pair leaves the queue once a decision (confirm, relabel, dismiss) is in force; a note alone keeps
it there. Decisions are keyed by (claim, paper), so they survive re-judging.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from monitor.config import Settings
from monitor.errors import NotFound, UsageError
from monitor.files import write_atomic
from monitor.judge_names import shown_judge
from monitor.sources.base import arxiv_url
from monitor.store.claims import active_claims
from monitor.store.db import Store
from monitor.store.models import Assessment, Claim, Paper, Review
from monitor.store.papers import abstracts_of
from monitor.store.reviews import add_review, decisions_in_force, history, reviewed_pairs
from monitor.verdicts.rollup import claim_dates, load_evidence
from monitor.verdicts.rules import STANCES, EvidenceItem, Thresholds, decide

LABELS = (*STANCES, "UNRELATED")
SHORT = {"S": "SUPPORTS", "R": "RELAXES", "O": "OVERTURNS", "U": "UNRELATED"}
REASONS = (
    "needs a curator's confirmation before it moves the verdict",
    "OVERTURNS not strong enough to overturn the claim",
    "a paper behind the claim's verdict",
    "related, stance unclear",
    "weak evidence: moves nothing on its own",
    "too unsure to count (below verdicts.min_confidence, or min_confidence_against for RELAXES and "
    "OVERTURNS): possibly relevant, stance unsure",
)


@dataclass
class ReviewItem:
    """One pair to review, with everything the reader needs to decide."""

    assessment_id: int
    claim_id: str
    claim: str
    claim_date: str | None
    arxiv_id: str
    version: int
    title: str
    abstract: str
    label: str
    confidence: float
    judge: str
    evidence: str
    rationale: str
    reason: str
    priority: int
    status: str  # the claim's verdict now

    @property
    def url(self) -> str:
        return arxiv_url(f"{self.arxiv_id}v{self.version}")

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "url": self.url}


Ranked = tuple[tuple[int, float, int], EvidenceItem, Claim, str, int]  # (key, item, claim, status, tier)


def _ranked(s: Session, settings: Settings) -> list[Ranked]:
    """The queue, most urgent first.

    The one place outside the verdicts stage that applies the rules itself, and why: the queue is the
    curator's worklist over the current assessments with every decision taken so far, so a pair leaves
    it the moment it is decided, before any run; it prints no verdict of its own (readers of verdicts
    read the stored outcomes)."""
    th = Thresholds.from_settings(settings.verdicts)
    queue: list[Ranked] = []
    claims = active_claims(s)
    evidence = load_evidence(s, settings, [c.id for c in claims])
    dates = claim_dates(s, claims)
    for claim in claims:
        outcome = decide(evidence.get(claim.id, []), th, dates[claim.id])
        seen: set[int] = set()
        groups = (
            [i for i in outcome.counted if th.held(i)],
            [i for i in outcome.for_review if not th.held(i)],
            outcome.movers,
            outcome.unclear,
            outcome.counted,
            # A judge's grounded label it was too unsure of to count (below its label's floor):
            # the digest lists its paper as possibly relevant, for review.
            [i for i in outcome.withheld if i.grounded and not i.abstained and i.second_look != "pending"],
        )
        for priority, group in enumerate(groups):
            for item in group:
                if item.assessment_id in seen or item.review:  # a curator decided it already
                    continue
                seen.add(item.assessment_id)
                key = (priority, -th.weight(item), item.assessment_id)
                queue.append((key, item, claim, outcome.status, priority))
    queue.sort(key=lambda entry: entry[0])
    return queue


def queue_overview(store: Store, settings: Settings) -> Counter[str]:
    """Per claim, how many of its pairs wait in the queue (the claim board)."""
    with store.session() as s:
        queue = _ranked(s, settings)
    return Counter(claim.id for _, _, claim, _, _ in queue)


def review_queue(store: Store, settings: Settings) -> list[ReviewItem]:
    """Every pair that needs a curator, most urgent first."""
    with store.session() as s:
        queue = _ranked(s, settings)
        abstracts = abstracts_of(s, [(e[1].arxiv_id, e[1].version) for e in queue])
        return [
            ReviewItem(
                assessment_id=item.assessment_id,
                claim_id=claim.id,
                claim=claim.text,
                claim_date=claim.date_text,
                arxiv_id=item.arxiv_id,
                version=item.version,
                title=item.title,
                abstract=abstracts.get((item.arxiv_id, item.version), ""),
                label=item.label,
                confidence=item.confidence,
                judge=shown_judge(item.judge),
                evidence=item.evidence,
                rationale=item.rationale,
                reason=REASONS[priority],
                priority=priority,
                status=status,
            )
            for _, item, claim, status, priority in queue
        ]


@dataclass(frozen=True)
class Recorded:
    """What `record` wrote."""

    review_id: int
    assessment_id: int
    claim_id: str
    arxiv_id: str
    action: str
    from_label: str
    label: str | None
    decisive: bool = False


def parse_label(value: str) -> str:
    """S / R / O / U or a full label, any case."""
    label = SHORT.get(value.strip().upper(), value.strip().upper())
    if label not in LABELS:
        raise UsageError(f"--label {value!r}: use one of S, R, O, U or {', '.join(LABELS)}")
    return label


def record(
    store: Store,
    assessment_id: int,
    label: str | None = None,
    dismiss: bool = False,
    note: str = "",
    decisive: bool = False,
    reviewer: str = "",
) -> Recorded:
    """A curator's decision on an assessment's (claim, paper) pair: confirm or relabel (`label`),
    dismiss, or only a note. `decisive`: with a label, this one paper settles the claim (it weighs 1;
    otherwise a curator's label weighs `rules.CURATOR_WEIGHT`). `reviewer`: who decided (the web app's
    signed-in name). Written in one transaction."""
    if dismiss and label:
        raise UsageError("give either --label or --dismiss, not both")
    if decisive and not label:
        raise UsageError("--decisive marks a label as settling the claim: give it with --label")
    if not (label or dismiss or note.strip()):
        raise UsageError("nothing to record: give --label, --dismiss or --note")
    with store.session() as s:
        assessment = s.get(Assessment, assessment_id)
        if assessment is None:
            raise NotFound(f"no assessment with id {assessment_id} (see `monitor review list`)")
        decision = decisions_in_force(s, [assessment.claim_id]).get(
            (assessment.claim_id, assessment.arxiv_id)
        )
        in_force = assessment.label if decision is None else decision.label or "DISMISSED"
        if dismiss:
            action, new = "dismiss", None
        elif label:
            new = parse_label(label)
            action = "confirm" if new == assessment.label else "relabel"
        else:
            action, new = "note", None if in_force == "DISMISSED" else in_force
        row = add_review(s, assessment, action, new, note.strip(), in_force, decisive, reviewer.strip())
        return Recorded(row.id, assessment.id, row.claim_id, row.arxiv_id, action, in_force, new, decisive)


def decisions(store: Store) -> list[dict[str, object]]:
    """Every reviewed pair with its decision in force and its history (from, to, when, note).

    A pair with notes alone is listed too, as action "note" with no label of a curator's: the judge's
    label still holds there.
    """
    out: list[dict[str, object]] = []
    with store.session() as s:
        in_force = decisions_in_force(s)
        for claim_id, arxiv_id in reviewed_pairs(s):
            decision = in_force.get((claim_id, arxiv_id))
            rows = history(s, claim_id, arxiv_id)
            out.append(
                {
                    "claim_id": claim_id,
                    "arxiv_id": arxiv_id,
                    "action": decision.action if decision else "note",
                    "label": decision.label if decision else None,
                    "decisive": decision.decisive if decision else False,
                    "history": [_history_row(r) for r in rows],
                }
            )
    return out


def _history_row(row: Review) -> dict[str, object]:
    return {
        "review_id": row.id,
        "assessment_id": row.assessment_id,
        "action": row.action,
        "from": row.from_label,
        "to": row.label,
        "when": row.created_at.isoformat(timespec="seconds"),
        "note": row.note,
        "decisive": bool(row.decisive),
        "reviewer": row.reviewer or "",
    }


def export_pairs(store: Store, path: Path) -> int:
    """Reviewed pairs in `monitor eval --pairs` format (a dismissed pair is UNRELATED); returns the count.

    So reviews become evaluation and training data. Written atomically.
    """
    rows: list[str] = []
    with store.session() as s:
        for (claim_id, arxiv_id), decision in sorted(decisions_in_force(s).items()):
            claim = s.get(Claim, claim_id)
            paper = s.get(Paper, arxiv_id)
            review = s.get(Review, decision.review_id)
            if claim is None or paper is None or review is None:
                continue
            assessment = s.get(Assessment, review.assessment_id)
            rows.append(
                json.dumps(
                    {
                        "claim_id": claim_id,
                        "claim": claim.text,
                        "claim_date": claim.date_text or "",
                        "arxiv_id": arxiv_id,
                        "title": paper.title,
                        "abstract": paper.abstract,
                        "label": decision.label or "UNRELATED",
                        "review": decision.action,
                        "model_label": assessment.label if assessment else None,
                        "note": decision.note,
                        "reviewed_at": review.created_at.isoformat(timespec="seconds"),
                    },
                    ensure_ascii=False,
                )
            )
    write_atomic(path, "".join(line + "\n" for line in rows))
    return len(rows)
