"""The file source: a JSONL snapshot (optionally gzipped) or an Atom XML file, so everything can run
offline. The whole file is read and checked before anything is stored: one bad line (not UTF-8, not
JSON, a field missing or wrong) is an InputError naming file, line and field, and nothing from that
file is written. Control characters, NULs and lone surrogates in a row's text are not bad lines:
they are removed (monitor/text.py) and the row is stored, with a warning naming file:line.

JSONL rows follow the shared corpus format: `arxiv_id, version (null = v1), title, abstract,
authors, categories, primary_category, published (YYYY-MM-DD), updated`, optionally `comment,
journal_ref, doi`; other keys are ignored. `since`/`until` select rows by `published`, so a replay
can feed one week at a time. A version is 1 to MAX_VERSION (1,000), in the field or the id's suffix,
and `published`/`updated` lie in 1991-2100 (sources/base.py); anything else is a bad line like any other.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from monitor.errors import InputError
from monitor.sources.base import (
    MAX_VERSION,
    Batch,
    PaperRecord,
    Source,
    SourceReport,
    check_paper_date,
    clean_text,
    split_arxiv_id,
    to_naive_utc,
)
from monitor.text import unprintable

BATCH_SIZE = 2000


class SnapshotRow(BaseModel):
    """One JSONL line, as validated."""

    model_config = ConfigDict(extra="ignore")

    arxiv_id: str
    version: int | None = None
    title: str
    abstract: str
    authors: list[str] = []
    categories: list[str] = []
    primary_category: str | None = None
    published: dt.date
    updated: dt.datetime | dt.date | None = None
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None

    @field_validator("arxiv_id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        split_arxiv_id(value)
        return value

    @field_validator("published", mode="before")
    @classmethod
    def _date_of_timestamp(cls, value: Any) -> Any:
        # Some rows carry the API's full timestamp ("2026-04-03T20:24:19Z"): its UTC date is meant.
        if isinstance(value, str) and len(value) > 10 and "T" in value:
            stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            return (to_naive_utc(stamp) or stamp).date()
        return value

    @field_validator("title", "abstract")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("version")
    @classmethod
    def _in_range(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= MAX_VERSION:
            raise ValueError(f"must be from 1 to {MAX_VERSION}")
        return value

    @field_validator("published", "updated")
    @classmethod
    def _a_paper_date(cls, value: dt.date | None) -> dt.date | None:
        if value is not None:
            check_paper_date(value.date() if isinstance(value, dt.datetime) else value)
        return value

    def record(self) -> PaperRecord:
        arxiv_id, id_version = split_arxiv_id(self.arxiv_id)
        updated: dt.datetime | None
        if isinstance(self.updated, dt.datetime):
            updated = to_naive_utc(self.updated)
        elif isinstance(self.updated, dt.date):
            updated = dt.datetime.combine(self.updated, dt.time())
        else:
            updated = None
        return PaperRecord(
            arxiv_id=arxiv_id,
            version=self.version or id_version or 1,
            title=clean_text(self.title),
            abstract=clean_text(self.abstract),
            authors=self.authors,
            categories=self.categories,
            primary_category=self.primary_category,
            published=self.published,
            updated=updated,
            comment=self.comment,
            journal_ref=self.journal_ref,
            doi=self.doi,
        )


MAX_LINES_NAMED = 5  # a warning about removed characters names this many lines, then counts the rest


def _open_bytes(path: Path) -> Any:
    # Bytes, decoded line by line: a decoding error then names its line, not a byte offset in the file.
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def _row(path: Path, number: int, raw: bytes) -> dict[str, Any] | None:
    """One line's JSON object (None for a blank line), or an InputError naming the line."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), number, f"not UTF-8 text (byte {exc.start + 1} of the line)") from None
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), number, f"not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(data, dict):
        raise InputError(str(path), number, "expected a JSON object")
    return data


def _cleaned_fields(data: dict[str, Any]) -> list[str]:
    """The text fields of a row that hold what `printable` removes, as 'field (what)'."""
    found = []
    for name in ("title", "abstract", "authors", "comment", "journal_ref", "doi"):
        value = data.get(name)
        texts = value if isinstance(value, list) else [value]
        what = sorted({w for t in texts if isinstance(t, str) and (w := unprintable(t))})
        if what:
            found.append(f"{name} ({', '.join(what)})")
    return found


