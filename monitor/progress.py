"""Progress of the long steps (fetch, relevance, judge) on stderr: a bar at a terminal, plain lines elsewhere.

Progress goes to stderr, because stdout carries summaries that scripts parse. At a terminal it is a
transient rich bar, so a finished step leaves only its summary line. Anywhere else (cron, a pipe, a
redirect) a step that lasts longer than `MONITOR_PROGRESS_INTERVAL` seconds (default 10) prints a plain
line that often, `progress: judge 1200/8929 pairs, 40s elapsed`, and one `ended after` line, so a
log is never silent for minutes; a shorter step prints nothing. `MONITOR_PROGRESS_INTERVAL=0` turns the
lines off, `MONITOR_NO_PROGRESS=1` turns bars and lines off. The daemon passes `enabled=False`.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

INTERVAL_VARIABLE = "MONITOR_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 10.0  # seconds between plain progress lines


class Advance(Protocol):
    def __call__(self, n: int = 1, description: str | None = None) -> None: ...


def line_interval() -> float:
    """Seconds between plain progress lines (0: none). Raises ValueError naming the variable when bad."""
    raw = os.environ.get(INTERVAL_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_INTERVAL
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"{INTERVAL_VARIABLE}={raw!r}: expected seconds, a number from 0 (0: no lines)")
    return seconds


def progress_wanted() -> bool:
    """False when `MONITOR_NO_PROGRESS=1` asks for no progress at all (no bars, no lines)."""
    return os.environ.get("MONITOR_NO_PROGRESS", "") in ("", "0")


def _noop(n: int = 1, description: str | None = None) -> None:
    return None


@contextmanager
def progress_bar(description: str, total: int | None, unit: str, enabled: bool) -> Iterator[Advance]:
    """Yield `advance(n, description=None)`; shows `total` `unit`s (None: unknown) when `enabled`."""
    if not enabled:
        yield _noop
    elif sys.stderr.isatty():
        with _bar(description, total, unit) as advance:
            yield advance
    elif (interval := line_interval()) > 0:
        with _lines(description, total, unit, interval) as advance:
            yield advance
    else:
        yield _noop


@contextmanager
def _bar(description: str, total: int | None, unit: str) -> Iterator[Advance]:
    from rich.console import Console  # only at a terminal; config.py imports this module
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    counter = MofNCompleteColumn() if total is not None else TextColumn("{task.completed}")
    columns = (TextColumn("{task.description}"), BarColumn(), counter, TextColumn(unit), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: int = 1, description: str | None = None) -> None:
            if description is None:
                bar.update(task, advance=n)
            else:
                bar.update(task, advance=n, description=description)

        yield advance


class _Lines:
    """The state a plain-line reporter prints; a timer thread prints it every `interval` seconds, so a
    step that hangs on one slow call (an LLM answering for minutes) still shows it is alive."""

    def __init__(self, description: str, total: int | None, unit: str) -> None:
        self.description, self.total, self.unit = description, total, unit
        self.done = 0
        self.started = time.monotonic()
        self.printed = 0
        self.lock = threading.Lock()  # the judge's workers may advance from several threads

    def advance(self, n: int = 1, description: str | None = None) -> None:
        with self.lock:
            self.done += n
            if description is not None:
                self.description = description

    def line(self, when: str) -> str:
        """`when`: "elapsed" (a tick), "ended" or "failed" (the step's last line)."""
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        seconds = f"{time.monotonic() - self.started:.0f}s"
        timing = f"{seconds} elapsed" if when == "elapsed" else f"{when} after {seconds}"
        return f"progress: {self.description} {count} {self.unit}, {timing}"

    def emit(self, when: str) -> None:
        print(self.line(when), file=sys.stderr, flush=True)
        self.printed += 1


@contextmanager
def _lines(description: str, total: int | None, unit: str, interval: float) -> Iterator[Advance]:
    state = _Lines(description, total, unit)
    finished = threading.Event()

    def tick() -> None:
        while not finished.wait(interval):
            state.emit("elapsed")

    timer = threading.Thread(target=tick, name=f"progress {description}", daemon=True)
    timer.start()
    when = "failed"
    try:
        yield state.advance
        when = "ended"
    finally:
        finished.set()
        timer.join()
        if state.printed:  # a step that printed progress says it ended; a short one stays silent
            state.emit(when)
