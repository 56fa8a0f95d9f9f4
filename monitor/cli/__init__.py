"""Command line: parses arguments, calls a stage and prints. No logic of its own lives here.

One module a command group: `claims` (init, seeds, lines, claims), `doctor`, `sources` (fetch, anchors),
`judging` (relevance, judge, eval), `reports` (verdicts, show, report), `operations` (run, runs,
retest, daemon, replay), `review` and `web` (serve); what they print is in `show/`. Commands print with
rich and raise MonitorError for the user; `main` turns that into one line on stderr and the error's exit code.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from monitor.cli import claims, doctor, judging, operations, reports, review, sources, web
from monitor.cli.context import AppContext, err_console, flush_warnings, show_warnings_once
from monitor.errors import MonitorError


def _flags_read_as_flags(command: Any) -> None:
    """Boolean flags get an empty metavar, so `--help` shows no `<bool>` value beside them.

    typer 0.29 prints a type for every option, flags and --help included (0.28 left bool out); a flag
    takes no value, so showing one misleads. Done once, on the tree of commands the root builds.
    """
    help_option = command.get_help_option(command.context_class(command))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _flags_read_as_flags(sub)


class _RootGroup(TyperGroup):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _flags_read_as_flags(self)


app = typer.Typer(
    name="monitor",
    cls=_RootGroup,
    help=(
        "Watch arXiv and keep dated research claims honest: which constraints are durable, which perishable."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
# Unnamed, a module's commands join the root's; the order here is the order `monitor --help` lists.
for group in (claims.app, doctor.app, sources.app, judging.app, reports.app, operations.app, web.app):
    app.add_typer(group)
app.add_typer(claims.seeds_app, name="seeds")
app.add_typer(sources.anchors_app, name="anchors")
app.add_typer(review.app, name="review")


def _print_version(value: bool) -> None:
    if value:
        from monitor import __version__

        typer.echo(f"claim-monitor {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        str | None, typer.Option("--config", "-c", help="Config file (default: ./monitor.toml if present).")
    ] = None,
    db: Annotated[str | None, typer.Option("--db", help="Database URL, overriding the config.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    if verbose:  # every record as it comes, with its time and logger
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    else:
        show_warnings_once(_warning_window())
    ctx.obj = AppContext(config=config, db_url=db)


def _warning_window() -> float:
    """Seconds a repeated warning is held to be counted: the progress lines' interval (a long step
    says what went wrong as often as it says how far it is), its default when lines are off or unset."""
    from monitor.progress import DEFAULT_INTERVAL, line_interval

    try:
        return line_interval() or DEFAULT_INTERVAL
    except ValueError:  # reported where progress is shown; warnings still need a window
        return DEFAULT_INTERVAL


def main() -> None:
    """Console entry point: user errors become one line on stderr and a non-zero exit code."""
    try:
        app(standalone_mode=False)
    except MonitorError as exc:
        # The warnings held back first; one that says what the error says is counted on its line.
        times = 1 + flush_warnings(str(exc))
        shown = f"{exc} (x{times})" if times > 1 else str(exc)
        # escape: messages quote user text ("lines[0].claims", "[judge]") that rich would eat as markup
        err_console.print(f"[bold red]error:[/] {escape(shown)}", highlight=False, soft_wrap=True)
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

        # typer >= 0.20 vendors click: its usage errors are not the installed click's classes.
        if isinstance(exc, click.exceptions.ClickException | typer.TyperException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
    finally:
        flush_warnings()  # what was held back, before the process ends
