"""Verdicts from the store: load each active claim's current assessments, apply the rules, keep history.

A `verdicts` row is written on a claim's first computation and whenever its status or the set of
papers behind it changes; an unchanged verdict writes nothing, so reruns do not pile up rows. The
current verdict is the row with the latest `as_of` (ties: the latest written).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from sqlalchemy.orm import Session

from monitor.config import Settings
from monitor.errors import NotFound
from monitor.store.claims import active_claims, line_spans, lines_by_claim
from monitor.store.db import Store
from monitor.store.evidence import AssessmentRow, current_assessments
from monitor.store.lines import lines_by_id
from monitor.store.models import Claim, Verdict
from monitor.store.outcomes import outcome_rows, prune_outcomes, save_outcome
from monitor.store.reviews import Decision, decisions_in_force
from monitor.store.verdicts import latest_verdict, latest_verdict_days, verdict_history
from monitor.verdicts.rules import (
    AGREED,
    CONFIRMED,
    DISAGREED,
    DISMISSED,
    RELABELLED,
    RULES_VERSION,
    STATUSES,
    UNTESTED,
    ClaimDate,
    EvidenceItem,
    EvidenceSummary,
    Outcome,
    Thresholds,
    decide,
    published_by,
)
from monitor.verdicts.sources import source_reasons


@dataclass
class VerdictChange:
    """A verdict row written by `compute_verdicts` (first computation, new status or new papers)."""

    claim_id: str
    status: str
    previous_status: str | None
    status_changed: bool  # False when only the papers behind an unchanged status moved
    as_of: dt.date
    assessment_ids: list[int]  # that moved it (the JSON's `evidence` is the papers' arXiv ids)
    last_changed: dt.date | None
    verdict_id: int


class VerdictRun(list[VerdictChange]):
    """The rows `compute_verdicts` wrote, and its tally: recorded on the run as `verdicts` by the caller
    (StageCounts). `outcomes`: what it settled at the digest's dates it was also given (None: none)."""

    stage: ClassVar[str] = "verdicts"

    def __init__(
        self,
        changes: list[VerdictChange],
        as_of: dt.date,
        tally: dict[str, int],
        outcomes: OutcomeRun | None = None,
    ) -> None:
        super().__init__(changes)
        self.as_of, self.tally, self.outcomes = as_of, tally, outcomes

    def stage_counts(self) -> dict[str, Any]:
        return {
            "as_of": self.as_of.isoformat(),
            "claims": sum(self.tally.values()),
            "rows_written": len(self),
            "status_changed": sum(1 for c in self if c.status_changed),
            **{k.lower(): v for k, v in self.tally.items()},
        }


@dataclass
class CurrentVerdict:
    """One row of the verdict table: a claim, its lines and its current verdict."""

    claim_id: str
    text: str
    date_text: str | None
    lines: list[str]
    status: str
    as_of: dt.date | None
    summary: str
    assessment_ids: list[int] = field(default_factory=list)  # the assessments behind the status
    changed_at: dt.date | None = None  # as_of of the row where the status last moved
    status_since: dt.date | None = None  # publication date of the paper that moved it
    papers: list[str] = field(default_factory=list)  # arXiv ids (with version) behind the status
    evidence_summary: EvidenceSummary | None = None  # None: a row written before summaries were kept

    def as_dict(self) -> dict[str, object]:
        return {
            "claim_id": self.claim_id,
            "text": self.text,
            "date": self.date_text,
            "lines": self.lines,
            "status": self.status,
            "status_since": self.status_since.isoformat() if self.status_since else None,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "changed_at": self.changed_at.isoformat() if self.changed_at else None,
            "summary": self.summary,
            "evidence": self.papers,
            "assessment_ids": self.assessment_ids,
            "evidence_summary": self.evidence_summary.as_dict() if self.evidence_summary else None,
        }


def claim_date(claim: Claim, span: tuple[int, int] | None = None) -> ClaimDate:
    """The claim's own date; an undated claim takes its lines' "Findings span" (`span`, in years) as
    a fuzzy period, so "newer than the claim" holds for it too."""
    if claim.date_start is None and span is not None:
        return ClaimDate(dt.date(span[0], 1, 1), dt.date(span[1], 12, 31), "year", approximate=True)
    return ClaimDate(claim.date_start, claim.date_end, claim.date_precision, bool(claim.date_approximate))


