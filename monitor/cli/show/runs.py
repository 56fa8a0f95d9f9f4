"""How the operations commands print: rich tables for people, JSON for scripts."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from rich.console import Console
from rich.table import Table

from monitor.schedule.pipeline import RunOutcome
from monitor.schedule.replay import PeriodResult, ReplaySummary
from monitor.schedule.retest import RetestResult
from monitor.store.runs import RunSummary
from monitor.terminal import print_pairs, print_table


def _stage_pairs(counts: Any) -> list[str]:
    """A stage's counts as `key value` pairs: the non-zero numbers, at most eight."""
    if not isinstance(counts, dict):
        return [str(counts)]
    keep = [
        f"{k} {v}"
        for k, v in counts.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and v and k != "seconds"
    ]
    return keep[:8]


def print_outcome(console: Console, outcome: RunOutcome) -> None:
    console.print(f"run {outcome.run_id}: [bold]{outcome.status}[/] in {outcome.seconds:.1f}s")
    for stage in ("claims", "fetch", "relevance", "judge", "verdicts", "report", "email", "webhooks"):
        if stage in outcome.counts:
            print_pairs(console, f"  {stage}", _stage_pairs(outcome.counts[stage]))
    for path in outcome.digest_paths:
        console.print(f"  digest: {path}", highlight=False)
    email = outcome.counts.get("email")
    for period in email.get("periods", []) if isinstance(email, dict) else []:
        console.print(f"  emailed: digest {period}", highlight=False)
    posted = outcome.counts.get("webhooks")
    for period in posted.get("periods", []) if isinstance(posted, dict) else []:
        console.print(f"  posted to webhooks: digest {period}", highlight=False)
    if outcome.abandoned:
        console.print(f"  marked abandoned: runs {outcome.abandoned}")


def _short(counts: dict[str, Any]) -> str:
    parts = []
    fetch = counts.get("fetch") or {}
    if isinstance(fetch, dict) and "new" in fetch:
        parts.append(f"{fetch.get('new', 0)} new papers")
    judge = counts.get("judge") or {}
    if isinstance(judge, dict) and "judged" in judge:
        parts.append(f"{judge.get('judged', 0)} judged")
        if judge.get("newly_parked"):
            parts.append(f"{judge['newly_parked']} parked")
    verdicts = counts.get("verdicts") or {}
    if isinstance(verdicts, dict) and verdicts.get("status_changed"):
        parts.append(f"{verdicts['status_changed']} verdicts moved")
    report = counts.get("report") or {}
    if isinstance(report, dict) and report.get("period"):
        parts.append(f"digest {report['period']}")
    replay = counts.get("replay") or {}
    if isinstance(replay, dict) and "periods" in replay:
        parts.append(f"{replay['periods']} periods, {replay.get('digests_written', 0)} digests")
    return ", ".join(parts)


def print_runs(console: Console, runs: list[RunSummary], as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps([r.as_dict() for r in runs], default=str))
        return
    if not runs:
        console.print("no runs recorded yet")
        return
    table = Table("id", "command", "status", "started (UTC)", "secs", "tokens", "what", "errors")
    colours = {"ok": "green", "partial": "yellow", "failed": "red", "interrupted": "yellow"}
    for r in runs:
        colour = colours.get(r.status, "")
        table.add_row(
            str(r.id),
            r.command,
            f"[{colour}]{r.status}[/]" if colour else r.status,
            r.started_at.replace("T", " "),
            f"{r.seconds:.1f}" if r.seconds is not None else "",
            str(r.tokens or ""),
            _short(r.counts),
            str(len(r.errors) or ""),
        )
    print_table(console, table)


def print_retest(console: Console, result: RetestResult, as_json: bool, show_all: bool = False) -> None:
    if as_json:
        console.print_json(json.dumps(result.as_dict(), default=str))
        return
    console.print(
        f"retest run {result.run_id}: {result.claims} claim(s), {result.judged} pair(s) judged, "
        f"{len(result.changed)} verdict(s) changed ({result.seconds:.1f}s)"
    )
    rows = result.rows if show_all else result.changed
    if not rows:
        return
    table = Table("claim", "lines", "before", "after", "text")
    for r in rows:
        cid = f"{r.claim_id} (was {r.previous_claim_id})" if r.previous_claim_id else r.claim_id
        text = textwrap.shorten(r.text, 70, placeholder=" …")  # between words
        after = f"[bold]{r.after}[/]" if r.changed else r.after
        table.add_row(cid, ", ".join(r.lines), r.before, after, text)
    print_table(console, table)


def print_period(console: Console, p: PeriodResult) -> None:
    if p.skipped:
        console.print(f"{p.key}: done earlier", highlight=False)
        return
    console.print(
        f"{p.key}: {p.papers_new} papers, {p.judged} judged, {p.verdict_changes} verdict rows, "
        f"{p.seconds:.1f}s -> {p.digest}",
        highlight=False,
    )


def print_replay(console: Console, summary: ReplaySummary, as_json: bool) -> None:
    if as_json:
        data = summary.as_dict() | {"period_results": [p.as_dict() for p in summary.periods]}
        console.print_json(json.dumps(data, default=str))
        return
    d = summary.as_dict()
    console.print(
        f"replay run {d['run_id']}: {d['periods']} {summary.every}s ({d['skipped']} done earlier), "
        f"{d['papers']} papers, {d['pairs_judged']} pairs judged, {d['digests_written']} digests, "
        f"{d['seconds']:.1f}s"
    )
