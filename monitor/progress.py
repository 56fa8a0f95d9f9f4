"""Progress bars for the long steps (fetch, relevance, judge): on a terminal only, silent in cron.

A bar draws on stderr, because stdout carries summaries that scripts parse, and it is transient, so a
finished step leaves only its summary line. Callers decide whether to show one with `on_terminal()`;
the daemon and `monitor run` under cron pass False and get a no-op.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class Advance(Protocol):
    def __call__(self, n: int = 1, description: str | None = None) -> None: ...


def on_terminal() -> bool:
    """True when a person is watching stderr. `MONITOR_NO_PROGRESS=1` turns bars off (e.g. in tmux logs)."""
    return sys.stderr.isatty() and os.environ.get("MONITOR_NO_PROGRESS", "") in ("", "0")


def _noop(n: int = 1, description: str | None = None) -> None:
    return None


@contextmanager
def progress_bar(description: str, total: int | None, unit: str, enabled: bool) -> Iterator[Advance]:
    """Yield `advance(n, description=None)`; draws a bar of `total` `unit`s when `enabled`."""
    if not enabled:
        yield _noop
        return
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
