"""Who may change the store through the claim board, and forms that only this app can post.

Read-only for everyone; a curator proves the token (`MONITOR_WEB__TOKEN`) once at the sign-in form,
which sets a signed cookie naming them, or sends it per request as `Authorization: Bearer TOKEN`
(scripts; the reviewer then comes from `X-Reviewer`). Every form carries a CSRF token derived from the
visitor's session cookie; a POST without the matching one is refused. Signatures use a key made at
start-up, so restarting the server signs everyone out. The token itself is never stored or logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

SESSION_COOKIE = "monitor_session"
CURATOR_COOKIE = "monitor_curator"
MAX_NAME = 100


@dataclass(frozen=True)
class Keys:
    """The server's signing key and the curator token (None: nobody may write)."""

    secret: bytes
    token: str | None

    @classmethod
    def new(cls, token: str | None) -> Keys:
        return cls(secrets.token_bytes(32), token or None)

    def _sign(self, *parts: str) -> str:
        message = "\x1f".join(parts).encode("utf-8")
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def csrf(self, session_id: str) -> str:
        return self._sign("csrf", session_id)

    def csrf_ok(self, session_id: str, given: str) -> bool:
        return bool(session_id) and hmac.compare_digest(self.csrf(session_id), given or "")

    def token_ok(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(self.token.encode(), (given or "").encode())

    def curator_cookie(self, session_id: str, name: str) -> str:
        encoded = base64.urlsafe_b64encode(name.encode("utf-8")).decode("ascii")
        return f"{encoded}.{self._sign('curator', session_id, name)}"

    def curator_name(self, session_id: str, cookie: str) -> str | None:
        """The signed-in curator's name, or None when the cookie is absent, forged or from another session."""
        if self.token is None or "." not in cookie:
            return None
        encoded, signature = cookie.rsplit(".", 1)
        try:
            name = base64.urlsafe_b64decode(encoded.encode("ascii")).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
        return name if hmac.compare_digest(self._sign("curator", session_id, name), signature) else None


def new_session_id() -> str:
    return secrets.token_urlsafe(24)


def clean_name(name: str) -> str:
    """A reviewer's name as recorded: one line, at most MAX_NAME characters."""
    return " ".join(name.split())[:MAX_NAME]
