"""Parser for the research library's export format: inquiring lines and single notes.

An inquiring line reads::

    INQUIRING LINE
    <question?>
    <framing paragraph>
    <prose body, several paragraphs>
    Sources N notes
    <note title?>            (N times: a question, then a one-paragraph summary)
    <summary>
    Research prompt for your LLM ...            (optional block)
      What a curated library found — and when ...
      Findings span 2023–2026; ...
      • <claim text> (<date>).
      Anchor papers (verify; mind their dates):
      • arXiv:2504.07912 (2025-04) — <title>
    Next inquiring lines

A single note (seed 001) reads: a category header, the question, a framing paragraph,
`Note · 2026-02-21 · sourced from ...`, the body, `Source: ...`, some boilerplate, and
`Original note title` followed by the title. Its claim is the body's first paragraph, the note's
summary statement; the whole body is kept on its line (kind "note").

Anything not in this shape raises InputError with the file, the line number and what was expected.

Completeness: a file cut short (a partial download or copy) must never read as a shorter document,
because the importer would then retire whatever the cut dropped. The export closes every document
with a fixed section, so a file without it is refused as cut off before anything else is read:
an inquiring line always has its `Next inquiring lines` heading (the last line of every real
export), a single note always ends with `Original note title` and the title under it. A cut inside
that last line itself is not detectable; it can only shorten the marker (refused) or the note's
original title (an update, never a retirement).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from monitor.claims.dates import DateError, parse_date
from monitor.claims.model import ClaimDocument, ParsedAnchor, ParsedClaim, ParsedLine, Span
from monitor.errors import InputError
from monitor.text import printable

LINE_HEADER = "INQUIRING LINE"
NEXT_MARKER = "Next inquiring lines"
_SOURCES = re.compile(r"^Sources\s+(\d+)\s+notes?$")
_NOTE_HEADER = re.compile(r"^Note\s*·\s*(?P<date>[^·]+?)\s*(?:·\s*(?P<rest>.*))?$")
_BULLET = re.compile(r"^[•\-*]\s+")
_TRAILING_DATE = re.compile(r"^(?P<text>.*\S)\s*\((?P<date>[^()]*)\)\s*\.?$", re.DOTALL)
_ANCHOR = re.compile(
    r"^arXiv:\s*(?P<id>\S+?)(?:\s*\((?P<date>[^()]*)\))?(?:\s*[—–-]+\s*(?P<title>.+))?$", re.IGNORECASE
)
_ARXIV_ID = re.compile(r"^(?:\d{4}\.\d{4,5}|[a-z][a-z.\-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?$")
_SPAN = re.compile(r"Findings span\s+(?P<rest>.+)$")
_AFTER_NOTES = ("Research prompt", "What a curated library found", "Anchor papers")
_NOTE_BODY_END = ("Source:", "Related concepts in this collection", "Original note title")


@dataclass
class Paragraph:
    """Consecutive non-blank lines; `start` is the 1-based file line of the first."""

    start: int
    lines: list[str]

    @property
    def text(self) -> str:
        return " ".join(line.strip() for line in self.lines)

    @property
    def first(self) -> str:
        return self.lines[0].strip()


def paragraphs(text: str) -> list[Paragraph]:
    found: list[Paragraph] = []
    current: Paragraph | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            if current is None:
                current = Paragraph(number, [])
                found.append(current)
            current.lines.append(raw.rstrip())
        else:
            current = None
    return found


def parse_seed_file(path: Path) -> ClaimDocument:
    """Read one export file (an inquiring line or a single note)."""
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(str(path), line, "not UTF-8 text") from None
    if "\x00" in text:  # valid UTF-8 can still be binary; no export holds a NUL
        line = text[: text.index("\x00")].count("\n") + 1
        raise InputError(str(path), line, "binary data (a NUL byte), not a seed export")
    # Other control characters (a terminal escape pasted into an export) would reach the digest and
    # the terminal: dropped here, where claim text enters (monitor/text.py).
    return parse_seed_text(printable(text), path, hashlib.sha256(raw).hexdigest())


def parse_seed_text(text: str, path: Path, sha256: str = "") -> ClaimDocument:
    paras = paragraphs(text)
    if not paras:
        raise InputError(
            str(path), 1, "empty file; expected an 'INQUIRING LINE' header or a 'Note · DATE' line"
        )
    if paras[0].first == LINE_HEADER:
        _require_end(path, paras, any(p.first == NEXT_MARKER for p in paras[1:]), f"{NEXT_MARKER!r} heading")
        return ClaimDocument(path, sha256, "line", [_LineParser(path, paras).parse()])
    if any(_NOTE_HEADER.match(p.first) for p in paras):
        _require_end(path, paras, _has_original_title(paras), "'Original note title' and the title under it")
        return ClaimDocument(path, sha256, "note", [_NoteParser(path, paras).parse()])
    raise InputError(
        str(path),
        paras[0].start,
        f"expected an {LINE_HEADER!r} header or a 'Note · DATE' line, found {paras[0].first[:60]!r}",
    )


def _require_end(path: Path, paras: list[Paragraph], complete: bool, closing: str) -> None:
    """Refuse a document missing the section its export always closes with (see the module doc)."""
    if complete:
        return
    last = paras[-1].start + len(paras[-1].lines) - 1
    raise InputError(
        str(path),
        last,
        f"the file ends here without the closing {closing} every export of this kind has: "
        "it looks cut off (a partial copy or download); export or copy it again",
    )


def _has_original_title(paras: list[Paragraph]) -> bool:
    """An `Original note title` line with some text after it (in its paragraph or the next)."""
    for i, p in enumerate(paras):
        for j, raw in enumerate(p.lines):
            if raw.strip() == "Original note title":
                return j + 1 < len(p.lines) or i + 1 < len(paras)
    return False


def _question(path: Path, para: Paragraph | None, what: str) -> str:
    if para is None or len(para.lines) != 1 or not para.first.endswith("?"):
        where = para.start if para else None
        found = f", found {para.first[:60]!r}" if para else ", found end of file"
        raise InputError(str(path), where, f"expected {what} (one line ending in '?'){found}")
    return para.first


def _bullets(path: Path, para: Paragraph, skip: int) -> list[tuple[int, str]]:
    """The bullets of a paragraph after its first `skip` lines; a non-bullet line continues the last."""
    items: list[tuple[int, str]] = []
    for offset, raw in enumerate(para.lines[skip:], start=para.start + skip):
        line = raw.strip()
        if _BULLET.match(line):
            items.append((offset, _BULLET.sub("", line, count=1)))
        elif items:
            items[-1] = (items[-1][0], items[-1][1] + " " + line)
        else:
            raise InputError(str(path), offset, f"expected a bullet ('• ...'), found {line[:60]!r}")
    return items


def dated_claim(path: Path, number: int, bullet: str) -> ParsedClaim:
    """`<text> (<date>).` -> a dated claim whose text is the bullet without its trailing date."""
    m = _TRAILING_DATE.match(bullet)
    if not m:
        raise InputError(
            str(path), number, "expected a dated claim ending in its date in parentheses, e.g. '... (~2025).'"
        )
    try:
        date = parse_date(m["date"])
    except DateError as exc:
        raise InputError(str(path), number, str(exc)) from None
    return ParsedClaim(text=m["text"].strip(), kind="dated", source_line=number, date=date)


def anchor(path: Path, number: int, bullet: str) -> ParsedAnchor:
    m = _ANCHOR.match(bullet)
    if not m or not _ARXIV_ID.match(m["id"]):
        raise InputError(str(path), number, "expected an anchor paper '• arXiv:2504.07912 (2025-04) — title'")
    date_text = m["date"].strip() if m["date"] else None
    if date_text:
        try:
            parse_date(date_text)
        except DateError as exc:
            raise InputError(str(path), number, str(exc)) from None
    arxiv_id = re.sub(r"v\d+$", "", m["id"])  # papers are keyed without their version
    title = m["title"].strip() if m["title"] else None
    return ParsedAnchor(arxiv_id=arxiv_id, source_line=number, date_text=date_text, title=title)


def span(path: Path, number: int, line: str) -> Span | None:
    """`Findings span 2023–2026; ...` or `Findings span Sept 2024–May 2026. The corpus ...`."""
    m = _SPAN.search(line)
    if not m:
        return None
    rest = m["rest"].split(";")[0].strip()
    # The span ends where its sentence does; try the longest prefix that reads as a date range.
    pieces = re.split(r"(?<=\.)\s+", rest)
    for cut in range(len(pieces), 0, -1):
        candidate = " ".join(pieces[:cut]).rstrip(".:").strip()
        try:
            read = parse_date(candidate)
        except DateError:
            continue
        return Span(f"Findings span {candidate}", read.start.year, read.end.year)
    raise InputError(str(path), number, "expected 'Findings span YEAR–YEAR', e.g. 'Findings span 2023–2026'")


class _LineParser:
    """Walks an inquiring line's paragraphs in order."""

    def __init__(self, path: Path, paras: list[Paragraph]) -> None:
        self.path = path
        self.paras = paras
        self.i = 1  # paragraph 0 is the header

    def _peek(self) -> Paragraph | None:
        return self.paras[self.i] if self.i < len(self.paras) else None

    def _fail(self, para: Paragraph | None, message: str) -> InputError:
        line = para.start if para else (self.paras[-1].start + len(self.paras[-1].lines))
        return InputError(str(self.path), line, message)

    def parse(self) -> ParsedLine:
        header = self.paras[0]
        line = ParsedLine(question="", kind="line", source_line=header.start)
        if len(header.lines) > 1:  # the question directly under the header, no blank between
            self.paras[0] = Paragraph(header.start, header.lines[:1])
            self.paras.insert(1, Paragraph(header.start + 1, header.lines[1:]))
        line.question = _question(self.path, self._peek(), "the line's question")
        line.source_line = self.paras[self.i].start
        self.i += 1
        body: list[str] = []
        sources: Paragraph | None = None
        while (para := self._peek()) is not None:
            self.i += 1
            if _SOURCES.match(para.first):
                sources = para
                break
            if para.first == NEXT_MARKER:
                raise self._fail(para, "expected a 'Sources N notes' section before 'Next inquiring lines'")
            if line.framing is None:
                line.framing = para.text
            else:
                body.append(para.text)
        if sources is None:
            raise self._fail(None, "expected a 'Sources N notes' section, found end of file")
        line.body = "\n\n".join(body) or None
        line.claims.extend(self._notes(sources))
        self._rest(line)
        return line

    def _notes(self, header: Paragraph) -> list[ParsedClaim]:
        m = _SOURCES.match(header.first)
        assert m is not None
        announced = int(m[1])
        if len(header.lines) > 1:  # a title right under the header
            self.paras.insert(self.i, Paragraph(header.start + 1, header.lines[1:]))
        block: list[Paragraph] = []
        while (para := self._peek()) is not None and not (
            para.first.startswith(_AFTER_NOTES) or para.first == NEXT_MARKER
        ):
            block.append(para)
            self.i += 1
        notes: list[ParsedClaim] = []
        for k in range(0, len(block), 2):
            title = _question(self.path, block[k], f"note {len(notes) + 1}'s title")
            if k + 1 >= len(block) or block[k + 1].first.endswith("?") and len(block[k + 1].lines) == 1:
                raise InputError(
                    str(self.path), block[k].start, f"expected the summary paragraph of note {title!r}"
                )
            summary = block[k + 1]
            notes.append(ParsedClaim(text=summary.text, kind="note", source_line=summary.start, title=title))
        if len(notes) != announced:
            raise InputError(
                str(self.path),
                header.start,
                f"'{header.first}' announces {announced} notes but {len(notes)} follow "
                "(each note is a title ending in '?' and a one-paragraph summary)",
            )
        return notes

    def _rest(self, line: ParsedLine) -> None:
        """The optional research-prompt block (dated claims, span, anchors) and the next-lines marker."""
        while (para := self._peek()) is not None:
            self.i += 1
            if para.first == NEXT_MARKER:
                line.has_next_marker = True
                break
            if para.first.startswith("What a curated library found"):
                skip = 1
                if len(para.lines) > 1 and "Findings span" in para.lines[1]:
                    line.span = span(self.path, para.start + 1, para.lines[1])
                    skip = 2
                bullets = _bullets(self.path, para, skip)
                if not bullets:
                    raise self._fail(para, "expected dated claims ('• <claim> (<date>).') under this header")
                line.claims.extend(dated_claim(self.path, n, b) for n, b in bullets)
            elif para.first.startswith("Anchor papers"):
                line.anchors.extend(anchor(self.path, n, b) for n, b in _bullets(self.path, para, 1))
            elif line.span is None and para.first.startswith("Findings span"):
                line.span = span(self.path, para.start, para.first)


