"""`monitor serve`: parses where to listen and starts the claim board (monitor/web/)."""

from __future__ import annotations

from typing import Annotated

import typer

from monitor.cli.context import console, ctx_of, log_each_warning

app = typer.Typer()


@app.command("serve")
def serve_command(
    ctx: typer.Context,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to listen on (default: web.host, 127.0.0.1).")
    ] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port (default: web.port, 8765).")] = None,
) -> None:
    """The claim board in a browser: verdicts, claims, papers, review and digests. Read-only unless a
    request carries the curator token (MONITOR_WEB__TOKEN); beyond 127.0.0.1 only with one."""
    from monitor.web.serve import check_bind, serve

    app_ctx = ctx_of(ctx)
    settings = app_ctx.settings
    log_each_warning()
    host = host or settings.web.host
    port = settings.web.port if port is None else port
    check_bind(host, settings)  # before opening the store: a refused bind changes nothing
    mode = "curators may sign in" if settings.web.token else "read-only: no MONITOR_WEB__TOKEN"
    console.print(f"claim board on http://{host}:{port}/ ({mode}); Ctrl-C stops it", highlight=False)
    serve(app_ctx.existing_store, settings, host, port)
