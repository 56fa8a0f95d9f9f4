"""Recording runs: every pipeline command opens a `runs` row and closes it with its outcome."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from monitor.store.db import Store
from monitor.store.models import Run, utcnow


@dataclass
class RunRecord:
    """The live side of a `runs` row: stages add counts, tokens, warnings and errors as they go."""

    id: int
    command: str
    counts: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def add(self, stage: str, values: dict[str, Any]) -> None:
        self.counts[stage] = values


def start_run(store: Store, command: str) -> RunRecord:
    with store.session() as s:
        row = Run(command=command, status="running", host=socket.gethostname(), pid=os.getpid())
        s.add(row)
        s.flush()
        return RunRecord(id=row.id, command=command)


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
    """Open a run row; close it ok, failed or interrupted however the block ends."""
    record = start_run(store, command)
    try:
        yield record
    except KeyboardInterrupt:
        finish_run(store, record, "interrupted")
        raise
    except BaseException as exc:
        record.errors.append(f"{exc.__class__.__name__}: {exc}")
        finish_run(store, record, "failed")
        raise
    else:
        finish_run(store, record, "partial" if record.errors else "ok")
