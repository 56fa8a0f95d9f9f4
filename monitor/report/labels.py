"""How a digest names an assessment's label: the one place every format and section asks."""

from __future__ import annotations

from monitor.judge_names import shown_judge
from monitor.verdicts.rules import EvidenceItem

STRENGTHS = ("direct", "indirect", "weak")


def label_phrase(item: EvidenceItem, unconfirmed: bool = False) -> str:
    """An assessment's label as the digest prints it, beside its paper: "RELAXES 0.70, indirect evidence
    (openai judge, read twice)".

    The one place, so the strength of the judge's evidence and the state of its second reading show
    beside every label at once. A withheld stance, one awaiting its second reading, one whose two
    readings disagree and an unconfirmed one say so: none of them is a finding yet.
    """
    judge = shown_judge(item.judge)
    if item.abstained:
        return f"related, stance unclear (leans {item.label} {item.confidence:.2f}, {judge} judge)"
    strength = f", {item.strength} evidence" if item.strength in STRENGTHS else ""
    stated = f"{item.label} {item.confidence:.2f}{strength}"
    if item.second_look == "disagreed" and not item.reviewed:
        other = item.second_label or "another label"
        return f"readings disagree: {stated} on one reading, {other} on the other ({judge} judge); for review"
    if item.second_look == "pending":
        return f"{stated} ({judge} judge), awaiting its second reading"
    if unconfirmed:
        return f"unconfirmed: the {judge} judge suggests {stated}"
    twice = ", read twice" if item.second_look == "agreed" else ""
    return f"{stated} ({judge} judge{twice})"
