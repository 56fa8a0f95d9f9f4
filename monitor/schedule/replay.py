"""`monitor replay`: history from a snapshot, as if the monitor had been running all along.

For each period (whole ISO weeks, Monday to Sunday, or calendar months covering FROM..TO): ingest the
snapshot's papers published in that period, find candidates, judge them, compute verdicts as of the
period's last day, and write that period's digest. No mail is sent.

Idempotent and resumable: a period whose digest exists is done and skipped; every step of an
unfinished period skips what it already did (stored papers, relevance marks, assessment cache keys,
unchanged verdicts), so a replay killed anywhere is finished by running it again, with nothing doubled.
Each period takes the flow's stages from fetch to report (schedule/flow.py), with `monitor run`'s
checks: when the token budget (the whole replay's) is spent or the judge answered nothing, the judged
work is kept, that period gets no verdicts or digest, and the replay stops with exit 7 or 6; running
it again resumes at that period.
Replay into its own database (`--db`): digests are one per period, shared with live runs.
"""

from __future__ import annotations

import bisect
import datetime as dt
import gzip
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from monitor.config import Settings
from monitor.errors import InputError, MonitorError
from monitor.schedule.flow import JUDGING, Fetch, Flow, Job, Scope, Steps, make_job
from monitor.schedule.lock import RunLock, locked_run
from monitor.schedule.signals import StopFlag
from monitor.store.db import Store
from monitor.store.digests import digest_path
from monitor.store.runs import save_progress
from monitor.testhooks import pause_at

log = logging.getLogger(__name__)

Every = Literal["week", "month"]


@dataclass
class PeriodResult:
    """What replaying one period did."""

    key: str
    start: dt.date
    end: dt.date
    skipped: bool = False  # its digest existed: done by an earlier replay
    papers_new: int = 0
    candidates: int = 0
    judged: int = 0
    verdict_changes: int = 0
    digest: str | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["start"], data["end"] = self.start.isoformat(), self.end.isoformat()
        return data


@dataclass
class ReplaySummary:
    """The whole replay: per-period results and totals (recorded on the run as `replay`)."""

    stage: ClassVar[str] = "replay"

    run_id: int
    source: str
    every: str
    periods: list[PeriodResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def papers(self) -> int:
        return sum(p.papers_new for p in self.periods)

    def stage_counts(self) -> dict[str, Any]:
        return self.as_dict()

    @property
    def pairs_judged(self) -> int:
        return sum(p.judged for p in self.periods)

    @property
    def digests_written(self) -> int:
        return sum(1 for p in self.periods if p.digest and not p.skipped)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "source": self.source,
            "every": self.every,
            "periods": len(self.periods),
            "skipped": sum(1 for p in self.periods if p.skipped),
            "papers": self.papers,
            "pairs_judged": self.pairs_judged,
            "digests_written": self.digests_written,
            "verdict_changes": sum(p.verdict_changes for p in self.periods),
            "seconds": round(self.seconds, 2),
        }


def replay_periods(start: dt.date, end: dt.date, every: Every) -> list[Any]:
    """The digest periods covering start..end: whole ISO weeks or calendar months."""
    from monitor.report.period import iso_week, month

    if end < start:
        raise MonitorError(f"--to {end} is before --from {start}", exit_code=3)
    periods = []
    if every == "week":
        day = start - dt.timedelta(days=start.weekday())
        while day <= end:
            year, week, _ = day.isocalendar()
            periods.append(iso_week(year, week))
            day += dt.timedelta(days=7)
    else:
        year, number = start.year, start.month
        while (year, number) <= (end.year, end.month):
            periods.append(month(year, number))
            year, number = (year + 1, 1) if number == 12 else (year, number + 1)
    return periods


def snapshot_path(settings: Settings, source: str) -> Path:
    """The file behind `--source`: the shipped (or configured) sample, or a snapshot path."""
    if source == "sample":
        from monitor.sources.sample import sample_path

        return sample_path(settings)
    path = Path(source)
    if not path.is_file():
        raise InputError(source, None, "no such snapshot file (use --source sample or a JSONL path)")
    return path


