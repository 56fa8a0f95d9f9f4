"""Command line: parses arguments and calls the stage modules. No logic of its own lives here.

Each section below belongs to one stage; commands print with rich and raise MonitorError for the user.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import Annotated

import typer
from rich.console import Console

from monitor.config import Settings, load_settings
from monitor.errors import MonitorError
from monitor.store import Store, open_store

console = Console()
err_console = Console(stderr=True)

app = typer.Typer(
    name="monitor",
    help="Watch arXiv and keep dated research claims honest: which constraints are durable, which perishable.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


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
            self._settings = load_settings(self.config)
            if self.db_url:
                self._settings.database.url = self.db_url
        return self._settings

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.settings.database.url, echo=self.settings.database.echo)
        return self._store


def ctx_of(ctx: typer.Context) -> AppContext:
    return ctx.ensure_object(AppContext)


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        str | None, typer.Option("--config", "-c", help="Config file (default: ./monitor.toml if present).")
    ] = None,
    db: Annotated[str | None, typer.Option("--db", help="Database URL, overriding the config.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = AppContext(config=config, db_url=db)


# --- claims (seeds, lines, claims, anchors) ------------------------------------------------------

# --- sources (fetch, anchors verify) -------------------------------------------------------------

# --- relevance and judge (judge, eval) -----------------------------------------------------------

# --- verdicts and report (verdicts, show, report) ------------------------------------------------

# --- operations (run, runs, retest, daemon, replay) ----------------------------------------------


def main() -> None:
    """Console entry point: user errors become one line on stderr and a non-zero exit code."""
    try:
        app(standalone_mode=False)
    except MonitorError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as exc:  # click usage errors carry their own exit code
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
