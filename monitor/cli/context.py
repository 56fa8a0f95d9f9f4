"""What every command group shares: the settings and store of this invocation, and the consoles."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

from monitor.terminal import WarningTally

if TYPE_CHECKING:
    # Imported where first used: `monitor --help` must not pay for pydantic and SQLAlchemy.
    from monitor.config import Settings
    from monitor.store import Store

console = Console()
err_console = Console(stderr=True)

DATE = ["%Y-%m-%d"]  # the day format of every --since / --until / --from / --to option

JUDGE_HELP = "embedded | openai (default: judge.provider from the config)."
FORMATS = ("md", "html")  # the digest's --format values


def judge_choice(value: str | None) -> str | None:
    """The --judge value: a provider name (`local` read as `embedded`), or a usage error naming it."""
    from monitor.config import embedded_alias
    from monitor.judge.factory import PROVIDERS

    value = embedded_alias(value, "--judge")
    if value is not None and value not in PROVIDERS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(PROVIDERS)}", param_hint="--judge")
    return value


def check_formats(values: list[str] | None) -> list[str] | None:
    """The --format values, or a usage error naming the bad one."""
    if not values:
        return None
    for value in values:
        if value not in FORMATS:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(FORMATS)}", param_hint="--format")
    return list(values)


def judge_or_old_name(judge: str | None, provider: str | None) -> str | None:
    """`--judge`, or the old `--provider` still accepted with a one-line notice (both: they must agree)."""
    if provider is None:
        return judge
    err_console.print("note: --provider is now --judge (the old name still works)", highlight=False)
    provider = judge_choice(provider)
    if judge is not None and judge != provider:
        raise typer.BadParameter(f"--judge {judge} and --provider {provider} disagree", param_hint="--judge")
    return provider


def warn(line: str) -> None:
    """One warning line on stderr (user text escaped: rich would eat `[judge]` as markup)."""
    err_console.print(f"[yellow]warning:[/] {escape(line)}", highlight=False, soft_wrap=True)


_tally: WarningTally | None = None


def show_warnings_once(window: float) -> None:
    """Logged warnings reach stderr once per cause and window, counted (`terminal.WarningTally`)."""
    global _tally
    root = logging.getLogger()
    if _tally is not None and _tally in root.handlers:
        return
    _tally = WarningTally(warn, window)
    root.addHandler(_tally)


def log_each_warning() -> None:
    """A service's log: each warning as it happens, timed, one line each (`monitor serve`: an outage is a
    line per refused request, not a count printed minutes later)."""
    global _tally
    root = logging.getLogger()
    if _tally is not None:
        root.removeHandler(_tally)
        _tally = None
    if not root.handlers:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def flush_warnings(error: str | None = None) -> int:
    """Print the warnings held back; with `error`, how many held ones it repeats (left unprinted)."""
    return _tally.flush(fold=error) if _tally is not None else 0


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
