"""Each line's arXiv search terms, for `arxiv.query_mode = "topics"` and for showing what a line watches.

In order of preference: `[arxiv.topics]` in the config (line id -> terms), the line's own `topics`
(from the user's claim file), the union of its active claims' `topics`, and only then terms derived
from its claims' text and its anchors' cited titles: the most frequent content words and two-word
phrases, so a line about "entropy collapse in RLVR" watches `"entropy collapse"` and `rlvr`.
"""

from __future__ import annotations

from collections import Counter

from monitor.config import Settings
from monitor.store.claims import active_claims_of_line
from monitor.store.db import Store
from monitor.store.lines import active_anchor_titles, active_lines
from monitor.text import content_words

DERIVED_TERMS = 6
# Words nearly every arXiv abstract uses, so no search term (on top of the English STOP_WORDS).
SEARCH_NOISE = frozenset({
    "paper", "papers", "model", "models", "method", "methods", "result", "results", "show", "shows", "shown",
    "use", "used", "using", "new",
})  # fmt: skip


def _content_words(text: str) -> list[str]:
    """A search term's words: content words of three or more characters with a letter in them (a year or
    a count is no term), hyphenated compounds whole ("chain-of-thought" is one term)."""
    return [
        w
        for w in content_words(text, hyphenated=True)
        if w not in SEARCH_NOISE and len(w) > 2 and any(c.isalpha() for c in w)
    ]


def derive_terms(texts: list[str], limit: int = DERIVED_TERMS) -> list[str]:
    """Phrases shared by two or more texts first (by how many share them), then the commonest words."""
    phrases: Counter[str] = Counter()
    words: Counter[str] = Counter()
    for text in texts:
        tokens = _content_words(text)
        words.update(set(tokens))
        phrases.update({f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)})
    ranked = [p for p, n in phrases.most_common() if n >= 2] + [w for w, _ in words.most_common()]
    chosen: list[str] = []
    for term in ranked:
        if any(term in c.split() or term == c for c in chosen):
            continue
        chosen.append(term)
        if len(chosen) >= limit:
            break
    return chosen


def line_topics(store: Store, settings: Settings) -> dict[str, list[str]]:
    """Active line id -> its search terms (see the module docstring for where they come from)."""
    configured = settings.arxiv.topics
    result: dict[str, list[str]] = {}
    with store.session() as s:
        for line in active_lines(s):
            if configured.get(line.id):
                result[line.id] = list(configured[line.id])
                continue
            if line.topics:
                result[line.id] = list(line.topics)
                continue
            claims = active_claims_of_line(s, line.id)
            claim_topics = sorted({t for c in claims for t in (c.topics or [])})
            if claim_topics:
                result[line.id] = claim_topics
                continue
            anchors = active_anchor_titles(s, line.id)
            texts = [c.text for c in claims] + [t for t in anchors if t]
            result[line.id] = derive_terms(texts)
    return result
