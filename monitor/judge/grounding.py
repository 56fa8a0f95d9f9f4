"""Evidence grounding: is the quote a judge gave a real span of the paper's title or abstract?

Both sides are normalised first (Unicode NFKC, curly quotes and dashes made plain, HTML entities undone,
whitespace collapsed, case folded), so a quote differing only in typography still counts. A quote
grounds only if it is one contiguous span (no "..." joins: pieces found far apart prove nothing), long
enough to carry a finding (a clause, not a number or a term), and not the claim's own words (an
abstract repeating the claim's wording shows the topic, not a stance). An ungrounded assessment keeps
its label for the record but counts toward no verdict (docs/verdicts.md).
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

from monitor.judge.base import Judgement
from monitor.llm.texts import PaperText
from monitor.text import words

UNGROUNDED_CONFIDENCE_FACTOR = 0.5
MIN_QUOTE_WORDS = 4  # a clause: "1", "Table 2" or "GRPO" prove nothing
MIN_QUOTE_CHARS = 20

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
_ELISION = re.compile(r"\.\.\.|…|\[\s*\.\.\.\s*\]")
# Quote marks and trailing punctuation a model often adds around a quote.
_EDGES = "\"' .,;:…"


def normalise(text: str) -> str:
    text = html.unescape(unicodedata.normalize("NFKC", text)).translate(_TYPOGRAPHY)
    # TeX line breaks and hyphenation in abstracts should not defeat a match.
    return _SPACE.sub(" ", text).strip().casefold()


@dataclass(frozen=True)
class Grounding:
    """Whether a judgement's evidence is a real span of the paper, the confidence it keeps, and why not."""

    grounded: bool
    confidence: float
    reason: str = ""  # why not: "no quote", "elided", "too short", "claim's own words", "not found"


def ground(judgement: Judgement, paper: PaperText, claim: str | None = None) -> Grounding:
    """Check the evidence quote against title and abstract (and the claim); UNRELATED needs no quote."""
    quote = normalise(judgement.evidence or "").strip(_EDGES)
    reason = quote_problem(quote, paper, claim)
    if not quote and judgement.label == "UNRELATED":
        return Grounding(True, judgement.confidence)
    if reason:
        return Grounding(False, judgement.confidence * UNGROUNDED_CONFIDENCE_FACTOR, reason)
    return Grounding(True, judgement.confidence)


def quote_problem(quote: str, paper: PaperText, claim: str | None = None) -> str:
    """Why a normalised quote is not evidence ("" when it is)."""
    if not quote:
        return "no quote"
    if quote not in normalise(paper.title) and quote not in normalise(paper.abstract):
        return "elided" if _ELISION.search(quote) else "not found"
    said = words(quote)
    if len(said) < MIN_QUOTE_WORDS or len(quote) < MIN_QUOTE_CHARS:
        return "too short"
    if claim is not None:
        claim_text = normalise(claim)
        if quote in claim_text or set(said) <= set(words(claim_text)):
            return "claim's own words"
    return ""