def cleaned_warning(cleaned: list[str]) -> str:
    """One warning for the lines whose text lost characters; names the first few as file:line."""
    more = f"; and {len(cleaned) - MAX_LINES_NAMED} more line(s)" if len(cleaned) > MAX_LINES_NAMED else ""
    return (
        "removed characters that cannot be stored or printed safely, kept the papers: "
        + "; ".join(cleaned[:MAX_LINES_NAMED])
        + more
    )


def read_jsonl(path: Path, cleaned: list[str] | None = None) -> list[PaperRecord]:
    """Every row of a JSONL snapshot, or an InputError for the first bad one.

    Rows whose text had control characters, NULs or lone surrogates removed are appended to
    `cleaned` as 'file:line: field (what)'.
    """
    records: list[PaperRecord] = []
    try:
        with _open_bytes(path) as fh:
            for number, raw in enumerate(fh, start=1):
                data = _row(path, number, raw)
                if data is None:
                    continue
                try:
                    records.append(SnapshotRow.model_validate(data).record())
                except ValidationError as exc:
                    err = exc.errors()[0]
                    where = ".".join(str(p) for p in err["loc"]) or "row"
                    msg = err["msg"].removeprefix("Value error, ")
                    raise InputError(str(path), number, f"field {where}: {msg}") from None
                fields = _cleaned_fields(data)
                if fields and cleaned is not None:
                    cleaned.append(f"{path}:{number}: {', '.join(fields)}")
    except (OSError, EOFError) as exc:
        raise InputError(str(path), None, f"cannot read snapshot: {exc}") from None
    return records


def read_atom(path: Path) -> tuple[list[PaperRecord], str | None]:
    """The complete entries of an Atom file (API or RSS flavour), and a note if it was truncated."""
    from monitor.sources.rss import entry_to_record, read_feed

    try:
        content = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read: {exc.strerror}") from None
    if path.suffix == ".gz":
        content = gzip.decompress(content)
    feed = read_feed(content)
    if feed.parsed.bozo and not feed.entries:
        raise InputError(str(path), None, f"not an Atom feed: {feed.problem}")
    records = [r for r in (entry_to_record(e) for e in feed.entries) if r is not None]
    note = (
        f"{path}: truncated ({feed.problem}); kept {len(records)} complete entries"
        if feed.truncated
        else None
    )
    return records, note


def read_snapshot(path: Path, report: SourceReport | None = None) -> list[PaperRecord]:
    """The file's papers; a truncated Atom file or text that lost characters is noted in `report`."""
    report = report if report is not None else SourceReport()
    name = path.name.lower()
    if name.endswith((".xml", ".atom", ".xml.gz")):
        records, note = read_atom(path)
        if note:
            report.truncated = True
            report.warnings.append(note)
        return records
    cleaned: list[str] = []
    records = read_jsonl(path, cleaned)
    if cleaned:
        report.warnings.append(cleaned_warning(cleaned))
    return records


class FileSource(Source):
    """Papers from a local snapshot file; no requests, no marks (reloading adds nothing)."""

    def __init__(
        self,
        path: Path,
        since: dt.date | None = None,
        until: dt.date | None = None,
        name: str = "file",
        categories: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.path = path
        self.since = since
        self.until = until
        self.name = name
        self.categories = set(categories) if categories else None

    def _wanted(self, rec: PaperRecord) -> bool:
        if self.since and (rec.published is None or rec.published < self.since):
            return False
        if self.until and (rec.published is None or rec.published > self.until):
            return False
        return not (self.categories and not self.categories.intersection(rec.categories))

    def batches(self) -> Iterator[Batch]:
        records = read_snapshot(self.path, self.report)
        wanted = [r for r in records if self._wanted(r)]
        self.report.notes.append(f"{self.path}: {len(wanted)} of {len(records)} papers in the window")
        for start in range(0, len(wanted), BATCH_SIZE):
            yield Batch(records=wanted[start : start + BATCH_SIZE])