def split_snapshot(path: Path, periods: list[Any], workdir: Path) -> dict[str, Path] | None:
    """Write the snapshot's rows into one small JSONL file per period (by `published`), reading it once.

    Without this every period would parse the whole snapshot again (5 s for 22k papers, times 140
    weeks). Returns None for a file this cannot split (Atom XML); the caller then feeds the file itself
    with since/until. A row that is not valid JSON makes the file source's own reader report it, with
    its line number.
    """
    if not path.name.lower().endswith((".jsonl", ".jsonl.gz", ".json", ".ndjson", ".gz")):
        return None
    starts = [p.start for p in periods]
    files: dict[str, list[str]] = {p.key: [] for p in periods}
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
            for line in fh:
                if not line.strip():
                    continue
                published = json.loads(line).get("published")
                if not published:
                    continue
                day = dt.date.fromisoformat(str(published)[:10])
                at = bisect.bisect_right(starts, day) - 1
                if at >= 0 and day <= periods[at].end:
                    files[periods[at].key].append(line if line.endswith("\n") else line + "\n")
    except (ValueError, AttributeError):
        from monitor.sources.files import read_snapshot

        read_snapshot(path)  # raises the InputError naming the line
        return None
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read snapshot: {exc}") from None
    out: dict[str, Path] = {}
    for key, lines in files.items():
        target = workdir / f"{key}.jsonl"
        target.write_text("".join(lines), encoding="utf-8")
        out[key] = target
    return out


def _done(store: Store, key: str) -> str | None:
    with store.session() as s:
        return digest_path(s, key)


def replay(
    store: Store,
    settings: Settings,
    source: str,
    start: dt.date,
    end: dt.date,
    every: Every = "week",
    judge: str | None = "embedded",
    stop: StopFlag | None = None,
    lock: RunLock | None = None,
    on_period: Callable[[PeriodResult], None] | None = None,
) -> ReplaySummary:
    """Replay `source` over start..end (see the module docstring). Holds the run lock throughout."""
    periods = replay_periods(start, end, every)
    snapshot = snapshot_path(settings, source)
    stop = stop or StopFlag(again="monitor replay")
    began = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="monitor-replay-"))
    try:
        with locked_run(store, settings, "replay", stop.event, lock) as (run, held, _):
            summary = ReplaySummary(run_id=run.id, source=source, every=every)
            step = Steps(store, run, stop, held)
            # One job for every period: its judge is made once, and its budget carries what earlier
            # periods spent, as the token budget is the whole replay's.
            job = make_job(store, settings, run, stop, "monitor replay", held, provider=judge)
            Flow(job, step).run("claims")
            parts = split_snapshot(snapshot, periods, workdir)
            for period in periods:
                if summary.periods:
                    step.check(f"period {summary.periods[-1].key}")
                part = parts[period.key] if parts else snapshot
                result = _replay_period(Flow(job, step), period, part)
                summary.periods.append(result)
                run.record(summary)
                save_progress(store, run)
                if on_period is not None:
                    on_period(result)
            summary.seconds = time.monotonic() - began
            run.record(summary)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return summary


def _replay_period(flow: Flow, period: Any, part: Path) -> PeriodResult:
    """One period: its papers, then the flow's stages to its digest, the verdicts as of its last day."""
    job: Job = flow.job
    result = PeriodResult(period.key, period.start, period.end)
    done = _done(job.store, period.key)
    if done is not None:
        result.skipped, result.digest = True, done
        return result
    t0 = time.monotonic()
    job.fetch = Fetch(str(part), period.start, period.end)
    job.scope = Scope(period=period, as_of=period.end)  # judging: every pending pair, as `monitor run`
    # A spent budget, a judge that answered nothing or a stop request raises here: this period gets no
    # verdicts or digest, so the rerun picks it up again.
    flow.run("fetch", *JUDGING)
    pause_at(f"replay:{period.key}:before_digest")  # test-only crash point
    # The verdicts at the period's end and the digest's outcomes are settled on one load of the
    # evidence; the outcomes stage records them, and the digest reads them.
    done_by = flow.run("verdicts", "outcomes", "ask", "report")
    result.papers_new, result.candidates = done_by["fetch"].new, done_by["relevance"].candidates_added
    result.judged, result.verdict_changes = done_by["judge"].judged, len(done_by["verdicts"])
    result.digest = str(done_by["report"].paths.get("md", ""))
    result.seconds = round(time.monotonic() - t0, 2)
    return result