class _NoteParser:
    """A single note's document: header, question, framing, `Note · DATE`, body, original title."""

    def __init__(self, path: Path, paras: list[Paragraph]) -> None:
        self.path = path
        self.paras = paras

    def parse(self) -> ParsedLine:
        k = next(i for i, p in enumerate(self.paras) if _NOTE_HEADER.match(p.first))
        note_para = self.paras[k]
        before, after = self.paras[:k], self.paras[k + 1 :]
        q = next((i for i, p in enumerate(before) if len(p.lines) == 1 and p.first.endswith("?")), None)
        if q is None:
            raise InputError(
                str(self.path),
                note_para.start,
                "expected the note's question (one line ending in '?') before the 'Note ·' line",
            )
        m = _NOTE_HEADER.match(note_para.first)
        assert m is not None
        try:
            date = parse_date(m["date"])
        except DateError as exc:
            raise InputError(str(self.path), note_para.start, str(exc)) from None
        body: list[Paragraph] = []
        for p in after:
            if p.first.startswith(_NOTE_BODY_END):
                break
            body.append(p)
        if not body:
            raise InputError(
                str(self.path), note_para.start, "expected the note's body after the 'Note ·' line"
            )
        original = self._original_title(after)
        question = before[q].first
        framing = "\n\n".join(p.text for p in before[q + 1 :]) or None
        topics = [p.text for p in before[:q]]
        claim = ParsedClaim(
            text=body[0].text,
            kind="note",
            source_line=body[0].start,
            title=question,
            original_title=original,
            date=date,
            topics=list(topics),
        )
        return ParsedLine(
            question=question,
            kind="note",
            source_line=before[q].start,
            framing=framing,
            body="\n\n".join(p.text for p in body),
            topics=topics,
            claims=[claim],
        )

    @staticmethod
    def _original_title(after: list[Paragraph]) -> str | None:
        """The text after an "Original note title" line (same paragraph or the next one)."""
        for i, p in enumerate(after):
            for j, raw in enumerate(p.lines):
                if raw.strip() == "Original note title":
                    rest = p.lines[j + 1 :] or (after[i + 1].lines if i + 1 < len(after) else [])
                    return " ".join(s.strip() for s in rest) or None
        return None
