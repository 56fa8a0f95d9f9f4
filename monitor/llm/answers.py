"""Reading a model's reply: lenient JSON extraction, refusal detection, and the error for a bad answer.

A reply is untrusted: it is parsed leniently (code fences, prose around the JSON) and then validated
strictly by the stage that asked; what was wrong goes back to the model in one corrective turn.
"""

from __future__ import annotations

import json
import re
from typing import Any

from monitor.errors import JudgeError


class InvalidAnswer(ValueError):
    """The model's reply is not a valid answer; the message says what is wrong, for the corrective turn."""


class AnswerRejected(JudgeError):
    """The server answered, but not usably for these pairs (refused, or invalid after a correction).

    `pair_fault` tells the judge runner the pairs themselves are the trouble, so repeat failures get parked.
    """

    pair_fault = True


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def load_json(text: str) -> Any:
    """The JSON in a reply: the whole text, a fenced block, or the outermost {...}."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    raise InvalidAnswer("the reply is not a JSON object")


_REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry, but|i can(?:'|no)?t (?:help|assist|comply|do that)|i cannot|"
    r"i (?:won'?t|will not) (?:help|assist))",
    re.IGNORECASE,
)


def looks_like_refusal(text: str | None) -> bool:
    """A reply that opens with an apology or "I can't help", rather than an answer."""
    return bool(text) and bool(_REFUSAL.match(text.strip()))
