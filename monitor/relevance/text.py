"""The texts the relevance stage compares: a paper's title and abstract, a claim and its context."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


def paper_text(title: str, abstract: str) -> str:
    return f"{title.strip()}. {abstract.strip()}"


@dataclass(frozen=True)
class ClaimQuery:
    """A claim as the relevance stage searches for it.

    `text_hash` identifies the claim text the scan marks belong to. The note title and the
    questions of the lines citing the claim add the words a short claim leaves implicit: on the
    22,120-paper snapshot at ~2% of pairs, with each query word counted once, they lift the hybrid's
    dev recall from 0.69 (claim text alone) to 0.72 (bench/relevance_bench.py --context).
    """

    claim_id: str
    text: str
    text_hash: str
    title: str | None = None
    questions: tuple[str, ...] = field(default_factory=tuple)
    topics: tuple[str, ...] = field(default_factory=tuple)

    def query_text(self, context: Iterable[str] = ("title", "questions")) -> str:
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