def claim_dates(session: Session, claims: list[Claim]) -> dict[str, ClaimDate]:
    spans = line_spans(session)
    return {c.id: claim_date(c, spans.get(c.id)) for c in claims}


def load_evidence(
    session: Session,
    settings: Settings,
    claim_ids: Iterable[str] | None = None,
    include_unrelated: bool = False,
) -> dict[str, list[EvidenceItem]]:
    """Current assessments per claim as rule inputs, each of the claim's own sources marked as such
    (`sources.py`; unless `verdicts.exclude_anchors` is off).

    A curator's decision in force (`monitor review`) replaces the judge's label. UNRELATED ones never
    count, so they are left in the database unless asked for (`monitor show`) or a curator reviewed the
    pair (they may have relabelled it).
    """
    if claim_ids is not None:
        claim_ids = list(claim_ids)
    decisions = decisions_in_force(session, claim_ids)
    items: list[tuple[str, EvidenceItem]] = []
    for row in current_assessments(session, claim_ids, include_unrelated):
        item = _evidence_item(row)
        decision = decisions.get((row.claim_id, row.arxiv_id))
        if decision is not None:
            item = with_decision(item, decision)
        if item.label != "UNRELATED" or include_unrelated:
            items.append((row.claim_id, item))
    sources: dict[tuple[str, str], str] = {}
    if settings.verdicts.exclude_anchors:
        related = [(c, i.arxiv_id, i.version, i.title) for c, i in items if i.label != "UNRELATED"]
        sources = source_reasons(session, related)
    out: dict[str, list[EvidenceItem]] = defaultdict(list)
    for claim_id, item in items:
        why = sources.get((claim_id, item.arxiv_id), "")
        out[claim_id].append(replace(item, source=why) if why else item)
    return out


def _evidence_item(row: AssessmentRow) -> EvidenceItem:
    """A current assessment as a rule input; a later version appeared when it was updated.

    With a second reading (judge/second_look.py): one that agrees gives the item its strength and, where
    its quote is grounded, its quote and rationale (the closer reading), at the lower of the two
    confidences; one that disagrees leaves the bearing reading's label, with the other reading's as
    `second_label`, for a curator."""
    appeared = row.published
    if row.version > 1 and row.version_updated is not None:
        appeared = row.version_updated.date()
    item = EvidenceItem(
        assessment_id=row.id,
        arxiv_id=row.arxiv_id,
        version=row.version,
        title=row.version_title or row.paper_title,
        published=row.published,
        appeared=appeared,
        label=row.label,
        confidence=row.confidence,
        grounded=row.grounded,
        abstained=bool(row.abstained),
        judge=row.judge,
        model=row.model,
        evidence=row.evidence or "",
        rationale=row.rationale or "",
        strength=row.strength or "",
        second_look=row.second_look or "",
    )
    if row.second_label is None or row.second_look not in (AGREED, DISAGREED):
        return item
    if row.second_look == AGREED:
        closer = bool(row.second_grounded)
        return replace(
            item,
            strength=row.second_strength or item.strength,
            confidence=min(item.confidence, float(row.second_confidence or 0.0)),
            evidence=row.second_evidence or "" if closer else item.evidence,
            rationale=row.second_rationale or "" if closer else item.rationale,
        )
    if row.label == "UNRELATED":  # the second reading is the one that says it bears
        return replace(
            item,
            label=row.second_label,
            second_label=row.label,
            strength=row.second_strength or "",
            confidence=float(row.second_confidence or 0.0),
            evidence=row.second_evidence or "",
            rationale=row.second_rationale or "",
            grounded=bool(row.second_grounded),
        )
    return replace(item, second_label=row.second_label)


def with_decision(item: EvidenceItem, decision: Decision) -> EvidenceItem:
    """The item as a curator decided it: their label (or dismissed), the judge's kept as `model_label`."""
    if decision.action == "dismiss":
        return replace(item, review=DISMISSED)
    label = decision.label or item.label
    review = CONFIRMED if label == item.label else RELABELLED
    return replace(item, label=label, review=review, model_label=item.label, decisive=decision.decisive)


