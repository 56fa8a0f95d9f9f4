"""Graceful stop: SIGTERM or SIGINT asks a run to stop after its current step.

The first signal sets a flag; the pipeline checks it between steps and the judge between batches
(through `RunRecord.should_stop()`), so work already done is committed and the run row ends
"interrupted" with exit code 130. A second signal stops at once (KeyboardInterrupt); that is safe too,
because every stage commits in small transactions and a rerun finishes the work.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from monitor.errors import MonitorError

log = logging.getLogger(__name__)


class Interrupted(MonitorError):
    """The run stopped early because it was asked to (SIGTERM/SIGINT); finished steps are kept."""

    exit_code = 130


class StopFlag:
    """A stop request shared by the signal handler, the pipeline and the stages."""

    def __init__(self, event: threading.Event | None = None, again: str = "monitor run") -> None:
        self.event = event or threading.Event()
        self.signal_name: str | None = None
        self.again = again  # the command that goes on from where this one stopped

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    def request(self, why: str = "stop requested") -> None:
        self.signal_name = self.signal_name or why
        self.event.set()

    def check(self, after: str) -> None:
        """Raise Interrupted if a stop was asked for; `after` names the step just finished."""
        if self.event.is_set():
            raise Interrupted(
                f"stopped after {after} ({self.signal_name or 'stop requested'}); "
                f"finished work is kept, run `{self.again}` again to go on"
            )


@contextlib.contextmanager
def graceful_stop(flag: StopFlag) -> Iterator[StopFlag]:
    """Route SIGTERM/SIGINT to `flag` while the block runs (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def handle(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if flag.requested:
            log.warning("%s again: stopping now", name)
            raise KeyboardInterrupt
        log.warning("%s: stopping after the current step (send again to stop now)", name)
        flag.request(name)

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    for sig in previous:
        signal.signal(sig, handle)
    try:
        yield flag
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
