"""Evidence grounding: does the quote a judge gave really occur in the paper's title or abstract?

Both sides are normalised first (Unicode NFKC, curly quotes and dashes made plain, HTML entities undone,
whitespace collapsed, case folded), so a quote differing only in typography still counts. An
ungrounded assessment keeps its label but has its confidence cut and never counts toward OVERTURNS.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

from monitor.judge.base import Judgement, PaperText

UNGROUNDED_CONFIDENCE_FACTOR = 0.5

_TYPOGRAPHY = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "`": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
    }
)
_SPACE = re.compile(r"\s+")
# Quote marks and trailing punctuation a model often adds around a quote.
_EDGES = "\"' .,;:…"


def normalise(text: str) -> str:
    text = html.unescape(unicodedata.normalize("NFKC", text)).translate(_TYPOGRAPHY)
    # TeX line breaks and hyphenation in abstracts should not defeat a match.
    return _SPACE.sub(" ", text).strip().casefold()


@dataclass(frozen=True)
class Grounding:
    """Whether a judgement's evidence is in the paper, and the confidence it keeps."""

    grounded: bool
    confidence: float


def ground(judgement: Judgement, paper: PaperText) -> Grounding:
    """Check the evidence quote against title and abstract; UNRELATED with no quote needs none."""
    quote = normalise(judgement.evidence or "").strip(_EDGES)
    if not quote:
        if judgement.label == "UNRELATED":
            return Grounding(True, judgement.confidence)
        return Grounding(False, judgement.confidence * UNGROUNDED_CONFIDENCE_FACTOR)
    # A quote may elide with "..."; every piece must then occur, in order.
    pieces = [p.strip(_EDGES) for p in re.split(r"\s*(?:\.\.\.|…|\[\.\.\.\])\s*", quote)]
    pieces = [p for p in pieces if p]
    haystack = normalise(paper.title) + " \n " + normalise(paper.abstract)
    position = 0
    for piece in pieces:
        found = haystack.find(piece, position)
        if found < 0:
            return Grounding(False, judgement.confidence * UNGROUNDED_CONFIDENCE_FACTOR)
        position = found + len(piece)
    return Grounding(True, judgement.confidence)
