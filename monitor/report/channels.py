"""Delivering digests: one channel interface, mail and webhooks its two implementations, one loop.

A `Channel` says which recent digests it has not delivered yet (`backlog`), whether it would deliver
one now (`due`: the digest's period, so its outcomes are settled before it is read), delivers it
(`send`, at most once per period: delivery.py for mail, webhooks.py for posts) and which of its
earlier deliveries may have gone out though no answer came (`unconfirmed`: neither channel sends
those again until `force`; the webhooks say so on the run, mail in its log). `deliver` is the one
loop: every channel in turn over its digests, each channel one step of the caller's (its pause
points, progress save and stop check); a failure of one digest or channel keeps none of the others
from going out, and DeliveryError (8) follows once everything was tried, carrying what went out
(`partial_on_failure`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from monitor.config import Settings
from monitor.report.delivery import DeliveryError, mail_due, raise_failures, send_digest
from monitor.report.period import Period
from monitor.report.webhooks import notify_digest, posts_due, unconfirmed_posts
from monitor.store.db import Store
from monitor.store.digests import period_keys, unsent_digests
from monitor.store.models import utcnow
from monitor.store.runs import StageNotes, partial_on_failure, partial_results
from monitor.verdicts.rollup import OutcomeRun

# An undelivered digest older than this is not delivered by a later run (it would be news from long ago).
RESEND_WINDOW = dt.timedelta(days=14)
# The commands whose digests are news; a replayed digest is history and is never delivered on its own.
NEWS = ("run", "daemon:digest")


class Channel(Protocol):
    """One way a digest goes out; `name` is its step and its counts' key on the run."""

    name: str
    verb: str  # what its counts call a delivery: "sent", "posted"

    def backlog(self, store: Store) -> list[int]:
        """Recent digests of runs (NEWS) this channel has not delivered, oldest period first."""
        ...

    def due(self, store: Store, digest_id: int, force: bool) -> Period | None:
        """The digest's period if `send` would deliver it now (None: it would not)."""
        ...

    def send(self, store: Store, digest_id: int, force: bool) -> list[str]:
        """Deliver the digest; where it went now (empty: not delivered, already done or withheld)."""
        ...

    def unconfirmed(self, store: Store, digest_id: int) -> list[str]:
        """A warning for each earlier delivery of it that may have gone out though no answer came."""
        ...


class Mail:
    """The digest by SMTP to `email.recipients` (delivery.py)."""

    name, verb = "email", "sent"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def backlog(self, store: Store) -> list[int]:
        with store.session() as s:
            return unsent_digests(s, utcnow() - RESEND_WINDOW, NEWS)

    def due(self, store: Store, digest_id: int, force: bool) -> Period | None:
        return mail_due(store, digest_id, force)

    def send(self, store: Store, digest_id: int, force: bool) -> list[str]:
        return [self.name] if send_digest(store, self.settings, digest_id, force=force) else []

    def unconfirmed(self, store: Store, digest_id: int) -> list[str]:
        # A send that may have been delivered is withheld with a logged warning (delivery.py `_withheld`);
        # the run's counts say "nothing to do" for it, as they always have.
        return []


class Webhooks:
    """The digest's summary posted to each of `report.webhooks` (webhooks.py)."""

    name, verb = "webhooks", "posted"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def backlog(self, store: Store) -> list[int]:
        with store.session() as s:  # mailed or not: each webhook keeps its own record
            return unsent_digests(s, utcnow() - RESEND_WINDOW, NEWS, mailed_too=True)

    def due(self, store: Store, digest_id: int, force: bool) -> Period | None:
        return posts_due(store, self.settings, digest_id, force)

    def send(self, store: Store, digest_id: int, force: bool) -> list[str]:
        return notify_digest(store, self.settings, digest_id, force=force)

    def unconfirmed(self, store: Store, digest_id: int) -> list[str]:
        return unconfirmed_posts(store, self.settings, digest_id)


def channels(settings: Settings, email: bool, notify: bool) -> list[Channel]:
    """The channels asked for: mail with `email`, the webhooks with `notify`."""
    return [*([Mail(settings)] if email else []), *([Webhooks(settings)] if notify else [])]


