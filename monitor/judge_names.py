"""The judges' names, and the one question asked of a name where only a stored row is at hand.

Code that holds a judge asks it what it can do (`Judge.triage_only`, `second_look`, `billed`:
monitor/judge/base.py). Code that holds only stored rows (an assessment's `judge` column, a run's
recorded judge) asks `triage_only_judge` here, the one place that knows which names those are.

The embedded judge is "embedded" in code, config, the command line and output. Its assessments and
failures are stored, and their cache keys built, under "local", the name it first had. Renaming the
rows would mean recomputing every cache key, and a key hashes the claim's text as it was judged, which
the store no longer holds once a claim is reworded; so the old name stays in the rows and only
`stored_judge_name` and `shown_judge` below see it (and `legacy_judge_name`, which reads it from a user).
"""

from __future__ import annotations

EMBEDDED = "embedded"
# A judge's stored name where it differs from its name: what its rows and cache keys carry.
_STORED = {EMBEDDED: "local"}
_SHOWN = {stored: name for name, stored in _STORED.items()}
# Judges whose stances are triage: they rank papers close to a claim and assert no stance a digest can
# sign; their labels wait for a curator, and a large library's candidates are read only down to a cut.
_TRIAGE_ONLY = frozenset({EMBEDDED})


def stored_judge_name(name: str) -> str:
    """The name a judge's rows and cache keys carry ("embedded" -> "local"; any other as it is)."""
    return _STORED.get(name, name)


def shown_judge(name: str) -> str:
    """A judge's name as output says it: a stored name read back ("local" -> "embedded")."""
    return _SHOWN.get(name, name)


def legacy_judge_name(value: object) -> bool:
    """Whether a user wrote the embedded judge's old name (read as "embedded", with a notice)."""
    return isinstance(value, str) and value in _SHOWN


def triage_only_judge(name: str) -> bool:
    """Whether the judge named `name` (stored or shown) is triage-only: the question for code that has
    only a stored row; code holding the judge asks `Judge.triage_only`."""
    return shown_judge(name) in _TRIAGE_ONLY


def triage_only_stored() -> list[str]:
    """The stored names of the triage-only judges (for a query over stored rows)."""
    return sorted(stored_judge_name(name) for name in _TRIAGE_ONLY)
