"""How long to wait before retrying a request: the server's Retry-After, else exponential back-off.

One policy for every client that retries (the arXiv session, the LLM transport): the wait doubles per
attempt up to a cap, a random share of it is dropped so clients that failed together do not retry in
step, and it is never shorter than what the server asked for.
"""

from __future__ import annotations

import email.utils
import math
import random
import time


def retry_after(value: str | None, ms: str | None = None) -> float | None:
    """Seconds a response asks to wait: its `Retry-After` (seconds or an HTTP date), or `ms`, the
    non-standard `retry-after-ms` some APIs send, which wins when readable.

    None when it asks nothing readable; a date in the past is 0 (go now).
    """
    for text, scale in ((ms, 1000.0), (value, 1.0)):
        text = (text or "").strip()
        if not text:
            continue
        try:
            seconds = float(text) / scale
        except ValueError:
            if scale != 1.0:
                continue
            try:
                seconds = email.utils.parsedate_to_datetime(text).timestamp() - time.time()
            except (TypeError, ValueError):
                return None
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def backoff_seconds(
    attempt: int, first: float, cap: float, jitter: float, asked: float | None = None
) -> float:
    """The wait before retry `attempt` (0: the first retry).

    `first` doubled per attempt, at most `cap`, times a random factor in [1 - jitter, 1]; never less
    than `asked` (the server's Retry-After).
    """
    delay = min(cap, first * 2**attempt) * random.uniform(1 - jitter, 1)
    return delay if asked is None else max(delay, asked)
