"""Start the claim board: check the token and where it may listen, then run it with uvicorn."""

from __future__ import annotations

import ipaddress

from monitor.config import Settings
from monitor.errors import ConfigError
from monitor.store.db import Store, open_store
from monitor.web.security import require_strong

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, settings: Settings) -> None:
    """A token, where one is set, is strong (`security.token_problem`): a blank or short one is refused
    wherever the board listens. Beyond this machine only with a token: others could otherwise read a
    store nobody meant to publish and see a board without an owner. (With a token, the board is
    read-only to them.)"""
    token = settings.web.token.get_secret_value() if settings.web.token is not None else None
    require_strong(token)
    if not is_loopback(host) and token is None:
        raise ConfigError(
            f"--host {host}: listening beyond 127.0.0.1 needs a curator token; "
            "set MONITOR_WEB__TOKEN in the environment (or keep the default --host 127.0.0.1)"
        )


def bounded_store(store: Store, settings: Settings) -> Store:
    """The store again, every wait bounded for serving pages: on PostgreSQL each statement is cancelled
    by the server after web.request_timeout_seconds and a pooled connection is waited for no longer."""
    if store.dialect != "postgresql":
        return store
    db = settings.database
    bounded = open_store(
        db.url,
        echo=db.echo,
        migrate_schema=False,
        statement_timeout_seconds=settings.web.request_timeout_seconds,
    )
    store.close()
    return bounded


def serve(store: Store, settings: Settings, host: str, port: int) -> None:
    try:
        import uvicorn

        from monitor.web.app import create_app
    except ImportError as exc:
        raise ConfigError(
            f"monitor serve needs the web extra ({exc.name} is missing): pip install 'claim-monitor[web]'"
        ) from None

    check_bind(host, settings)
    app = create_app(bounded_store(store, settings), settings)
    # access_log off: a request line could carry a token in a query a user pasted by mistake.
    # X-Forwarded-Proto/-For are believed from web.trusted_proxies only (docs/web.md).
    uvicorn.run(
        app,
        host=host,
        port=port,
        access_log=False,
        log_level="warning",
        proxy_headers=True,
        forwarded_allow_ips=settings.web.trusted_proxies,
    )
