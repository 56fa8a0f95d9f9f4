"""The flow (monitor/schedule/flow.py): stages run in their declared order whatever a command names,
and after each step the checks come once, in one order: a lost lock, the stage's own check, a stop.

The commands' own behaviour (run, replay, retest, report, judge) is tested end to end in test_ops_*.py;
these are the rules every one of them shares, on a real SQLite store and a real run lock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from monitor.config import Settings
from monitor.errors import BudgetExhausted, LockHeld
from monitor.schedule.flow import STAGES, Flow, Steps, make_job
from monitor.schedule.lock import RunLock
from monitor.schedule.signals import Interrupted, StopFlag
from monitor.store import open_store
from monitor.store.records import Lock
from monitor.store.runs import recorded_run


@pytest.fixture
def lite(sqlite_url: str):
    s = open_store(sqlite_url)
    yield s
    s.close()


def test_the_stages_are_declared_once_in_the_order_data_flows() -> None:
    assert [s.name for s in STAGES] == [
        "claims",
        "fetch",
        "relevance",
        "screen",
        "judge",
        "verdicts",
        "outcomes",
        "ask",
        "report",
        "deliver",
    ]


def test_a_flow_runs_what_it_is_asked_in_the_declared_order_and_refuses_an_unknown_stage(
    lite, tmp_path: Path
) -> None:
    settings = Settings()
    settings.paths.seeds = tmp_path / "no-seeds"  # the claims stage goes on with the stored claims
    stop = StopFlag()
    with recorded_run(lite, "retest") as run:
        flow = Flow(make_job(lite, settings, run, stop, "monitor retest"), Steps(lite, run, stop))
        with pytest.raises(ValueError, match="no such stage: judging"):
            flow.run("claims", "judging")
        assert flow.done == {}  # nothing ran
        done = flow.run("verdicts", "claims")
    assert list(done) == ["claims", "verdicts"]
    assert list(run.counts["seconds"]) == ["claims", "verdicts"]
    assert any("claims already stored" in w for w in run.warnings)


def _spent(_result: Any) -> None:
    raise BudgetExhausted("token budget 10 reached")


def test_after_a_step_a_lost_lock_comes_first_then_the_stage_s_own_check_then_a_stop(lite) -> None:
    stop = StopFlag()
    stop.request("SIGTERM")
    steps = Steps(lite, None, stop)
    with pytest.raises(Interrupted, match="stopped after judge \\(SIGTERM\\)"):
        steps("judge", lambda: 1)
    with pytest.raises(BudgetExhausted):  # a spent budget says so (exit 7), though a stop came too
        steps("judge", lambda: 1, policy=_spent)
    lock = RunLock(lite)
    lock.acquire()
    try:
        with lite.session() as s:  # as another host's run does that found this one silent too long
            s.execute(update(Lock).values(holder="otherhost:4242:feedface"))
        ran: list[int] = []
        with pytest.raises(LockHeld, match="taken over by another run during judge"):
            Steps(lite, None, stop, lock)("judge", lambda: ran.append(1), policy=_spent)
        assert ran == [1]  # the step's own work finished and is kept; the next one does not start
    finally:
        lock.release()
