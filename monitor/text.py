"""Text we store and later print: free of control characters and of unencodable code points.

Paper titles and abstracts (every source) and claim texts pass through `printable` on the way in.
A control character is never content in them, but it does harm downstream: ESC starts terminal
escape sequences (a clear-screen, a fake OSC 8 hyperlink in `monitor show`), NUL is refused by
PostgreSQL text columns, and a lone surrogate (JSON's "\\ud800") cannot be encoded as UTF-8 at all.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, and the C1 controls (U+0080-U+009F, which include CSI
# U+009B and OSC U+009D: single-character escape introducers on many terminals).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def printable(text: str) -> str:
    """`text` without control characters (tab and newline kept), a lone surrogate as U+FFFD."""
    return _SURROGATE.sub(REPLACEMENT, _CONTROL.sub("", text))


def unstorable(text: str) -> str | None:
    """What in `text` a database cannot store as it is, in words (None: nothing)."""
    if "\x00" in text:
        return "a NUL character"
    if _SURROGATE.search(text):
        return "a lone UTF-16 surrogate"
    return None


def unprintable(text: str) -> str | None:
    """What `printable` would change in `text`, in words (None: nothing), for a message."""
    return unstorable(text) or ("control characters" if _CONTROL.search(text) else None)


def quoted(text: str, limit: int = 60) -> str:
    """What a user typed, quoted for an error message: printable, and cut after `limit` characters with
    the full length said (a pasted 70 KB id is not echoed back whole)."""
    if len(text) <= limit:
        return repr(printable(text))
    return f"{printable(text[:limit])!r}… ({len(text):,} characters)"
