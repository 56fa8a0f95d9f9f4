"""`monitor run` (and the daemon's runs): every stage of the flow once, under the run lock.

claims -> fetch -> relevance -> screen -> judge -> verdicts -> outcomes -> ask -> report -> deliver, as
schedule/flow.py declares them and runs each (pause points, records, progress saves, stop and lock
checks). What is particular to `monitor run` is here: which stages its options select, the period its
digest reports (chosen once the papers are in, and recorded before judging so the digest's cost counts
every token spent for it), which papers it judges (`RunOptions.judge_scope`) and what the run did.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from monitor.config import Settings
from monitor.errors import JudgeError
from monitor.schedule.flow import JUDGING, REPORTING, Delivery, Fetch, Flow, Scope, Steps, make_job
from monitor.schedule.lock import RunLock, locked_run
from monitor.schedule.signals import StopFlag
from monitor.store.db import Store
from monitor.store.runs import RunRecord, run_status

if TYPE_CHECKING:
    from monitor.judge.base import Judge
    from monitor.report.digest import DigestResult
    from monitor.report.period import Period


@dataclass
class RunOptions:
    """What `monitor run` was asked to do."""

    source: str = "api"  # api | rss | sample | a snapshot file
    fetch: bool = True
    report: bool = True
    email: bool | None = None  # None: as settings.report.email says
    judge: str | None = None  # local | openai; None: settings.judge.provider
    since: dt.date | None = None
    until: dt.date | None = None
    import_claims: bool = True
    command: str = "run"
    progress: bool = False  # on stderr for fetch, relevance and judge: bars at a terminal, else lines
    # Which pending pairs to judge: "all", or "period": those of papers published from the first day of
    # the period the digest reports. None: "period" when fetching the shipped sample (the quickstart:
    # a digest of its last week in a minute, not the whole sample judged; docs/operations.md), else "all".
    judge_scope: Literal["all", "period"] | None = None


@dataclass
class RunOutcome:
    """What a run did: its row id, final status, per-stage counts and the digest it wrote."""

    run_id: int
    status: str
    counts: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    digest_id: int | None = None
    digest_paths: list[str] = field(default_factory=list)
    emailed: list[int] = field(default_factory=list)
    posted: list[int] = field(default_factory=list)  # digests posted to a webhook
    abandoned: list[int] = field(default_factory=list)
    seconds: float = 0.0


def run_once(
    store: Store,
    settings: Settings,
    options: RunOptions | None = None,
    stop: StopFlag | None = None,
    lock: RunLock | None = None,
) -> RunOutcome:
    """One pipeline run. Takes the run lock unless `lock` (already held) is given (see `locked_run`).

    Raises LockHeld (75) when another run holds the lock, Interrupted (130) when stopped by a signal,
    BudgetExhausted (7) when the token budget ran out and JudgeError (6) when the judge answered
    nothing (judged work is kept, and no verdicts or digest are written on half the evidence),
    DeliveryError (8), and the stages' own MonitorErrors. The run row records counts, tokens, errors
    and timing whatever happens.
    """
    opts, stop, started = options or RunOptions(), stop or StopFlag(), time.monotonic()
    if opts.report and settings.report.webhooks:
        from monitor.report.webhooks import resolve_hooks

        resolve_hooks(settings)  # a bad webhook is exit 2 before anything is fetched or paid for
    email = settings.report.email if opts.email is None else opts.email
    with locked_run(store, settings, opts.command, stop.event, lock) as (run, held, abandoned):
        job = make_job(
            store, settings, run, stop, "monitor run", held, provider=opts.judge, progress=opts.progress
        )
        job.fetch = Fetch(opts.source, opts.since, opts.until)
        job.delivery = Delivery(email=email, notify=bool(settings.report.webhooks))
        flow = Flow(job, Steps(store, run, stop, held))
        flow.run(*(["claims"] if opts.import_claims else []), *(["fetch"] if opts.fetch else []))
        job.scope, judged = _digest_scope(store, settings, opts, run)  # the papers are in: it stays
        flow.run(*JUDGING)
        if judged is not None:
            judged.count_unjudged(store, settings, job.judge_in_use())
            run.record(judged)
        flow.run("verdicts", *(REPORTING if job.scope.period is not None else ()))
        check_final(flow.done.get("report"))
    outcome = RunOutcome(run.id, run_status(store, run.id), dict(run.counts), run.tokens, abandoned=abandoned)
    if "report" in flow.done:
        outcome.digest_id = flow.done["report"].digest_id
        outcome.digest_paths = [str(p) for p in flow.done["report"].paths.values()]
    delivered = flow.done.get("deliver", {})
    outcome.emailed = delivered["email"].digest_ids if "email" in delivered else []
    outcome.posted = delivered["webhooks"].digest_ids if "webhooks" in delivered else []
    outcome.seconds = round(time.monotonic() - started, 2)
    return outcome


def _digest_scope(
    store: Store, settings: Settings, opts: RunOptions, run: RunRecord
) -> tuple[Scope, JudgeScope | None]:
    """The run's scope: the period its digest reports (with `opts.report`), recorded before judging so
    what judging spends is the digest's cost even if it stops there, and with judge_scope "period" the
    day its judged papers start from (recorded as `scope`, returned to count what it left)."""
    from monitor.report.digest import choose_period

    period = _scoped_period(store, settings, opts)
    judged = JudgeScope(period.key, period.start) if period is not None else None
    if judged is not None:
        run.record(judged)
    if opts.report and period is None:
        period = choose_period(store, settings.report.period)
    if period is not None:
        run.record(DigestPeriod(period.key))
    return Scope(since=judged.judged_from if judged is not None else None, period=period), judged


def check_final(digest: DigestResult | None) -> None:
    """Raise JudgeError (6) when the digest just written rests on a minority of its period's pairs
    (most failed or were parked): it is written and says so, but not mailed or posted, and the run fails, so a
    judge that answered almost nothing never passes for a quiet week (docs/operations.md)."""
    if digest is None or digest.stats.get("final", True):
        return
    tally = digest.stats["judging"]
    screen = f", {tally['awaiting_screen']} awaiting the LLM screen" if tally.get("awaiting_screen") else ""
    raise JudgeError(
        f"the judge answered only {tally['judged']} of the {tally['pairs']} candidate pairs of "
        f"{digest.period.key} ({tally['failed']} failed, {tally['parked']} parked{screen}): the digest says "
        "so and is not mailed or posted; a run with a working judge rewrites it "
        "(`monitor retest` asks parked pairs again)"
    )


@dataclass
class DigestPeriod:
    """The period whose digest `monitor run` writes, recorded on the run as `period` before it judges,
    so the digest's cost line counts every token the run spent for it, failed and invalid answers
    included, even when the run stopped before writing it (store/digests.py `period_runs`)."""

    stage: ClassVar[str] = "period"

    key: str

    def stage_counts(self) -> dict[str, Any]:
        return {"key": self.key}


@dataclass
class JudgeScope:
    """Which papers `monitor run` judged (`RunOptions.judge_scope`): recorded on the run as `scope`,
    with the candidate pairs (and papers) published earlier that were left pending."""

    stage: ClassVar[str] = "scope"

    period: str
    judged_from: dt.date
    unjudged: tuple[int, int] | None = None  # (pairs, papers), counted after judging

    def count_unjudged(self, store: Store, settings: Settings, judge: Judge) -> None:
        """The pairs published earlier left pending for the judge that ran (not those below a
        triage-only judge's cut: not its work)."""
        from monitor.judge.work import count_unjudged

        self.unjudged = count_unjudged(store, settings, judge, self.judged_from - dt.timedelta(days=1))

    def stage_counts(self) -> dict[str, Any]:
        counts: dict[str, Any] = {"period": self.period, "judged_from": self.judged_from.isoformat()}
        if self.unjudged is not None:
            counts |= {"unjudged_pairs": self.unjudged[0], "unjudged_papers": self.unjudged[1]}
        return counts


def _scoped_period(store: Store, settings: Settings, opts: RunOptions) -> Period | None:
    """The period whose papers `monitor run` judges, which its digest then reports (RunOptions.judge_scope);
    None: every pending pair is judged.

    Relevance still scans every paper (its marks are by row, not by day), so the pairs left out stay
    pending for `monitor judge`, which judges them all. Recorded in the run's counts as "scope".
    """
    from monitor.report.digest import reported_period

    scope = opts.judge_scope or ("period" if opts.fetch and opts.source == "sample" else "all")
    if scope == "all" or not opts.report:
        return None
    return reported_period(store, settings.report.period)
