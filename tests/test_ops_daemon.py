"""The daemon: jobs kept in the database, fired on schedule, missed runs coalesced, SIGTERM handled."""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import time
from pathlib import Path

import pytest
from ops_helpers import MONITOR, env, make_settings, write_config, write_snapshot
from sqlalchemy import func, inspect, select, table

from monitor.schedule.daemon import JOBS_TABLE, build_scheduler
from monitor.store import open_store
from monitor.store.records import Run

QUIET = {"digest_cron": "0 7 * * mon", "fetch_cron": "0 6 * * *", "timezone": "UTC"}


def _daemon_runs(store, command: str = "daemon:fetch") -> list[Run]:
    with store.session() as s:
        return list(s.scalars(select(Run).where(Run.command == command).order_by(Run.id)))


def test_jobs_live_in_the_database_and_survive_a_restart(tmp_path: Path, db_url: str) -> None:
    store = open_store(db_url)
    settings = make_settings(tmp_path, db_url, schedule=QUIET)
    scheduler = build_scheduler(store, settings)
    first = {job.id: job.next_run_time for job in scheduler.get_jobs()}
    scheduler.shutdown(wait=False)
    assert set(first) == {"digest", "fetch"}
    assert first["digest"].weekday() == 0 and first["digest"].hour == 7  # Monday 07:00
    assert first["fetch"].hour == 6
    assert inspect(store.engine).has_table(JOBS_TABLE)

    # Restart with the same schedule: the stored jobs and their next run times are kept.
    scheduler = build_scheduler(store, settings)
    assert {job.id: job.next_run_time for job in scheduler.get_jobs()} == first
    scheduler.shutdown(wait=False)

    # A changed schedule reschedules; "off" removes the job.
    changed = make_settings(
        tmp_path, db_url, schedule=QUIET | {"digest_cron": "30 8 * * fri", "fetch_cron": "off"}
    )
    scheduler = build_scheduler(store, changed)
    jobs = {job.id: job.next_run_time for job in scheduler.get_jobs()}
    scheduler.shutdown(wait=False)
    assert set(jobs) == {"digest"}
    assert (jobs["digest"].weekday(), jobs["digest"].hour, jobs["digest"].minute) == (4, 8, 30)


@pytest.mark.slow
def test_schedule_fires_at_the_configured_times(tmp_path: Path, db_url: str) -> None:
    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot, limit=5)
    store = open_store(db_url)
    every_second = {
        "digest_cron": "off",
        "fetch_cron": "*/2 * * * * *",
        "timezone": "UTC",
        "source": str(snapshot),
    }
    settings = make_settings(tmp_path, db_url, schedule=every_second)
    scheduler = build_scheduler(store, settings)
    scheduler.resume()
    deadline = time.monotonic() + 90
    while len(_daemon_runs(store)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    scheduler.shutdown(wait=True)
    runs = _daemon_runs(store)
    assert len(runs) >= 2, [(r.status, r.errors) for r in runs]
    assert all(r.status == "ok" for r in runs), [(r.status, r.errors) for r in runs]
    # One after the other (one worker, one run lock), not all at once.
    assert all(a.finished_at <= b.started_at for a, b in zip(runs, runs[1:], strict=False))
    assert runs[0].counts["fetch"]["new"] == 5 and runs[1].counts["fetch"]["new"] == 0


@pytest.mark.slow
def test_missed_runs_are_coalesced_into_one(tmp_path: Path, db_url: str) -> None:
    """A machine that slept through five hourly runs runs the job once when it wakes."""
    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot, limit=3)
    store = open_store(db_url)
    hourly = {
        "digest_cron": "off",
        "fetch_cron": "0 * * * *",
        "timezone": "UTC",
        "source": str(snapshot),
        "misfire_grace_seconds": 86400,  # every missed time is within grace: only coalescing saves us
    }
    settings = make_settings(tmp_path, db_url, schedule=hourly)
    scheduler = build_scheduler(store, settings)
    slept_since = dt.datetime.now(dt.UTC) - dt.timedelta(hours=5, minutes=30)
    scheduler.modify_job("fetch", next_run_time=slept_since)
    scheduler.resume()
    deadline = time.monotonic() + 90
    while not _daemon_runs(store) and time.monotonic() < deadline:
        time.sleep(0.2)
    next_time = scheduler.get_job("fetch").next_run_time
    # Uncoalesced, the missed times would run one after another in this same submission: shutting
    # down with wait=True lets every one of them finish before the runs are counted.
    scheduler.shutdown(wait=True)
    runs = _daemon_runs(store)
    assert len(runs) == 1
    assert runs[0].status == "ok"
    assert next_time > dt.datetime.now(dt.UTC)


@pytest.mark.slow
def test_daemon_process_shuts_down_cleanly_on_sigterm(tmp_path: Path, sqlite_url: str) -> None:
    config = write_config(tmp_path, sqlite_url, schedule=QUIET)
    proc = subprocess.Popen(
        [MONITOR, "--config", str(config), "daemon"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "next run" in first, first + proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "stopping (SIGTERM)" in out


def test_bad_cron_is_a_config_error(tmp_path: Path, sqlite_url: str) -> None:
    config = write_config(tmp_path, sqlite_url, schedule={"digest_cron": "0 25 * * *"})
    done = subprocess.run(
        [MONITOR, "--config", str(config), "daemon"], capture_output=True, text=True, env=env(), timeout=60
    )
    assert done.returncode == 2
    assert "schedule.digest_cron" in done.stderr and "0 25 * * *" in done.stderr


def test_jobs_table_holds_one_row_per_job(tmp_path: Path, sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    for _ in range(2):
        build_scheduler(store, make_settings(tmp_path, sqlite_url, schedule=QUIET)).shutdown(wait=False)
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(table(JOBS_TABLE))).scalar() == 2
