"""Who may change the store through the claim board, and forms that only this app can post.

Read-only for everyone; a curator proves the token (`MONITOR_WEB__TOKEN`) once at the sign-in form, or
per request as `Authorization: Bearer TOKEN` (scripts; the reviewer then comes from `X-Reviewer`).

The visitor's session is Starlette's `SessionMiddleware`: a cookie signed (itsdangerous) with a key
made at start-up, so nobody can choose or alter its contents and restarting signs everyone out. It
holds the form token every POST must echo (CSRF) and, once signed in, the id of a sign-in this server
keeps in memory (`Guard`). The cookie alone is never enough: signing out forgets the sign-in here, so
a copy of the cookie dies with it; signing in starts a new session (new cookie, new form token), so a
session handed to the curator before sign-in is worth nothing after it.

Failed token attempts (at the form or in a header) are limited per client address and over all
clients (a moving window, `limits`); while a limit holds even the right token is refused, so guessing
runs at a handful of tries a minute. The token must be long and varied (`token_problem`), and it is
never stored or logged.
"""

from __future__ import annotations

import hmac
import math
import secrets
import threading
import time
from dataclasses import dataclass

from limits import parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from monitor.errors import ConfigError

SESSION_COOKIE = "monitor_session"
SESSION_SECONDS = 12 * 3600  # a sign-in lasts a working day at most
MAX_NAME = 100
# A token of real strength: secrets.token_urlsafe(24) gives 32 characters of 64 kinds.
MIN_TOKEN_CHARS = 20
MIN_TOKEN_DISTINCT = 10
# Failed token attempts allowed in any minute: from one address, and from all addresses together.
PER_CLIENT_FAILURES = "5/minute"
OVERALL_FAILURES = "30/minute"
MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(24))'"


def token_problem(token: str) -> str | None:
    """What makes `token` too weak to guard the board, in words (None: strong enough)."""
    if not token.strip():
        return "is empty"
    if len(token) < MIN_TOKEN_CHARS:
        return f"is {len(token)} characters long; at least {MIN_TOKEN_CHARS} are needed"
    if len(set(token)) < MIN_TOKEN_DISTINCT:
        return f"uses only {len(set(token))} different characters; at least {MIN_TOKEN_DISTINCT} are needed"
    return None


def require_strong(token: str | None) -> None:
    """Refuse a curator token that is set but weak: a blank one too, which would read as "no token"
    in one place and as "a token" in another."""
    if token is None:
        return
    if problem := token_problem(token):
        raise ConfigError(
            f"MONITOR_WEB__TOKEN {problem} (at least {MIN_TOKEN_CHARS} characters, {MIN_TOKEN_DISTINCT} "
            f"of them different); make one with: {MAKE_TOKEN} (or unset it for a read-only board)"
        )


def new_form_token() -> str:
    return secrets.token_hex(16)


def clean_name(name: str) -> str:
    """A reviewer's name as recorded: one line, at most MAX_NAME characters."""
    return " ".join(name.split())[:MAX_NAME]


@dataclass(frozen=True)
class Wait:
    """A failed-attempt limit in force: how long until the next try, and whose limit it is."""

    seconds: int
    everyone: bool  # the limit over all clients, not this address's own

    def message(self) -> str:
        whose = "on this board (from all addresses together)" if self.everyone else "from your address"
        return f"Too many failed sign-in attempts {whose}: wait {self.seconds} s, then try again."


@dataclass(frozen=True)
class _SignIn:
    name: str
    expires: float


class Guard:
    """The curator token, the sign-ins in force, and the limits on failed attempts."""

    def __init__(
        self,
        token: str | None,
        per_client: str = PER_CLIENT_FAILURES,
        overall: str = OVERALL_FAILURES,
    ) -> None:
        require_strong(token)
        self.token = token
        self._sign_ins: dict[str, _SignIn] = {}
        self._lock = threading.Lock()
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._limits = ((parse(per_client), False), (parse(overall), True))

    @staticmethod
    def _whom(client: str, everyone: bool) -> str:
        return "*" if everyone else client

    def wait(self, client: str) -> Wait | None:
        """The limit that holds for `client` now, or None when it may try the token."""
        for item, everyone in self._limits:
            who = self._whom(client, everyone)
            if not self._limiter.test(item, "token", who):
                reset = self._limiter.get_window_stats(item, "token", who).reset_time
                return Wait(max(1, math.ceil(reset - time.time())), everyone)
        return None

    def token_ok(self, given: str, client: str) -> bool:
        """Whether `given` is the token; a wrong one counts against `client` and against everyone.
        Call `wait` first: during a wait no answer may be given at all."""
        if self.token is None:
            return False
        if hmac.compare_digest(self.token.encode(), (given or "").encode()):
            return True
        for item, everyone in self._limits:
            self._limiter.hit(item, "token", self._whom(client, everyone))
        return False

    def sign_in(self, name: str) -> str:
        """A new sign-in for `name`; its id goes into the session cookie."""
        sign_in_id = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            self._sign_ins = {k: v for k, v in self._sign_ins.items() if v.expires > now}
            self._sign_ins[sign_in_id] = _SignIn(name, now + SESSION_SECONDS)
        return sign_in_id

    def signed_in(self, sign_in_id: object) -> str | None:
        """The curator's name for a sign-in this server still holds, else None."""
        if not isinstance(sign_in_id, str):
            return None
        with self._lock:
            found = self._sign_ins.get(sign_in_id)
        return found.name if found is not None and found.expires > time.time() else None

    def sign_out(self, sign_in_id: object) -> None:
        if isinstance(sign_in_id, str):
            with self._lock:
                self._sign_ins.pop(sign_in_id, None)
