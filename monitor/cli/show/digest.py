"""What `monitor report` prints: the files written and the summary counts."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from monitor.report.digest import DigestResult


def print_digest_result(console: Console, result: DigestResult) -> None:
    for path in result.paths.values():
        console.print(f"wrote {escape(str(path))}", soft_wrap=True, highlight=False)
    stats = result.stats
    verdicts = ", ".join(f"{n} {status.lower()}" for status, n in stats.get("verdicts", {}).items())
    console.print(f"{result.period.key}: {verdicts}; {stats.get('changed', 0)} changed", soft_wrap=True)
    console.print(
        f"papers {stats.get('papers_published', 0)} published, "
        f"{stats.get('papers_first_seen', 0)} first seen; "
        f"pairs judged {stats.get('pairs_judged', 0)}, new evidence {stats.get('new_evidence', 0)}, "
        f"for review {stats.get('for_review', 0)}, tokens {stats.get('tokens', 0)}",
        soft_wrap=True,
    )
    judging = stats.get("judging") or {}
    if not stats.get("final", True):
        console.print(
            f"NOT FINAL: the judge answered {judging.get('judged', 0)} of {judging.get('pairs', 0)} "
            f"candidate pairs ({judging.get('failed', 0)} failed, {judging.get('parked', 0)} parked); "
            "not mailed or posted",
            soft_wrap=True,
        )
    evidence = stats.get("evidence")
    if isinstance(evidence, dict) and evidence.get("sentence"):
        console.print(evidence["sentence"], soft_wrap=True, highlight=False)  # the digest's own totals
    if result.posted:
        console.print(f"posted to {', '.join(result.posted)}", highlight=False)
    elif result.posted is not None and stats.get("final", True):
        console.print(
            "not posted: already posted to every webhook for this period, or an earlier post may have been "
            "delivered (see the warning); --force posts it again"
        )
    if result.sent is True:
        console.print("emailed")
    elif result.sent is False and stats.get("final", True):
        console.print(
            "not emailed: already sent for this period, or an earlier send may have been delivered "
            "(see the warning); --force sends it again"
        )