@dataclass
class Delivered:
    """What one channel delivered, recorded on the run under its name (`email`: sent, `webhooks`:
    posted), with a warning for each delivery not made again because an earlier one may have gone out."""

    stage: str
    verb: str
    digest_ids: list[int] = field(default_factory=list)
    periods: list[str] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)
    reached: list[str] = field(default_factory=list)  # where they went (the webhooks' names), unrecorded

    def stage_counts(self) -> dict[str, Any]:
        counts: dict[str, Any] = {self.verb: len(self.digest_ids), "periods": self.periods}
        return counts | ({"unconfirmed": len(self.unconfirmed)} if self.unconfirmed else {})

    def stage_notes(self) -> StageNotes:
        return StageNotes(warnings=list(self.unconfirmed))


class SettledPeriods:
    """The digest periods whose outcomes the run settled on the evidence as it still is (its outcomes
    step): the channels read those as they are. A digest of another period they deliver (an earlier
    run's, not yet sent) has its period settled here first, once, and only when it is about to be
    read: the readers never settle (report/gather.py)."""

    def __init__(
        self, store: Store, settings: Settings, run_id: int | None, done: Sequence[OutcomeRun] = ()
    ) -> None:
        self.store, self.settings, self.run_id = store, settings, run_id
        self.days = [frozenset(run.days) for run in done]

    def ensure(self, period: Period | None) -> None:
        """Settle `period`'s outcomes unless this run did (None: no digest of it is read)."""
        if period is None or frozenset(period.verdict_days) in self.days:
            return
        from monitor.report.gather import settle_period

        settle_period(self.store, self.settings, period, self.run_id)
        self.days.append(frozenset(period.verdict_days))


# How the caller runs each channel: as one of its steps (schedule's Steps), or just calls it.
Runner = Callable[[str, Callable[[], Delivered]], Delivered]


def deliver(
    store: Store,
    chosen: Sequence[Channel],
    settled: SettledPeriods,
    digest_ids: list[int] | None = None,
    force: bool = False,
    step: Runner | None = None,
) -> dict[str, Delivered]:
    """Each channel delivers `digest_ids` (None: its backlog), in turn, as a `step` of the caller's;
    `force` delivers again what went out before. DeliveryError (8) after every channel was tried."""
    run_step: Runner = step or (lambda _name, work: work())
    done: dict[str, Delivered] = {}
    failures: list[DeliveryError] = []
    for channel in chosen:
        ids = channel.backlog(store) if digest_ids is None else digest_ids
        try:
            done[channel.name] = run_step(
                channel.name, lambda c=channel, ids=ids: _deliver_each(store, c, ids, settled, force)
            )
        except DeliveryError as exc:  # the next channel is still tried
            failures.append(exc)
    # What each channel delivered before failing goes on with the error raised for all of them (a
    # caller's step that recorded it already took it off).
    with contextlib.ExitStack() as carried:
        for partial in [p for exc in failures for p in partial_results(exc)]:
            carried.enter_context(partial_on_failure(partial))
        raise_failures(failures)
    return done


def sent_and_posted(
    done: dict[str, Delivered], email: bool, notify: bool
) -> tuple[bool | None, list[str] | None]:
    """What `deliver` did with one digest, as `monitor report` says it: mailed or not, the webhooks it
    was posted to (None where not asked)."""
    sent = bool(done["email"].digest_ids) if email else None
    return sent, (done["webhooks"].reached if notify else None)


def _deliver_each(
    store: Store, channel: Channel, digest_ids: list[int], settled: SettledPeriods, force: bool
) -> Delivered:
    """One channel over its digests; DeliveryError after all were tried, carrying what went out."""
    result = Delivered(channel.name, channel.verb)
    failures: list[DeliveryError] = []
    for digest_id in digest_ids:
        try:
            settled.ensure(channel.due(store, digest_id, force))
            reached = channel.send(store, digest_id, force)
            if reached:
                result.digest_ids.append(digest_id)
                result.reached += reached
            if not force:
                result.unconfirmed += channel.unconfirmed(store, digest_id)
        except DeliveryError as exc:  # the next digest is still tried
            failures.append(exc)
    with store.session() as s:
        result.periods = period_keys(s, result.digest_ids)
    with partial_on_failure(result):
        raise_failures(failures)
    return result
