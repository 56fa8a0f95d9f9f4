"""`monitor daemon`: the pipeline on a schedule, with APScheduler 3.

Two jobs, from `[schedule]`: `digest` (default Monday 07:00 local: the full run with digest and email)
and `fetch` (default daily 06:00: fetch, relevance, judge, verdicts). The jobs live in the same database
(SQLAlchemyJobStore on the store's engine, table `apscheduler_jobs`), so their next run times survive a
restart: a daemon that was down (or a laptop that slept) past a run time runs the job once when it comes
back, if that is within `misfire_grace_seconds`; coalescing makes several missed times one run. Each job
runs through the same run lock as `monitor run`, so cron and the daemon never overlap.

SIGTERM/SIGINT: no new jobs start; a running job stops after its current step; the daemon exits 0.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger

from monitor.config import Settings
from monitor.crontab import cron_trigger
from monitor.errors import LockHeld, MonitorError
from monitor.schedule.signals import StopFlag, graceful_stop
from monitor.store.db import Store

log = logging.getLogger(__name__)

JOBS_TABLE = "apscheduler_jobs"
JOB_FUNC = "monitor.schedule.daemon:scheduled_run"  # by name, so the stored job survives upgrades


@dataclass
class DaemonContext:
    """What the scheduled jobs run with; set by `build_scheduler` (jobs store only their kind)."""

    store: Store
    settings: Settings
    stop: StopFlag


_context: DaemonContext | None = None


def scheduled_run(kind: str) -> int | None:
    """One scheduled job: `digest` (full run) or `fetch` (no digest). Returns the run id, if it ran."""
    from monitor.schedule.pipeline import RunOptions, run_once

    ctx = _context
    if ctx is None:  # a stored job picked up by a process that is not the daemon
        raise RuntimeError("scheduled_run called outside `monitor daemon`")
    if ctx.stop.requested:
        return None
    options = RunOptions(
        source=ctx.settings.schedule.source,
        report=kind == "digest",
        command=f"daemon:{kind}",
    )
    try:
        outcome = run_once(ctx.store, ctx.settings, options, stop=ctx.stop)
    except LockHeld as exc:
        log.warning("%s job skipped: %s", kind, exc)
        return None
    except MonitorError as exc:  # recorded in its run row; the daemon carries on
        log.error("%s job failed: %s", kind, exc)
        return None
    log.info("%s job: run %s %s in %.1fs", kind, outcome.run_id, outcome.status, outcome.seconds)
    return outcome.run_id


def _zone(settings: Settings) -> dt.tzinfo:
    if settings.schedule.timezone:
        from zoneinfo import ZoneInfo

        return ZoneInfo(settings.schedule.timezone)
    from tzlocal import get_localzone

    return get_localzone()


def wanted_jobs(settings: Settings) -> dict[str, tuple[BaseTrigger, str]]:
    """job id -> (trigger, name); the name carries the expression so a config change is noticed."""
    zone = _zone(settings)
    jobs: dict[str, tuple[BaseTrigger, str]] = {}
    for kind, expr in (("digest", settings.schedule.digest_cron), ("fetch", settings.schedule.fetch_cron)):
        trigger = cron_trigger(expr, zone)
        if trigger is not None:
            jobs[kind] = (trigger, f"{kind} [{expr}] {zone}")
    return jobs


def build_scheduler(store: Store, settings: Settings, stop: StopFlag | None = None) -> BackgroundScheduler:
    """A scheduler over the store's database with the config's jobs, started paused.

    Call `.resume()` to let jobs run. A stored job whose schedule is unchanged keeps its stored next
    run time (that is how a missed run is caught up); a changed one is rescheduled; a job switched
    "off" is removed.
    """
    global _context
    _context = DaemonContext(store, settings, stop or StopFlag())
    scheduler = BackgroundScheduler(
        jobstores={"default": SQLAlchemyJobStore(engine=store.engine, tablename=JOBS_TABLE)},
        # One worker: jobs queue behind each other instead of fighting for the run lock.
        executors={"default": ThreadPoolExecutor(1)},
        job_defaults={
            "coalesce": True,
            "max_instances": 1,
            "misfire_grace_time": settings.schedule.misfire_grace_seconds,
        },
        timezone=_zone(settings),
    )
    scheduler.add_listener(_on_event, EVENT_JOB_MISSED | EVENT_JOB_ERROR)
    scheduler.start(paused=True)
    wanted = wanted_jobs(settings)
    for job in scheduler.get_jobs():
        if job.id not in wanted:
            log.info("removing job %s (no longer configured)", job.id)
            job.remove()
    for job_id, (trigger, name) in wanted.items():
        existing = scheduler.get_job(job_id)
        if existing is not None and existing.name == name:
            continue
        scheduler.add_job(
            JOB_FUNC, trigger=trigger, id=job_id, name=name, kwargs={"kind": job_id}, replace_existing=True
        )
    return scheduler


def _on_event(event: JobExecutionEvent) -> None:
    if event.code == EVENT_JOB_MISSED:
        log.warning(
            "job %s missed its run at %s (beyond misfire_grace_seconds)",
            event.job_id,
            event.scheduled_run_time,
        )
    elif event.exception is not None:
        log.error("job %s raised %s: %s", event.job_id, event.exception.__class__.__name__, event.exception)


def next_runs(scheduler: BackgroundScheduler) -> list[tuple[str, dt.datetime | None]]:
    return [(job.id, job.next_run_time) for job in scheduler.get_jobs()]


def run_daemon(store: Store, settings: Settings, announce: object = print) -> None:
    """Run until SIGTERM/SIGINT: schedule the jobs, then wait; shut down after the running job's step."""
    stop = StopFlag()
    with graceful_stop(stop):
        scheduler = build_scheduler(store, settings, stop)
        if not scheduler.get_jobs():
            scheduler.shutdown(wait=False)
            raise MonitorError(
                'both schedule.digest_cron and schedule.fetch_cron are "off": nothing to run', exit_code=2
            )
        for job_id, when in next_runs(scheduler):
            announce(f"{job_id}: next run {when:%Y-%m-%d %H:%M:%S %Z}" if when else f"{job_id}: paused")
        scheduler.resume()
        try:
            while not stop.event.wait(1.0):
                pass
        finally:
            why = stop.signal_name or "requested"
            announce(f"stopping ({why}); waiting for a running job's current step")
            scheduler.shutdown(wait=True)
