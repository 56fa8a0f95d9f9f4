"""Cron expressions from the config as APScheduler triggers."""

from __future__ import annotations

import datetime as dt

from apscheduler.triggers.cron import CronTrigger

OFF = "off"


def cron_trigger(expr: str, timezone: dt.tzinfo | str | None) -> CronTrigger | None:
    """A trigger for a crontab line (5 fields; or 6 with seconds first), None for "off".

    Raises ValueError naming the expression when it does not parse.
    """
    text = expr.strip()
    if text.lower() == OFF:
        return None
    fields = text.split()
    try:
        if len(fields) == 5:
            return CronTrigger.from_crontab(text, timezone=timezone)
        if len(fields) == 6:
            second, minute, hour, day, month, day_of_week = fields
            return CronTrigger(
                second=second,
                minute=minute,
                hour=hour,
                day=day,
                month=month,
                day_of_week=day_of_week,
                timezone=timezone,
            )
    except ValueError as exc:
        raise ValueError(f"cron expression {expr!r}: {exc}") from None
    raise ValueError(f'cron expression {expr!r}: expected 5 fields (or 6 with seconds first), or "off"')
