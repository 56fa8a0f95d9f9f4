"""Recording runs: every pipeline command opens a `runs` row and closes it with its outcome.

Statuses: running, ok, partial (finished with errors recorded), failed, interrupted (stopped by
SIGTERM/SIGINT after a step), abandoned (the process died without closing its row; the next run that
takes the run lock marks it so).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from monitor.files import pid_alive
from monitor.store.db import Store
from monitor.store.models import utcnow
from monitor.store.records import Run

# Commands that hold the run lock while they work: a row of theirs still "running" while we hold
# the lock can only belong to a dead process.
LOCKED_COMMANDS = ("run", "replay", "retest", "judge", "daemon:digest", "daemon:fetch")
ERROR_CHARS = 300  # one error line in `runs.errors`


@runtime_checkable
class StageCounts(Protocol):
    """What a stage returns about its work: its counts go into the run's row under `stage`. The stage
    returns it and the caller records it (`RunRecord.record`; `flow.Steps` does for every step)."""

    stage: ClassVar[str]

    def stage_counts(self) -> dict[str, Any]: ...


@dataclass
class StageNotes:
    """What a stage adds to its run besides its counts: the tokens it spent, its warnings and errors,
    and the results of stages it ran inside itself (relevance runs the LLM screen), recorded first
    under their own names. A stage with nothing to count (claims sync without claim files) returns
    only these."""

    tokens: int = 0
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    within: list[StageCounts] = field(default_factory=list)


@runtime_checkable
class NotedStage(StageCounts, Protocol):
    """A stage result that also has tokens, warnings or errors for its run."""

    def stage_notes(self) -> StageNotes: ...


# What a stage hands its caller to record on the run.
StageResult = StageCounts | StageNotes
_PARTIAL = "monitor_partial_results"  # the attribute an exception carries them in


@contextlib.contextmanager
def partial_on_failure(result: StageResult) -> Iterator[None]:
    """Around a stage's work: an exception leaving it carries `result` as it stands, so the caller
    that records the run records what the stage did before it failed (`partial_results`). The
    exception itself goes on unchanged (its type is the command's exit code)."""
    try:
        yield
    except BaseException as exc:
        carried: list[StageResult] = getattr(exc, _PARTIAL, [])
        if not any(r is result for r in carried):  # a stage and its policy may both carry it
            with contextlib.suppress(AttributeError):  # an exception type without a __dict__
                setattr(exc, _PARTIAL, [*carried, result])
        raise


def partial_results(exc: BaseException) -> list[StageResult]:
    """The stage results `exc` carries (innermost first); taken off it, so they are recorded once."""
    carried: list[StageResult] = getattr(exc, _PARTIAL, [])
    with contextlib.suppress(AttributeError):
        delattr(exc, _PARTIAL)
    return carried


@dataclass
class RunRecord:
    """The live side of a `runs` row: the recording layer (schedule, the cli commands) records on it
    what each stage returned (counts, tokens, warnings and errors); stages never see it.

    `stop` is set when the user asked the run to stop (SIGTERM/SIGINT). Long stages get `should_stop`
    and check it between batches and return early; the pipeline then ends the run "interrupted".
    """

    id: int
    command: str
    counts: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event, repr=False)
    # Whether the run still holds the run lock (set by the lock's holder); a run that lost it stops too.
    holds_lock: Callable[[], bool] | None = field(default=None, repr=False)

    def record(self, result: StageResult) -> None:
        """A stage's counts under its name, its tokens, and its warnings (each once) and errors."""
        if isinstance(result, StageNotes):
            notes = result
        else:
            notes = result.stage_notes() if isinstance(result, NotedStage) else StageNotes()
        for inner in notes.within:
            self.record(inner)
        if not isinstance(result, StageNotes):
            self.counts[result.stage] = result.stage_counts()
        self.tokens += notes.tokens
        self.warnings.extend(w for w in dict.fromkeys(notes.warnings) if w not in self.warnings)
        self.errors.extend(notes.errors)

    def lost_lock(self) -> bool:
        return self.holds_lock is not None and not self.holds_lock()

    def should_stop(self) -> bool:
        return self.stop.is_set() or self.lost_lock()


def start_run(store: Store, command: str) -> RunRecord:
    with store.session() as s:
        row = Run(command=command, status="running", host=socket.gethostname(), pid=os.getpid())
        s.add(row)
        s.flush()
        return RunRecord(id=row.id, command=command)


def run_status(store: Store, run_id: int) -> str:
    """The status a run's row ended (or is still) in."""
    with store.session() as s:
        return s.get(Run, run_id).status  # type: ignore[union-attr]


