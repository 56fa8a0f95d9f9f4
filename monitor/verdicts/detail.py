"""One claim in full, as `monitor show CLAIM_ID` and the claim board's page show it: its text, date, lines,
evidence (counted or not, and why) and verdict history (printed by monitor/cli/show/verdicts.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from monitor.config import Settings
from monitor.errors import NotFound, UsageError
from monitor.judge_names import shown_judge
from monitor.store.claims import claim_ids_with_prefix, lines_of_claim
from monitor.store.db import Store
from monitor.store.models import Claim
from monitor.store.verdicts import verdict_history
from monitor.text import quoted
from monitor.verdicts.rollup import claim_dates, load_evidence, stored_outcome
from monitor.verdicts.rules import (
    COUNTS,
    SOURCE,
    UNTESTED,
    WAITS,
    WITHHELD,
    EvidenceItem,
    EvidenceSummary,
    Outcome,
    Thresholds,
    evidence_cutoff,
    standing,
    strength_scale,
)


@dataclass
class EvidenceLine:
    """One current assessment of the claim, how it stands (rules.standing) and why."""

    item: EvidenceItem
    standing: str  # COUNTS | WAITS | WITHHELD | SOURCE | OUT
    note: str

    @property
    def counted(self) -> bool:
        """It moves the verdict."""
        return self.standing == COUNTS

    @property
    def shown(self) -> str:
        """The `counts` column: yes, no, or what the item is instead."""
        return {COUNTS: "yes", WAITS: "waits", WITHHELD: "withheld", SOURCE: "source"}.get(
            self.standing, "no"
        )

    def as_dict(self) -> dict[str, object]:
        shown = {"judge": shown_judge(self.item.judge), "counts": self.shown, "standing": self.standing}
        return self.item.to_dict() | shown | {"note": self.note}


@dataclass
class HistoryLine:
    as_of: dt.date
    status: str
    changed: bool
    summary: str


@dataclass
class ClaimDetail:
    """Everything `monitor show` prints about one claim."""

    id: str
    text: str
    date_text: str | None
    cutoff: dt.date | None
    retired: bool
    lines: list[tuple[str, str]]
    status: str
    evidence: list[EvidenceLine] = field(default_factory=list)
    history: list[HistoryLine] = field(default_factory=list)
    for_review: int = 0
    summary: EvidenceSummary | None = None  # None: no verdict computed yet, so nothing summarised
    scale: str = ""  # the numbers in plain words (rules.strength_scale), printed beside them

    @property
    def evidence_sentence(self) -> str:
        if self.summary is None:
            return "not summarised yet: no verdict computed (run `monitor verdicts`)"
        return self.summary.sentence()

    def as_dict(self) -> dict[str, object]:
        """Everything `monitor show` prints, for `--json`: dates as ISO strings."""
        return {
            "id": self.id,
            "text": self.text,
            "date": self.date_text,
            "counts_papers_after": self.cutoff.isoformat() if self.cutoff else None,
            "retired": self.retired,
            "lines": [{"id": line_id, "question": question} for line_id, question in self.lines],
            "status": self.status,
            "evidence_summary": self.evidence_sentence,
            "for_review": self.for_review,
            "evidence": [e.as_dict() for e in self.evidence],
            "history": [
                {"as_of": h.as_of.isoformat(), "status": h.status, "changed": h.changed, "papers": h.summary}
                for h in self.history
            ],
        }


def _note(item: EvidenceItem, outcome: Outcome | None) -> str:
    """Why a counted item deserves a look, or who decided it."""
    if item.reviewed:
        said = f" (the judge said {item.model_label})" if item.model_label != item.label else ""
        decisive = ", decisive" if item.decisive else ""
        return f"{item.review} by a curator{decisive}{said}"
    if outcome is not None and item in outcome.for_review:
        return "for review: not strong enough to overturn"
    return ""


def claim_detail(store: Store, settings: Settings, claim_id: str) -> ClaimDetail:
    """A claim's text, date, lines, evidence (counted or not, and why) and verdict history.

    Its status, summary and what is for review are the verdicts stage's stored outcome at the current
    verdict's date (the one computation the verdict table prints); each assessment's standing is
    rule 1 on it as it is now."""
    th = Thresholds.from_settings(settings.verdicts)
    with store.session() as s:
        claim = s.get(Claim, claim_id)
        if claim is None:
            matches = claim_ids_with_prefix(s, claim_id)
            if len(matches) == 1:
                claim = s.get(Claim, matches[0])
            elif len(matches) > 1:
                shown = ", ".join(matches[:10]) + (
                    f" and {len(matches) - 10} more" if len(matches) > 10 else ""
                )
                raise UsageError(f"claim id prefix {quoted(claim_id)} is ambiguous: {shown}")
        if claim is None:
            raise NotFound(f"no claim with id {quoted(claim_id)} (see `monitor verdicts`)")
        lines = [(line.id, line.question) for line in lines_of_claim(s, claim.id)]
        date = claim_dates(s, [claim])[claim.id]
        cutoff = evidence_cutoff(date)
        items = load_evidence(s, settings, [claim.id], include_unrelated=True).get(claim.id, [])
        rows = verdict_history(s, claim.id)
        # As of the current verdict's date: the evidence the verdict table summarises, no other.
        as_of = rows[-1].as_of if rows else None
        outcome = stored_outcome(s, claim.id, as_of) if as_of is not None else None
        history = [HistoryLine(v.as_of, v.status, v.changed, v.summary) for v in rows]
        detail = ClaimDetail(
            id=claim.id,
            text=claim.text,
            date_text=claim.date_text,
            cutoff=cutoff,
            retired=claim.retired_at is not None,
            lines=lines,
            status=history[-1].status if history else UNTESTED,
            history=history,
            for_review=len(outcome.for_review) if outcome is not None else 0,
            summary=outcome.summary if outcome is not None else None,
            scale=strength_scale(th),
        )
    for item in sorted(items, key=lambda i: i.published or dt.date.min, reverse=True):
        kind, why = standing(item, cutoff, as_of, th)
        detail.evidence.append(EvidenceLine(item, kind, _note(item, outcome) if kind == COUNTS else why))
    return detail
