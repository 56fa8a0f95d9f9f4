"""`monitor report`: the flow's report end (outcomes, ask, report, deliver) for one period.

The period's outcomes are settled once (the outcomes stage), the ask stage gets what the digest shows
from an LLM, the digest is written, and with `--email` / `--notify` the digest just written is mailed
and posted by the deliver stage `monitor run` ends with (once per period; again with `--force`).
Recorded as a `report` run; under the run lock when it mails, posts or may call an LLM.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from monitor.config import Settings
from monitor.report.digest import DigestResult
from monitor.schedule.flow import REPORTING, Delivery, Flow, Scope, Steps, make_job
from monitor.schedule.signals import StopFlag
from monitor.store.db import Store


@dataclass
class ReportRequest:
    """What `monitor report` was asked to do."""

    period: str | None = None  # week | month | 2026-W12 | 2026-03; None: settings.report.period
    since: dt.date | None = None  # a custom period's first day
    until: dt.date | None = None  # and its last
    formats: list[str] | None = None
    email: bool = False  # also when settings.report.email says so
    notify: bool = False
    force: bool = False


def report_sends_or_spends(settings: Settings, email: bool, notify: bool) -> bool:
    """Whether `monitor report` mails, posts or may call an LLM (proposed wordings, research questions):
    then it takes the run lock, as every command that sends or spends does, so a second report or a
    run beside it cannot mail or post the digest again, or pay for the same answers twice."""
    return email or notify or settings.llm_configured()


def report_once(store: Store, settings: Settings, request: ReportRequest) -> DigestResult:
    """Write the digest of the period asked for and deliver it as asked; the result says whether it
    was mailed and where it was posted. DeliveryError (8) after mail and webhooks were both tried."""
    from monitor.report.channels import sent_and_posted
    from monitor.report.digest import choose_period
    from monitor.schedule.lock import run_lock
    from monitor.store.runs import recorded_run

    mail = request.email or settings.report.email
    locked = run_lock(store, settings, report_sends_or_spends(settings, mail, request.notify))
    with locked as lock, recorded_run(store, "report") as run:
        chosen = choose_period(store, request.period or settings.report.period, request.since, request.until)
        stop = StopFlag(run.stop, again="monitor report")
        job = make_job(store, settings, run, stop, "monitor report", lock, formats=request.formats)
        job.scope = Scope(period=chosen)
        job.delivery = Delivery(mail, request.notify, this_digest=True, force=request.force)
        done = Flow(job, Steps(store, run, stop, lock)).run(*REPORTING)
        result: DigestResult = done["report"]
        result.sent, result.posted = sent_and_posted(done["deliver"], mail, request.notify)
    return result
