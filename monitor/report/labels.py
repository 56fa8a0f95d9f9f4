"""How a digest names an assessment's label: the one place every format and section asks."""

from __future__ import annotations

from monitor.config import shown_judge
from monitor.verdicts.rules import EvidenceItem


def label_phrase(item: EvidenceItem, unconfirmed: bool = False) -> str:
    """An assessment's label as the digest prints it, beside its paper: "RELAXES 0.70 (openai judge)".

    The one place, so a word the judge adds later (how direct its evidence is) shows beside every
    label at once. A withheld stance and an unconfirmed one say so: neither is a finding.
    """
    judge = shown_judge(item.judge)
    if item.abstained:
        return f"related, stance unclear (leans {item.label} {item.confidence:.2f}, {judge} judge)"
    if unconfirmed:
        return f"unconfirmed: the {judge} judge suggests {item.label} {item.confidence:.2f}"
    return f"{item.label} {item.confidence:.2f} ({judge} judge)"
