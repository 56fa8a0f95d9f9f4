"""The tables. One row per real thing; history is kept by adding rows, never by overwriting them.

Stage by stage: claims fill `lines`, `claims`, `line_claims`, `anchors`, `seed_files`; sources fill
`papers`, `paper_versions`, `fetch_marks`; relevance fills `candidates` and `embeddings`; the judge fills
`assessments`; curators fill `reviews` and `claim_rewordings`; verdicts fill `verdicts`. What runs did
(runs, locks, LLM exchanges, batches, parked failures, digests written) is in `records.py`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ColumnElement,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


ID_LENGTH = 32  # claims.id and lines.id: "c-"/"l-" and 12 hex digits, with room to spare


def id_starts_with(column: Any, prefix: str) -> ColumnElement[bool]:
    """SQL: an id (claims.id, lines.id) starts with `prefix` as typed. `_` and `%` are themselves, not
    LIKE wildcards (`c-11_b` opened c-117ba16fa085), and a prefix longer than any id matches nothing
    without building a pattern (SQLite refuses a LIKE pattern over 50,000 bytes: a pasted 70 KB id was a
    traceback)."""
    if len(prefix) > ID_LENGTH:
        return false()
    return column.startswith(prefix, autoescape=True)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON, list[str]: JSON}


class SchemaVersion(Base):
    """One row: the schema version this database has been migrated to."""

    __tablename__ = "schema_version"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    migrated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


# --- claims -------------------------------------------------------------------------------------


class SeedFile(Base):
    """A claim source file as last imported, so a re-import can say what changed."""

    __tablename__ = "seed_files"
    path: Mapped[str] = mapped_column(String(500), primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(20))  # line | note | user
    imported_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Line(Base):
    """An inquiring line: a question the library keeps open, with its prose and cited notes."""

    __tablename__ = "lines"
    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    question: Mapped[str] = mapped_column(Text)
    framing: Mapped[str | None] = mapped_column(Text)
    body: Mapped[str | None] = mapped_column(Text)
    topics: Mapped[list[str]] = mapped_column(JSON, default=list)
    span_text: Mapped[str | None] = mapped_column(String(200))  # "Findings span 2023–2026"
    span_start: Mapped[int | None] = mapped_column(Integer)
    span_end: Mapped[int | None] = mapped_column(Integer)
    has_next_marker: Mapped[bool] = mapped_column(Boolean, default=False)
    source_file: Mapped[str | None] = mapped_column(String(500))
    source_kind: Mapped[str] = mapped_column(String(20), default="line")  # line | note | user
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    retired_at: Mapped[dt.datetime | None] = mapped_column(DateTime)

    claim_links: Mapped[list[LineClaim]] = relationship(back_populates="line")
    anchors: Mapped[list[Anchor]] = relationship(back_populates="line")


class Claim(Base):
    """A claim to keep testing. The id is a hash of the normalised text, so it never renames."""

    __tablename__ = "claims"
    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(20))  # note | dated | user
    title: Mapped[str | None] = mapped_column(Text)  # a note's question title
    original_title: Mapped[str | None] = mapped_column(Text)  # 001's "Original note title"
    date_text: Mapped[str | None] = mapped_column(String(100))  # as written: "~2024–2025"
    date_start: Mapped[dt.date | None] = mapped_column(Date)  # first day the date can mean
    date_end: Mapped[dt.date | None] = mapped_column(Date)  # last day the date can mean
    date_precision: Mapped[str | None] = mapped_column(String(10))  # day | month | year
    date_approximate: Mapped[bool] = mapped_column(Boolean, default=False)
    topics: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    retired_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    replaced_by: Mapped[str | None] = mapped_column(String(32))

    line_links: Mapped[list[LineClaim]] = relationship(back_populates="claim")


class LineClaim(Base):
    """Which lines cite which claims (a note shared by three lines has three rows)."""

    __tablename__ = "line_claims"
    line_id: Mapped[str] = mapped_column(ForeignKey("lines.id"), primary_key=True)
    claim_id: Mapped[str] = mapped_column(ForeignKey("claims.id"), primary_key=True)
    role: Mapped[str] = mapped_column(String(20))  # note | dated | user
    position: Mapped[int] = mapped_column(Integer, default=0)
    retired_at: Mapped[dt.datetime | None] = mapped_column(DateTime)

    line: Mapped[Line] = relationship(back_populates="claim_links")
    claim: Mapped[Claim] = relationship(back_populates="line_links")


class Anchor(Base):
    """An anchor paper as a line cites it, and what arXiv said when we checked."""

    __tablename__ = "anchors"
    __table_args__ = (UniqueConstraint("line_id", "arxiv_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    line_id: Mapped[str] = mapped_column(ForeignKey("lines.id"))
    arxiv_id: Mapped[str] = mapped_column(String(40), index=True)
    cited_date_text: Mapped[str | None] = mapped_column(String(40))
    cited_title: Mapped[str | None] = mapped_column(Text)
    position: Mapped[int] = mapped_column(Integer, default=0)
    retired_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    # filled by `monitor anchors verify`
    status: Mapped[str] = mapped_column(String(20), default="unverified")
    # unverified | grounded | title_differs | date_differs | not_found
    found_title: Mapped[str | None] = mapped_column(Text)
    found_published: Mapped[dt.date | None] = mapped_column(Date)
    checked_at: Mapped[dt.datetime | None] = mapped_column(DateTime)

    line: Mapped[Line] = relationship(back_populates="anchors")


# --- papers -------------------------------------------------------------------------------------


class Paper(Base):
    """One arXiv paper, its latest known version's metadata; older versions in paper_versions."""

    __tablename__ = "papers"
    arxiv_id: Mapped[str] = mapped_column(String(40), primary_key=True)  # without version suffix
    version: Mapped[int] = mapped_column(Integer, default=1)  # latest known
    title: Mapped[str] = mapped_column(Text)
    abstract: Mapped[str] = mapped_column(Text)
    authors: Mapped[list[str]] = mapped_column(JSON, default=list)
    categories: Mapped[list[str]] = mapped_column(JSON, default=list)
    primary_category: Mapped[str | None] = mapped_column(String(40))
    published: Mapped[dt.date | None] = mapped_column(Date, index=True)  # v1 date
    updated: Mapped[dt.datetime | None] = mapped_column(DateTime)
    comment: Mapped[str | None] = mapped_column(Text)
    journal_ref: Mapped[str | None] = mapped_column(Text)
    doi: Mapped[str | None] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(40))  # api | rss | sample | file
    first_seen: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    needs_rejudge: Mapped[bool] = mapped_column(Boolean, default=False)


