"""Text we store and later print: free of control characters and of unencodable code points; and the words
in a text, by the one tokeniser and the one stop-word list every word-level check shares.

Paper titles and abstracts (every source) and claim texts pass through `printable` on the way in.
A control character is never content in them, but it does harm downstream: ESC starts terminal
escape sequences (a clear-screen, a fake OSC 8 hyperlink in `monitor show`), NUL is refused by
PostgreSQL text columns, and a lone surrogate (JSON's "\\ud800") cannot be encoded as UTF-8 at all.

Words (`words`, `content_words`, `STOP_WORDS`): a word is a run of letters and digits of any script, so
"naïve" and "α" are words and "f_θ" is two; the source check (verdicts/sources.py), the anchor title check
(sources/anchors.py), the derived search terms (sources/topics.py), the quote check (judge/grounding.py) and
the words the digest shows (judge/embedded.py) all read words so. Relevance is the exception: BM25 reads
bm25s's stemmed tokens (relevance/bm25.py), frozen with its reference lexicon.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, and the C1 controls (U+0080-U+009F, which include CSI
# U+009B and OSC U+009D: single-character escape introducers on many terminals).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
_WORD = re.compile(r"[^\W_]+")
_HYPHENATED = re.compile(r"[^\W_]+(?:-[^\W_]+)*")  # "chain-of-thought" whole
# English function words: every word one of the checks above, or bm25s's English list, dropped before
# they shared this one (re-measure the source check's cut on a change: bench/source_check.py).
STOP_WORDS = frozenset({
    "a", "across", "after", "also", "an", "and", "are", "as", "at", "be", "before", "between", "both",
    "but", "by", "can", "do", "does", "each", "for", "from", "has", "have", "how", "if", "in", "into", "is",
    "it", "its", "less", "many", "may", "might", "more", "most", "much", "no", "not", "of", "on", "one",
    "only", "or", "other", "our", "over", "per", "same", "some", "such", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "through", "to", "two", "under", "up", "us",
    "very", "via", "vs", "was", "we", "were", "what", "when", "where", "whether", "which", "while", "who",
    "why", "will", "with", "within", "without"
})  # fmt: skip


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


def words(text: str, *, lower: bool = True, hyphenated: bool = False) -> list[str]:
    """The words of `text` in order (see the module doc), lower-cased unless `lower` is false (a reader is
    shown a word as written); `hyphenated` keeps "chain-of-thought" as one word."""
    return (_HYPHENATED if hyphenated else _WORD).findall(text.lower() if lower else text)


def content_words(text: str, *, hyphenated: bool = False) -> list[str]:
    """The lower-cased words of `text` that are not `STOP_WORDS`, in order."""
    return [w for w in words(text, hyphenated=hyphenated) if w not in STOP_WORDS]
