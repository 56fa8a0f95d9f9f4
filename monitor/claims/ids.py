"""Stable identifiers: a claim's id is a hash of its normalised text, a line's of its question.

Because the id depends on nothing but the text, adding, removing or reordering other claims never
renames one, and the same note cited by three lines is one claim.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFKC, whitespace collapsed, casefolded, trailing periods dropped: what "the same text" means."""
    folded = _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()
    return folded.rstrip(".").rstrip()


def _short_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()[:12]


def claim_id(text: str) -> str:
    """`c-` and the first 12 hex digits of the sha256 of the normalised claim text."""
    return "c-" + _short_hash(text)


def line_id(question: str) -> str:
    """`l-` and the first 12 hex digits of the sha256 of the normalised question."""
    return "l-" + _short_hash(question)


def text_hash(text: str) -> str:
    """sha256 (64 hex) of the text exactly as a judge sees it, surrounding whitespace aside.

    The id survives edits that normalisation ignores (case, spacing); this hash does not, so caches
    keyed on it (relevance marks, assessments) notice every change of wording.
    """
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()