class PaperVersion(Base):
    """Each version of a paper we have seen, with the text it had."""

    __tablename__ = "paper_versions"
    __table_args__ = (UniqueConstraint("arxiv_id", "version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    arxiv_id: Mapped[str] = mapped_column(ForeignKey("papers.arxiv_id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text)
    abstract: Mapped[str] = mapped_column(Text)
    updated: Mapped[dt.datetime | None] = mapped_column(DateTime)
    source: Mapped[str] = mapped_column(String(40))
    seen_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class FetchMark(Base):
    """High-water mark per source and query: fetch only what came after it."""

    __tablename__ = "fetch_marks"
    source: Mapped[str] = mapped_column(String(40), primary_key=True)
    query_key: Mapped[str] = mapped_column(String(500), primary_key=True)
    high_water: Mapped[dt.datetime] = mapped_column(DateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


# --- relevance ----------------------------------------------------------------------------------


class Candidate(Base):
    """A (paper version, claim) pair the relevance stage found worth judging."""

    __tablename__ = "candidates"
    __table_args__ = (UniqueConstraint("arxiv_id", "version", "claim_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    arxiv_id: Mapped[str] = mapped_column(ForeignKey("papers.arxiv_id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    claim_id: Mapped[str] = mapped_column(ForeignKey("claims.id"), index=True)
    score: Mapped[float] = mapped_column(Float)
    method: Mapped[str] = mapped_column(String(40))
    run_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    # With an LLM screen (relevance.screen = "llm"): pending until screened, then kept or dropped, or
    # recheck while it waits for the screen's second reading (store/candidates.py); NULL when no screen
    # was asked for. Only NULL and kept pairs go to the judge.
    screen: Mapped[str | None] = mapped_column(String(10), index=True)
    screen_exchange_id: Mapped[int | None] = mapped_column(Integer)


class RelevanceMark(Base):
    """Per claim (and its text), the last paper_versions.id the relevance stage has scanned.

    New papers and new versions get higher ids, so each claim scans only what it has not seen; an
    edited or new claim starts from zero and is checked against every stored paper.
    """

    __tablename__ = "relevance_marks"
    claim_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    claim_text_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    last_version_row: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Embedding(Base):
    """A cached text embedding: each paper version is embedded once per model."""

    __tablename__ = "embeddings"
    __table_args__ = (UniqueConstraint("key", "model"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(200))  # "paper:2504.07912v1" or "claim:<id>:<hash>"
    model: Mapped[str] = mapped_column(String(100))
    dim: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)  # float32 little-endian


# --- judging ------------------------------------------------------------------------------------


class Assessment(Base):
    """How one paper version bears on one claim, according to one judge, model and prompt.

    `cache_key` hashes (arxiv_id, version, claim text, judge, model, prompt version); `generation`
    counts forced re-judgements of the same key, so nothing is overwritten and nothing doubles.
    """

    __tablename__ = "assessments"
    __table_args__ = (
        UniqueConstraint("cache_key", "generation"),
        Index("ix_assessments_claim", "claim_id", "is_current"),
        Index("ix_assessments_pair", "arxiv_id", "claim_id", "is_current"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cache_key: Mapped[str] = mapped_column(String(64))
    generation: Mapped[int] = mapped_column(Integer, default=0)
    arxiv_id: Mapped[str] = mapped_column(ForeignKey("papers.arxiv_id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    claim_id: Mapped[str] = mapped_column(ForeignKey("claims.id"))
    claim_text_hash: Mapped[str] = mapped_column(String(64))
    judge: Mapped[str] = mapped_column(String(40))  # local | openai
    model: Mapped[str] = mapped_column(String(200))
    prompt_version: Mapped[str] = mapped_column(String(40))
    label: Mapped[str] = mapped_column(String(12))  # SUPPORTS | RELAXES | OVERTURNS | UNRELATED
    confidence: Mapped[float] = mapped_column(Float)
    rationale: Mapped[str] = mapped_column(Text, default="")
    evidence: Mapped[str] = mapped_column(Text, default="")
    grounded: Mapped[bool] = mapped_column(Boolean, default=False)
    # "Related, stance unclear": the embedded judge withheld its stance (kept for review, never counted).
    abstained: Mapped[bool] = mapped_column(Boolean, default=False)
    # How much the finding can carry: direct | indirect | weak | none (LLM judges, schema v12); NULL
    # for older rows and the embedded judge, weighed as before.
    strength: Mapped[str | None] = mapped_column(String(10))
    # The closer second reading a label that moves verdicts gets before it counts (judge/second_look.py):
    # NULL none asked | pending | agreed | disagreed (then it waits for a curator).
    second_look: Mapped[str | None] = mapped_column(String(10))
    is_current: Mapped[bool] = mapped_column(Boolean, default=True)
    exchange_id: Mapped[int | None] = mapped_column(ForeignKey("llm_exchanges.id"))
    run_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class SecondLook(Base):
    """A second, closer reading of one assessment (judge/second_look.py): the reader's own label,
    strength, quote and rationale, and whether its label agrees with the first reading's."""

    __tablename__ = "second_looks"
    __table_args__ = (UniqueConstraint("assessment_id", "model", "prompt_version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    assessment_id: Mapped[int] = mapped_column(ForeignKey("assessments.id"))
    model: Mapped[str] = mapped_column(String(200))
    prompt_version: Mapped[str] = mapped_column(String(40))
    label: Mapped[str] = mapped_column(String(12))
    strength: Mapped[str | None] = mapped_column(String(10))
    confidence: Mapped[float] = mapped_column(Float)
    rationale: Mapped[str] = mapped_column(Text)
    evidence: Mapped[str] = mapped_column(Text)
    grounded: Mapped[bool] = mapped_column(Boolean)
    agrees: Mapped[bool] = mapped_column(Boolean)
    exchange_id: Mapped[int | None] = mapped_column(ForeignKey("llm_exchanges.id"))
    run_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Review(Base):
    """A curator's decision on how one paper bears on one claim (`monitor review`).

    Keyed by (claim, paper), not by assessment, so it outlives re-judging: `retest`, `--force`, a new
    model or prompt. Rows are only ever added; the newest decision (not a note) per pair is in force,
    and the rows are its history (from, to, when, note).
    """

    __tablename__ = "reviews"
    __table_args__ = (Index("ix_reviews_pair", "claim_id", "arxiv_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    claim_id: Mapped[str] = mapped_column(ForeignKey("claims.id"))
    arxiv_id: Mapped[str] = mapped_column(ForeignKey("papers.arxiv_id"))
    assessment_id: Mapped[int] = mapped_column(ForeignKey("assessments.id"))  # the one reviewed
    action: Mapped[str] = mapped_column(String(10))  # confirm | relabel | dismiss | note
    from_label: Mapped[str] = mapped_column(String(12))  # the label in force before
    label: Mapped[str | None] = mapped_column(String(12))  # in force after; None: dismissed
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    # The curator says this one paper settles the claim: their label weighs 1 (docs/verdicts.md).
    decisive: Mapped[bool] = mapped_column(Boolean, default=False)
    # Who decided: the name a curator gave when signing in to `monitor serve` ("" from the terminal).
    reviewer: Mapped[str] = mapped_column(String(100), default="")


class ClaimRewording(Base):
    """A narrowed wording for a claim that confirmed RELAXES evidence bounds, proposed by an LLM.

    Accepting one (`monitor review reword accept`) adds the new claim to the old one's lines and retires
    the old one (`replaced_by`), keeping its evidence and verdict history; later imports of the same
    seed text keep the accepted wording (claims/rewordings.py), so the library's file need not change.
    """

    __tablename__ = "claim_rewordings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    claim_id: Mapped[str] = mapped_column(ForeignKey("claims.id"), index=True)  # the claim as it stood
    text: Mapped[str] = mapped_column(Text)  # the proposed wording
    condition: Mapped[str] = mapped_column(Text)  # the condition the evidence found, in the model's words
    cited: Mapped[list[str]] = mapped_column(JSON, default=list)  # arXiv ids of the confirmed papers
    model: Mapped[str] = mapped_column(String(200))
    prompt_version: Mapped[str] = mapped_column(String(40))
    exchange_id: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(10), default="proposed")  # proposed | accepted | rejected
    note: Mapped[str] = mapped_column(Text, default="")
    new_claim_id: Mapped[str | None] = mapped_column(String(32))  # set on acceptance
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    decided_at: Mapped[dt.datetime | None] = mapped_column(DateTime)


class Verdict(Base):
    """A claim's verdict as computed at one time; the newest row per claim is the current one."""

    __tablename__ = "verdicts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    claim_id: Mapped[str] = mapped_column(ForeignKey("claims.id"), index=True)
    status: Mapped[str] = mapped_column(String(12))  # see monitor/verdicts/rules.py STATUSES
    previous_status: Mapped[str | None] = mapped_column(String(12))
    changed: Mapped[bool] = mapped_column(Boolean, default=False)
    as_of: Mapped[dt.date] = mapped_column(Date)  # evidence up to this date
    # The assessment ids that moved it (the column keeps its first name; `evidence` in JSON output is
    # the papers' arXiv ids, so in code these are `assessment_ids`).
    assessment_ids: Mapped[list[Any]] = mapped_column("evidence", JSON, default=list)
    summary: Mapped[str] = mapped_column(Text, default="")
    # What every reader prints with it, computed once with the status: status_since, papers (arXiv
    # refs behind the status) and the evidence summary (monitor/verdicts/rules.py EvidenceSummary).
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    run_id: Mapped[int | None] = mapped_column(Integer)
    computed_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class ClaimOutcome(Base):
    """A claim's full outcome under the verdict rules at one date (monitor/verdicts/rules.py `Outcome`,
    every item behind it), computed once by the verdicts stage and read by every reader (digest,
    `monitor show`). Rewritten only when `fingerprint`, a hash of what decided it, changes."""

    __tablename__ = "claim_outcomes"
    __table_args__ = (UniqueConstraint("claim_id", "as_of"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    claim_id: Mapped[str] = mapped_column(ForeignKey("claims.id"))
    as_of: Mapped[dt.date] = mapped_column(Date)  # evidence published up to this date
    fingerprint: Mapped[str] = mapped_column(String(64))
    outcome: Mapped[dict[str, Any]] = mapped_column(JSON)  # Outcome.to_dict()
    run_id: Mapped[int | None] = mapped_column(Integer)
    computed_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
