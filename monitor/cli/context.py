"""What every command group shares: the settings and store of this invocation, and the consoles."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer
from rich.console import Console

if TYPE_CHECKING:
    # Imported where first used: `monitor --help` must not pay for pydantic and SQLAlchemy.
    from monitor.config import Settings
    from monitor.store import Store

console = Console()
err_console = Console(stderr=True)

DATE = ["%Y-%m-%d"]  # the day format of every --since / --until / --from / --to option


@dataclass
class AppContext:
    """What every command needs: the settings in force and, opened on first use, the store."""

    config: str | None = None
    db_url: str | None = None
    _settings: Settings | None = field(default=None, repr=False)
    _store: Store | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from monitor.config import load_settings

            self._settings = load_settings(self.config)
            if self.db_url:
                self._settings.database.url = self.db_url
        return self._settings

    @property
    def store(self) -> Store:
        if self._store is None:
            from monitor.store import open_store

            db = self.settings.database
            self._store = open_store(db.url, echo=db.echo, busy_timeout_seconds=db.busy_timeout_seconds)
        return self._store

    @property
    def existing_store(self) -> Store:
        """The store for commands that only read: a missing database is an error, never created."""
        if self._store is None:
            from monitor.store.db import require_existing

            require_existing(self.settings.database.url)
        return self.store


def ctx_of(ctx: typer.Context) -> AppContext:
    """The root command's AppContext, which click hands down to every subcommand."""
    return ctx.ensure_object(AppContext)


def day(value: dt.datetime | None) -> dt.date | None:
    """The date of a parsed day option, or None when it was not given."""
    return value.date() if value is not None else None
