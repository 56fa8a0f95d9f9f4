"""The bounded worker loop every stage that calls a model runs: at most `workers` calls in flight, a
token budget kept by reservation, and a clean stop.

Before a unit starts, its estimated tokens are reserved; a unit that would take spent + reserved
past the budget waits for calls in flight (they tell what they really cost) and, when nothing is in
flight, ends the loop with `budget_exhausted`. A stop signal (SIGTERM/SIGINT) or a fatal error (a
server that refuses everything) starts no further call; calls in flight finish and are handed on,
queued ones are dropped. Each finished unit goes to `finish` with its result or its MonitorError.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from monitor.errors import MonitorError

U = TypeVar("U")
R = TypeVar("R")


@dataclass
class LoopEnd(Generic[U]):
    """How the loop ended: what was never started, and why."""

    left: list[U] = field(default_factory=list)
    budget_exhausted: bool = False
    stopped: bool = False  # the stop signal came while units were queued
    fatal: str = ""  # the first fatal error's message


@dataclass
class Budget(Generic[U]):
    """A token budget: `limit` (None: none), what is `spent` so far, and a unit's estimated `cost`."""

    limit: int | None
    spent: Callable[[], int]
    cost: Callable[[U], int]


class _Loop(Generic[U, R]):
    def __init__(
        self,
        units: Sequence[U],
        call: Callable[[U], R],
        finish: Callable[[U, R | MonitorError], None],
        budget: Budget[U],
        should_stop: Callable[[], bool] | None,
        before: Callable[[U, deque[U]], None] | None,
    ) -> None:
        self.queue: deque[U] = deque(units)
        self.call, self.finish, self.budget = call, finish, budget
        self.should_stop, self.before = should_stop, before
        self.in_flight: dict[Future[R], U] = {}
        self.reserved = 0
        self.end: LoopEnd[U] = LoopEnd()

    def _stopping(self) -> bool:
        if self.end.fatal:
            return True
        if self.queue and self.should_stop is not None and self.should_stop():
            self.end.stopped = True
        return self.end.stopped

    def _fits(self, unit: U) -> bool:
        limit = self.budget.limit
        if limit is None or self.budget.spent() + self.reserved + self.budget.cost(unit) <= limit:
            return True
        if not self.in_flight:
            self.end.budget_exhausted = True  # nothing running and the next call does not fit
        return False  # else wait: finished calls tell us what they really cost

    def fill(self, pool: ThreadPoolExecutor, workers: int) -> None:
        stopping = self._stopping()
        while self.queue and len(self.in_flight) < workers and not self.end.budget_exhausted and not stopping:
            unit = self.queue[0]
            if not self._fits(unit):
                break
            self.queue.popleft()
            if self.before is not None:
                self.before(unit, self.queue)
            self.reserved += self.budget.cost(unit)
            self.in_flight[pool.submit(self.call, unit)] = unit

    def drain(self) -> None:
        finished, _ = wait(self.in_flight, return_when=FIRST_COMPLETED)
        for future in finished:
            unit = self.in_flight.pop(future)
            self.reserved -= self.budget.cost(unit)
            try:
                result: R | MonitorError = future.result()
            except MonitorError as exc:
                # A bad key, an unknown model or a server that is not there fails every call alike:
                # stop instead of repeating it.
                if getattr(exc, "fatal", False) and not self.end.fatal:
                    self.end.fatal = str(exc)
                result = exc
            self.finish(unit, result)


def run_bounded(
    units: Sequence[U],
    call: Callable[[U], R],
    finish: Callable[[U, R | MonitorError], None],
    *,
    workers: int,
    name: str,
    budget: Budget[U] | None = None,
    should_stop: Callable[[], bool] | None = None,
    before: Callable[[U, deque[U]], None] | None = None,
) -> LoopEnd[U]:
    """Run `call` on each unit (see the module docstring); `before(unit, queue)` runs as a unit starts."""
    loop = _Loop(units, call, finish, budget or Budget(None, lambda: 0, lambda _unit: 0), should_stop, before)
    workers = max(1, workers)
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name))
        # On an interrupt, queued calls are dropped; calls in flight finish but are not handed on.
        stack.callback(pool.shutdown, wait=True, cancel_futures=True)
        while loop.queue or loop.in_flight:
            loop.fill(pool, workers)
            if not loop.in_flight:
                break
            loop.drain()
    loop.end.left = list(loop.queue)
    return loop.end
