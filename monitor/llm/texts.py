"""What a model reads (a paper version, claims) and the record one request leaves (an Exchange).

`PaperText` and `ClaimText` are the one paper type and the one claim type from relevance through the
judge: relevance scores them, and the screen and the judge are asked about the claims it ranked, read the
one way (monitor/relevance/text.py `load_claims`), so what is ranked is what is asked about.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

# What a prompt carries of a paper at most: arXiv caps abstracts at 1,920 characters, so only malformed
# or hostile text is cut (a megabyte abstract would otherwise be sent, and paid for, verbatim).
MAX_TITLE_CHARS = 500
MAX_ABSTRACT_CHARS = 4000


def clip(text: str, limit: int, what: str) -> str:
    """`text` cut to `limit` characters, with a marker saying so (the model should know it reads a part)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [{what} truncated: {limit:,} of {len(text):,} characters shown]"


@dataclass(frozen=True)
class PaperText:
    """A paper version: the parts a model may read, and where relevance read it from."""

    arxiv_id: str
    version: int
    title: str
    abstract: str
    published: str | None = None  # ISO date the paper appeared, shown to LLM judges beside the claim's date
    # paper_versions.id, for a version read from the store by relevance: how far its scan marks advance
    # (0: not read from that table, as the judge's and the screen's papers are not).
    row_id: int = 0

    def for_prompt(self) -> PaperText:
        """This paper as a prompt carries it: title and abstract capped (MAX_*_CHARS)."""
        return replace(
            self,
            title=clip(self.title, MAX_TITLE_CHARS, "title"),
            abstract=clip(self.abstract, MAX_ABSTRACT_CHARS, "abstract"),
        )


@dataclass(frozen=True)
class ClaimText:
    """A claim: what a model sees of it (its stable id, its text, the date it was made) and what the
    relevance stage searches with (the note title, the questions and topics of the lines citing it).

    `text_hash` (monitor/claims/ids.py `text_hash` of `text`; "" where none was computed) names the
    wording the relevance marks and an assessment belong to. The note title and the questions add the
    words a short claim leaves implicit: on the 22,120-paper snapshot at ~2% of pairs, with each query
    word counted once, they lift the hybrid's dev recall from 0.69 (claim text alone) to 0.72
    (bench/relevance_bench.py --context).
    """

    id: str
    text: str
    date_text: str | None = None
    text_hash: str = ""
    title: str | None = None
    questions: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()

    def query_text(self, context: Iterable[str] = ("title", "questions")) -> str:
        """The text relevance scores papers against: the claim with the `context` asked for (its note
        title first, then the claim, the line questions other than the title, the topics). Its bytes are
        part of the cached query embeddings' keys (relevance/select.py), so it must not drift."""
        parts: list[str] = []
        wanted = set(context)
        if "title" in wanted and self.title:
            parts.append(self.title)
        parts.append(self.text)
        if "questions" in wanted:
            parts.extend(q for q in self.questions if q and q != self.title)
        if "topics" in wanted:
            parts.extend(self.topics)
        return " ".join(p.strip() for p in parts if p and p.strip())


@dataclass
class Exchange:
    """One request to a model and its outcome, handed to the recorder for the llm_exchanges table."""

    provider: str
    model: str
    prompt_version: str
    request: dict[str, Any]
    response: str | None = None
    response_format: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's prefix cache
    latency_ms: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # (prompt, completion) tokens estimated locally, for a reply whose server reported no usage
    estimated: tuple[int, int] | None = None


# The recorder stores an Exchange and returns its row id (or None when nothing is stored).
Recorder = Callable[[Exchange], int | None]
