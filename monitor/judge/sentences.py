"""Split an abstract into sentences that are verbatim slices of it, so evidence can be quoted exactly."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A boundary candidate: sentence-final punctuation, optional closing quote or bracket, whitespace, then
# something that can start a sentence.
_BOUNDARY = re.compile(r"[.!?][\"')\]]*\s+(?=[A-Z0-9(\[\"'])")
# Words after which a full stop rarely ends the sentence.
_ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "et",
        "al",
        "etc",
        "vs",
        "cf",
        "fig",
        "figs",
        "eq",
        "eqs",
        "ref",
        "refs",
        "approx",
        "no",
        "nos",
        "dr",
        "mr",
        "ms",
        "prof",
        "sec",
        "resp",
        "ca",
        "st",
        "jr",
        "sr",
        "inc",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    ]
)
_MIN_CHARS = 25  # shorter pieces ("Methods." headers, stray fragments) join the next sentence


@dataclass(frozen=True)
class Sentence:
    """One sentence: its text exactly as it stands in the source, and where."""

    text: str
    start: int
    end: int


def _ends_with_abbreviation(text: str, dot: int) -> bool:
    word = re.search(r"([A-Za-z][A-Za-z.]*)$", text[:dot])
    if word is None:
        return False
    token = word.group(1).rstrip(".").lower()
    # Single capitals are initials or species abbreviations ("E. coli").
    return token in _ABBREVIATIONS or (len(token) == 1 and text[word.start(1)].isupper())


def split_sentences(text: str) -> list[Sentence]:
    """Sentences of `text` in order; each `Sentence.text` equals `text[start:end]`."""
    cuts: list[int] = []
    for match in _BOUNDARY.finditer(text):
        if text[match.start()] == "." and _ends_with_abbreviation(text, match.start()):
            continue
        cuts.append(match.end())
    pieces: list[tuple[int, int]] = []
    start = 0
    for cut in [*cuts, len(text)]:
        if cut > start:
            pieces.append((start, cut))
            start = cut
    merged: list[tuple[int, int]] = []
    for start, end in pieces:
        if merged and len(text[merged[-1][0] : merged[-1][1]].strip()) < _MIN_CHARS:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    if len(merged) > 1 and len(text[merged[-1][0] : merged[-1][1]].strip()) < _MIN_CHARS:
        last = merged.pop()
        merged[-1] = (merged[-1][0], last[1])
    sentences: list[Sentence] = []
    for start, end in merged:
        chunk = text[start:end]
        lead = len(chunk) - len(chunk.lstrip())
        trail = len(chunk.rstrip())
        if trail > lead:
            sentences.append(Sentence(chunk[lead:trail], start + lead, start + trail))
    return sentences
