"""Command line: parses arguments, calls a stage and prints. No logic of its own lives here.

One module a command group: `claims` (init, seeds, lines, claims), `sources` (fetch, anchors),
`judging` (relevance, judge, eval), `reports` (verdicts, show, report), `operations` (run, runs,
retest, daemon, replay) and `review`. Commands print with rich and raise MonitorError for the user;
`main` turns that into one line on stderr and the error's exit code.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer
from rich.markup import escape

from monitor.cli import claims, judging, operations, reports, review, sources
from monitor.cli.context import AppContext, err_console
from monitor.errors import MonitorError

app = typer.Typer(
    name="monitor",
    help=(
        "Watch arXiv and keep dated research claims honest: which constraints are durable, which perishable."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
# Unnamed, a module's commands join the root's; the order here is the order `monitor --help` lists.
for group in (claims.app, sources.app, judging.app, reports.app, operations.app):
    app.add_typer(group)
app.add_typer(claims.seeds_app, name="seeds")
app.add_typer(sources.anchors_app, name="anchors")
app.add_typer(review.app, name="review")


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


def main() -> None:
    """Console entry point: user errors become one line on stderr and a non-zero exit code."""
    try:
        app(standalone_mode=False)
    except MonitorError as exc:
        # escape: messages quote user text ("lines[0].claims", "[judge]") that rich would eat as markup
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
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