class OutcomesNotStored(RuntimeError):
    """A reader asked for outcomes the verdicts stage did not store for the evidence as it is now: the
    caller skipped `settle_outcomes` for those dates (a programming error, never the user's). Readers
    never settle: the entry point does, once (the outcomes stage, schedule/flow.py)."""


@dataclass
class OutcomeRun:
    """What `settle_outcomes` did: recorded on the run as `outcomes` by the caller (StageCounts)."""

    stage: ClassVar[str] = "outcomes"
    days: list[dt.date]
    claims: int
    computed: int  # (claim, date) outcomes computed and stored; the rest were stored and still hold

    def stage_counts(self) -> dict[str, Any]:
        return {"as_of": [d.isoformat() for d in self.days], "claims": self.claims, "computed": self.computed}


@dataclass
class _Inputs:
    """What decides the claims' outcomes: their current evidence, dates and the thresholds."""

    claims: list[Claim]
    evidence: dict[str, list[EvidenceItem]]
    dates: dict[str, ClaimDate]
    th: Thresholds
    _dicts: dict[EvidenceItem, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, session: Session, settings: Settings, claims: list[Claim]) -> _Inputs:
        evidence = load_evidence(session, settings, [c.id for c in claims])
        th = Thresholds.from_settings(settings.verdicts)
        return cls(claims, evidence, claim_dates(session, claims), th)

    def fingerprint(self, claim_id: str, as_of: dt.date) -> str:
        """A hash of everything `decide` reads for the claim at `as_of`: the evidence public by then
        (each item whole: label, confidence, the curator's decision, source...), the claim's date and
        the thresholds, so a stored outcome is rewritten exactly when its computation would differ."""
        items = [self._as_dict(i) for i in self.evidence.get(claim_id, []) if published_by(i, as_of)]
        data = {
            "rules": RULES_VERSION,
            "as_of": as_of.isoformat(),
            "date": self.dates[claim_id].as_dict(),
            "thresholds": self.th.as_dict(),
            "items": sorted(items, key=lambda item: item["assessment_id"]),
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()

    def _as_dict(self, item: EvidenceItem) -> dict[str, Any]:
        """An item's fields, once per load (a claim's items are hashed for each date asked)."""
        if item not in self._dicts:
            self._dicts[item] = item.to_dict()
        return self._dicts[item]

    def decide(self, claim_id: str, as_of: dt.date) -> Outcome:
        return decide(self.evidence.get(claim_id, []), self.th, self.dates[claim_id], as_of)


def _settle(
    session: Session, inputs: _Inputs, wanted: dict[str, set[dt.date]], run_id: int | None
) -> tuple[dict[tuple[str, dt.date], Outcome], int]:
    """The one computation of outcomes: each (claim, date) in `wanted` whose stored row's fingerprint
    no longer matches is decided and written over it; a matching one is read. Returns them all and
    how many were computed."""
    rows = outcome_rows(session, wanted, set().union(*wanted.values()) if wanted else set())
    found: dict[tuple[str, dt.date], Outcome] = {}
    computed = 0
    for claim_id, days in wanted.items():
        for day in sorted(days):
            row, stamp = rows.get((claim_id, day)), inputs.fingerprint(claim_id, day)
            if row is not None and row.fingerprint == stamp:
                found[claim_id, day] = Outcome.from_dict(row.outcome)
                continue
            outcome = found[claim_id, day] = inputs.decide(claim_id, day)
            save_outcome(session, row, claim_id, day, stamp, outcome.to_dict(), run_id)
            computed += 1
    return found, computed


def settle_outcomes(
    store: Store, settings: Settings, days: Iterable[dt.date], run_id: int | None = None
) -> OutcomeRun:
    """Compute and store every active claim's outcome at each of `days` whose inputs changed since it
    was stored (a digest's dates: `Period.verdict_days`), in one transaction; readers then read them
    (`stored_outcomes`). Reruns on the same evidence compute and write nothing."""
    wanted_days = sorted(set(days))
    with store.session() as s:
        claims = active_claims(s)
        inputs = _Inputs.load(s, settings, claims)
        _, computed = _settle(s, inputs, {c.id: set(wanted_days) for c in claims}, run_id)
    return OutcomeRun(wanted_days, len(claims), computed)


def stored_outcomes(
    session: Session, settings: Settings, days: Iterable[dt.date], claims: list[Claim]
) -> dict[dt.date, dict[str, Outcome]]:
    """Each claim's outcome at each of `days` as the verdicts stage stored it. Never computes one: a
    missing or stale row (its evidence, date or thresholds changed since) raises OutcomesNotStored."""
    wanted = sorted(set(days))
    inputs = _Inputs.load(session, settings, claims)
    rows = outcome_rows(session, [c.id for c in claims], wanted)
    found: dict[dt.date, dict[str, Outcome]] = {day: {} for day in wanted}
    for day in wanted:
        for claim in claims:
            row = rows.get((claim.id, day))
            if row is None or row.fingerprint != inputs.fingerprint(claim.id, day):
                why = "none is stored" if row is None else "its evidence changed since it was stored"
                raise OutcomesNotStored(
                    f"claim {claim.id}: no current outcome at {day} ({why}); settle the outcomes at "
                    "that date before reading them: `settle_outcomes`, for a digest's period "
                    "report/gather.py `settle_period`, as the pipeline's outcomes step does"
                )
            found[day][claim.id] = Outcome.from_dict(row.outcome)
    return found


def shown_outcomes(session: Session, verdicts: list[CurrentVerdict]) -> dict[str, Outcome]:
    """Each claim's stored outcome at its current verdict's date: the computation the verdict table's
    row summarises (claims with no verdict computed yet have none)."""
    dated = [v for v in verdicts if v.as_of is not None]
    rows = outcome_rows(session, {v.claim_id for v in dated}, {v.as_of for v in dated if v.as_of})
    found = ((v.claim_id, rows.get((v.claim_id, v.as_of))) for v in dated)
    return {claim_id: Outcome.from_dict(row.outcome) for claim_id, row in found if row is not None}


def stored_outcome(session: Session, claim_id: str, day: dt.date) -> Outcome | None:
    """The outcome the verdicts stage last stored for the claim at `day`, as it was stored (None: none)."""
    row = outcome_rows(session, [claim_id], [day]).get((claim_id, day))
    return Outcome.from_dict(row.outcome) if row is not None else None


def summarise(outcome: Outcome) -> str:
    """One line for the verdict table: which papers set the status, strongest first, then the claim's
    evidence summary (the sentence `monitor show`, the digest and the JSON print too)."""
    sentence = outcome.summary.sentence()
    if not outcome.movers:
        return sentence
    shown = ", ".join(
        f"{m.ref} {m.label} {m.confidence:.2f}{'' if m.grounded else ' (ungrounded)'}"
        for m in outcome.movers[:3]
    )
    more = f" and {len(outcome.movers) - 3} more" if len(outcome.movers) > 3 else ""
    review = f"; {len(outcome.for_review)} labels for review" if outcome.for_review else ""
    return f"{shown}{more}{review}; {sentence}"


def verdict_details(outcome: Outcome) -> dict[str, object]:
    """What a verdict row keeps beside its status, so every reader prints one computation."""
    return {
        "status_since": outcome.last_changed.isoformat() if outcome.last_changed else None,
        "papers": [m.ref for m in outcome.movers],
        "evidence": outcome.summary.as_dict(),
    }


def compute_verdicts(
    store: Store,
    settings: Settings,
    as_of: dt.date | None = None,
    run_id: int | None = None,
    digest_days: Iterable[dt.date] = (),
) -> VerdictRun:
    """Recompute every active claim's verdict at `as_of` (default today, UTC) and record what changed.

    Only papers published on or before `as_of` count, so a replay can step through past weeks.
    `run_id`: the run the rows are written by; the caller records the returned counts on it.
    `digest_days`: the dates of the digest this run writes next (`Period.verdict_days`), whose outcomes
    are settled on the same load of the evidence, as `settle_outcomes` would, and kept: the returned
    run's `outcomes`, so the pipeline's outcomes step need not load the evidence again.
    """
    day = as_of or dt.datetime.now(dt.UTC).date()
    changes: list[VerdictChange] = []
    tally = dict.fromkeys(STATUSES, 0)
    extra = sorted(set(digest_days))
    settled: OutcomeRun | None = None
    with store.session() as s:
        claims = active_claims(s)
        inputs = _Inputs.load(s, settings, claims)
        results, _ = _settle(s, inputs, {c.id: {day} for c in claims}, run_id)
        if extra:
            # The verdict's own date was settled just above: counted as settle_outcomes would find it.
            wanted = {c.id: set(extra) - {day} for c in claims}
            _, computed = _settle(s, inputs, {cid: days for cid, days in wanted.items() if days}, run_id)
            settled = OutcomeRun(extra, len(claims), computed)
        for claim in claims:
            outcome = results[claim.id, day]
            tally[outcome.status] += 1
            prior = latest_verdict(s, claim.id, day)
            details = verdict_details(outcome)
            unchanged = prior is not None and prior.status == outcome.status
            if unchanged and sorted(prior.assessment_ids) == outcome.mover_ids and prior.details == details:
                continue
            previous = prior.status if prior is not None else None
            row = Verdict(
                claim_id=claim.id,
                status=outcome.status,
                previous_status=previous,
                changed=outcome.status != (previous or UNTESTED),
                as_of=day,
                assessment_ids=outcome.mover_ids,
                summary=summarise(outcome),
                details=details,
                run_id=run_id,
            )
            s.add(row)
            s.flush()
            changes.append(
                VerdictChange(
                    claim_id=claim.id,
                    status=row.status,
                    previous_status=previous,
                    status_changed=row.changed,
                    as_of=day,
                    assessment_ids=outcome.mover_ids,
                    last_changed=outcome.last_changed,
                    verdict_id=row.id,
                )
            )
        _keep_shown(s, inputs, {day, *extra}, run_id)
    return VerdictRun(changes, day, tally, settled)


def _keep_shown(session: Session, inputs: _Inputs, settled: set[dt.date], run_id: int | None) -> None:
    """Keep each claim's outcome at its current verdict row's date stored (`monitor show` reads it,
    with the evidence as it is now, as the verdict table's row summarises it), and drop its other rows
    but those just `settled` (today's, this run's digest's): another digest's dates are settled again
    before it is read, so daily runs pile nothing up."""
    current = latest_verdict_days(session, [c.id for c in inputs.claims])
    keep = {c.id: settled | ({current[c.id]} if c.id in current else set()) for c in inputs.claims}
    due = {cid: days - settled for cid, days in keep.items() if days - settled}
    _settle(session, inputs, due, run_id)
    prune_outcomes(session, keep)


def current_verdicts(store: Store, line_id: str | None = None) -> list[CurrentVerdict]:
    """The verdict table: every active claim (optionally of one line) with its current verdict row.

    Everything a row says (status, since when, the papers behind it, the evidence summary) comes from
    the one stored computation, so a table never pairs a status with papers from another run.
    """
    with store.session() as s:
        if line_id is not None and line_id not in lines_by_id(s):
            raise NotFound(f"--line: no line with id {line_id!r} (see `monitor lines`)")
        lines = lines_by_claim(s)
        table: list[CurrentVerdict] = []
        for claim in active_claims(s):
            claim_lines = lines.get(claim.id, [])
            if line_id is not None and line_id not in claim_lines:
                continue
            history = verdict_history(s, claim.id)
            current = history[-1] if history else None
            moved = [v for v in history if v.changed]
            details = (current.details if current else None) or {}
            since = details.get("status_since")
            summary = details.get("evidence")
            table.append(
                CurrentVerdict(
                    claim_id=claim.id,
                    text=claim.text,
                    date_text=claim.date_text,
                    lines=claim_lines,
                    status=current.status if current else UNTESTED,
                    as_of=current.as_of if current else None,
                    summary=current.summary if current else "not computed yet",
                    assessment_ids=list(current.assessment_ids) if current else [],
                    changed_at=moved[-1].as_of if moved else None,
                    status_since=dt.date.fromisoformat(since) if since else None,
                    papers=list(details.get("papers") or []),
                    evidence_summary=EvidenceSummary.from_dict(summary) if summary else None,
                )
            )
    order = {status: i for i, status in enumerate(STATUSES)}
    table.sort(key=lambda v: (order.get(v.status, 99), v.lines[:1], v.claim_id))
    return table
