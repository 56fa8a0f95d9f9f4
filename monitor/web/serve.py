"""Start the claim board: check where it may listen, then run it with uvicorn."""

from __future__ import annotations

import ipaddress

from monitor.config import Settings
from monitor.errors import ConfigError
from monitor.store.db import Store

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, settings: Settings) -> None:
    """Beyond this machine only with a curator token: others could otherwise read a store nobody meant
    to publish and see a board without an owner. (With a token, the board is read-only to them.)"""
    if not is_loopback(host) and settings.web.token is None:
        raise ConfigError(
            f"--host {host}: listening beyond 127.0.0.1 needs a curator token; "
            "set MONITOR_WEB__TOKEN in the environment (or keep the default --host 127.0.0.1)"
        )


def serve(store: Store, settings: Settings, host: str, port: int) -> None:
    try:
        import uvicorn

        from monitor.web.app import create_app
    except ImportError as exc:
        raise ConfigError(
            f"monitor serve needs the web extra ({exc.name} is missing): pip install 'claim-monitor[web]'"
        ) from None

    check_bind(host, settings)
    # access_log off: a request line could carry a token in a query a user pasted by mistake.
    uvicorn.run(create_app(store, settings), host=host, port=port, access_log=False, log_level="warning")