def last_judge(session: Session) -> str | None:
    """The judge (as the run recorded it) of the newest run that judged: its `judge` stage, saved after
    that step (`save_progress`), so a run's own digest reads the judge that run used."""
    judge = Run.counts[("judge", "judge")].as_string()
    return session.scalar(select(judge).where(judge.is_not(None)).order_by(Run.id.desc()).limit(1))


def save_progress(store: Store, record: RunRecord) -> None:
    """Write the counts so far, so `monitor runs` shows a long run's progress and a killed run's work."""
    with store.session() as s:
        row = s.get(Run, record.id)
        if row is not None:
            row.counts = dict(record.counts)
            row.tokens = record.tokens
            row.warnings = list(record.warnings)
            row.errors = list(record.errors)


def finish_run(store: Store, record: RunRecord, status: str) -> None:
    with store.session() as s:
        row = s.get(Run, record.id)
        if row is None:
            return
        row.status = status
        row.finished_at = utcnow()
        row.counts = dict(record.counts)
        row.tokens = record.tokens
        row.warnings = list(record.warnings)
        row.errors = list(record.errors)


@contextlib.contextmanager
def recorded_run(store: Store, command: str) -> Iterator[RunRecord]:
    """Open a run row; close it ok, partial, failed or interrupted however the block ends (recording
    what a failed stage did: `partial_on_failure`)."""
    record = start_run(store, command)
    try:
        yield record
    except BaseException as exc:
        for partial in partial_results(exc):  # what a failed stage did is still the run's
            record.record(partial)
        _finish_failed(store, record, exc)
        raise
    else:
        finish_run(store, record, "partial" if record.errors else "ok")


def _finish_failed(store: Store, record: RunRecord, exc: BaseException) -> None:
    from monitor.errors import BudgetExhausted, MonitorError

    if isinstance(exc, KeyboardInterrupt):
        finish_run(store, record, "interrupted")
        return
    record.errors.append(error_line(exc))
    if isinstance(exc, MonitorError):
        status = "interrupted" if exc.exit_code == 130 else "failed"
        finish_run(store, record, "partial" if isinstance(exc, BudgetExhausted) else status)
    else:
        finish_run(store, record, "failed")


def error_line(exc: BaseException) -> str:
    """An exception as one readable line of at most ERROR_CHARS, for a run's `errors`.

    A database error's text carries the whole statement and its parameters (kilobytes for a batch of
    papers) on further lines; the driver's own first line says what went wrong.
    """
    from monitor.errors import MonitorError

    if isinstance(exc, MonitorError):  # written for the user already
        line = " ".join(str(exc).split())
    else:
        detail = getattr(exc, "orig", None) or exc
        line = f"{exc.__class__.__name__}: " + " ".join(str(detail).strip().split("\n", 1)[0].split())
    return line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 1] + "…"


def mark_abandoned(
    store: Store, current_run: int | None, locked: Iterable[str] = LOCKED_COMMANDS
) -> list[int]:
    """Close the rows of runs that died without closing them; returns their ids.

    Call only while holding the run lock: then any other "running" row of a lock-taking command is
    dead. Rows of other commands count as dead only when they ran on this host and their pid is gone.
    """
    locked = tuple(locked)
    host = socket.gethostname()
    dead: list[int] = []
    with store.session() as s:
        rows = s.execute(select(Run.id, Run.command, Run.host, Run.pid).where(Run.status == "running")).all()
        for run_id, command, run_host, pid in rows:
            if run_id == current_run:
                continue
            if command in locked or (run_host == host and pid and pid != os.getpid() and not pid_alive(pid)):
                dead.append(run_id)
        if dead:
            s.execute(
                update(Run)
                .where(Run.id.in_(dead), Run.status == "running")
                .values(status="abandoned", finished_at=utcnow())
            )
    return dead


@dataclass
class RunSummary:
    """One row of `monitor runs`."""

    id: int
    command: str
    status: str
    started_at: str
    finished_at: str | None
    seconds: float | None
    host: str | None
    pid: int | None
    tokens: int
    counts: dict[str, Any]
    errors: list[Any]
    warnings: list[Any]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def list_runs(store: Store, limit: int = 20) -> list[RunSummary]:
    """The newest runs first."""
    with store.session() as s:
        rows = s.scalars(select(Run).order_by(Run.id.desc()).limit(limit)).all()
        return [
            RunSummary(
                id=r.id,
                command=r.command,
                status=r.status,
                started_at=r.started_at.isoformat(timespec="seconds"),
                finished_at=r.finished_at.isoformat(timespec="seconds") if r.finished_at else None,
                seconds=round((r.finished_at - r.started_at).total_seconds(), 1) if r.finished_at else None,
                host=r.host,
                pid=r.pid,
                tokens=r.tokens or 0,
                counts=dict(r.counts or {}),
                errors=list(r.errors or []),
                warnings=list(r.warnings or []),
            )
            for r in rows
        ]
