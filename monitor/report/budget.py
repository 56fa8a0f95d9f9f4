"""What a digest of a large library shows in full, and what it leaves to `monitor verdicts` / `show`.

A library of a thousand claims would otherwise give every claim a row or a paragraph each week (issue
24). Up to `LISTED_CLAIMS` claims nothing changes. Above it the digest shows in full every claim
whose verdict changed and, of the rest with new evidence, the `CLAIMS_IN_FULL` whose strongest new
paper is most confident; every other claim is counted under its line, and a line left with nothing
to show is counted at the end. The summary's table of verdicts still counts every claim, and the list
of changed verdicts stops at `CHANGES_LISTED` lines with the number left out.
"""

from __future__ import annotations

from monitor.report.views import ClaimView, DigestView

LISTED_CLAIMS = 150  # a library up to this size is listed in full, as before
CLAIMS_IN_FULL = 25  # besides changed verdicts: claims with new evidence shown in full
CHANGES_LISTED = 50  # lines of "verdict changed" in the summary


def _strength(claim: ClaimView) -> tuple[float, int]:
    """How strongly the period's new evidence bears on the claim: its best paper, then how many."""
    best = max((e.item.confidence for e in claim.new_evidence), default=0.0)
    return best, len(claim.new_evidence) + len(claim.triage)


def fold_large_library(
    digest: DigestView,
    listed: int = LISTED_CLAIMS,
    in_full: int = CLAIMS_IN_FULL,
    changes: int = CHANGES_LISTED,
) -> None:
    """Trim `digest` (in place) to what a reader of a large library's digest needs first."""
    claims = {c.id: c for line in digest.lines for c in line.claims}
    if len(claims) <= listed:
        return
    newsworthy = [c for line in digest.lines for c in line.detailed if not c.changed]
    newsworthy.sort(key=_strength, reverse=True)
    shown = {c.id for c in claims.values() if c.changed} | {c.id for c in newsworthy[:in_full]}
    kept = []
    for line in digest.lines:
        before = len(line.claims)
        line.detailed = [c for c in line.detailed if c.id in shown]
        line.elsewhere = [c for c in line.elsewhere if c.id in shown]
        line.quiet = []
        line.folded = before - len(line.detailed) - len(line.elsewhere)
        if line.detailed or line.elsewhere:
            kept.append(line)
    digest.folded_lines = len(digest.lines) - len(kept)
    digest.folded_claims = len(claims.keys() - shown)
    digest.lines = kept
    digest.changes_listed = changes
