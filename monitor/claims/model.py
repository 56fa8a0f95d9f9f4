"""What the parsers read out of claim files, before anything touches the database.

Seed exports and user claim files both become a `ClaimDocument`: one or more `ParsedLine`s, each with
its claims (notes, dated bullets or user claims) and anchor papers. Every item keeps the file line it
came from, so later checks can still point at it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from monitor.claims.dates import ParsedDate
from monitor.claims.ids import claim_id, line_id
from monitor.errors import InputError

# A claim is one statement and a question one sentence; both go into every judge or research-question
# prompt that cites them. The seeds' longest claim is 510 characters and their longest question 102:
# 2,000 leaves room for any real one, and a pasted page (a 1.1 MB claim made a 1.1 MB judge request)
# is refused at import, naming its file and line.
MAX_CLAIM_CHARS = 2_000
CLAIM_KINDS = ("note", "dated", "user")
LINE_KINDS = ("line", "note", "user")  # an inquiring line, a single-note document, a user's file


@dataclass
class ParsedClaim:
    """A claim as written: a note's summary (its title is the question), a dated bullet, a user claim."""

    text: str
    kind: str  # note | dated | user
    source_line: int | None  # None where the reader keeps no positions (TOML)
    title: str | None = None
    original_title: str | None = None
    date: ParsedDate | None = None
    topics: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return claim_id(self.text)


@dataclass
class ParsedAnchor:
    """An anchor paper as a line cites it: `arXiv:2504.07912 (2025-04) — title`."""

    arxiv_id: str
    source_line: int | None  # None where the reader keeps no positions (TOML)
    date_text: str | None = None
    title: str | None = None


@dataclass
class Span:
    """A line's overall span, "Findings span 2023–2026", in years."""

    text: str
    start_year: int
    end_year: int


@dataclass
class ParsedLine:
    """An inquiring line (or a single note's document, or a user's question) with what it cites."""

    question: str
    kind: str  # line | note | user
    source_line: int | None  # None where the reader keeps no positions (TOML)
    framing: str | None = None
    body: str | None = None
    topics: list[str] = field(default_factory=list)
    span: Span | None = None
    has_next_marker: bool = False
    claims: list[ParsedClaim] = field(default_factory=list)
    anchors: list[ParsedAnchor] = field(default_factory=list)

    @property
    def id(self) -> str:
        return line_id(self.question)


@dataclass
class ClaimDocument:
    """One claim file as read: where it is, its content hash, its kind and its lines."""

    path: Path
    sha256: str
    kind: str  # line | note | user
    lines: list[ParsedLine] = field(default_factory=list)

    def check_lengths(self) -> None:
        """InputError for the first claim or question over MAX_CLAIM_CHARS, naming file and line."""
        for line in self.lines:
            items = [("question", line.question, line.source_line)]
            items += [("claim", c.text, c.source_line) for c in line.claims]
            for what, text, at in items:
                if len(text) > MAX_CLAIM_CHARS:
                    raise InputError(
                        str(self.path),
                        at,
                        f"{what} text is {len(text):,} characters long; a {what} may have at most "
                        f"{MAX_CLAIM_CHARS:,} (docs/claims.md)",
                    )
