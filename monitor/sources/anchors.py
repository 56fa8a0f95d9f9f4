"""`monitor anchors verify`: does each anchor paper exist, under the title and date the seed cites?

Every active anchor's id is looked up on arXiv with `id_list` (up to `ID_CHUNK` ids per request, so
a library of a few dozen anchors costs one request), or in a snapshot file when offline. Each anchor
is then marked:

* `not_found`      — arXiv has no such id, or the id is not an arXiv id at all;
* `not_in_snapshot` — checked offline against a snapshot that lacks the id: the paper may well
  exist, the snapshot just does not have it;
* `title_differs`  — the cited title does not match the paper's title (rule below);
* `date_differs`   — the title matches but the paper's v1 date is outside the cited date;
* `grounded`       — both match.

Title rule (seeds cite shortened titles, e.g. "RL finetunes small subnetworks" for "Reinforcement
Learning Finetunes Small Subnetworks in Large Language Models"): lower-case both, split into words
(hyphens split too: monitor/text.py `words`), drop stop words (`STOP_WORDS`) and a plural "s"; a cited
word matches if the paper's title has it, or if it is an acronym of consecutive title words ("rl" =
reinforcement learning, "llm" = large language model). The titles match when at least
`TITLE_COVERAGE` of the cited words match.

Date rule: the cited date is a year, a month or a day ("2025", "2025-04", "2025-04-12"); the paper
matches when its v1 date falls in that period, widened by `DATE_SLACK` on either side (a paper
submitted on 31 March is announced in April and often cited so).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import arxiv

from monitor.config import Settings
from monitor.errors import SourceError
from monitor.sources.api import make_client
from monitor.sources.base import PaperRecord, is_arxiv_id, split_arxiv_id
from monitor.sources.client import PoliteSession, require_atom_feed
from monitor.sources.files import read_snapshot
from monitor.store.db import Store
from monitor.store.lines import active_anchors
from monitor.store.models import Anchor, utcnow
from monitor.text import STOP_WORDS, words

ID_CHUNK = 100
TITLE_COVERAGE = 0.6
DATE_SLACK = dt.timedelta(days=7)
STATUSES = ("grounded", "title_differs", "date_differs", "not_found", "not_in_snapshot")


@dataclass
class FoundPaper:
    """What the look-up returned for one id."""

    arxiv_id: str
    title: str
    published: dt.date | None


@dataclass
class AnchorCheck:
    """One anchor's outcome."""

    line_id: str
    arxiv_id: str
    cited_title: str | None
    cited_date: str | None
    status: str
    found_title: str | None = None
    found_published: dt.date | None = None


@dataclass
class AnchorReport:
    """All anchors checked, with the requests it took (recorded on the run as `anchors`: StageCounts)."""

    stage: ClassVar[str] = "anchors"

    checks: list[AnchorCheck] = field(default_factory=list)
    requests: int = 0
    looked_up_in: str = "arXiv API"  # or the snapshot path: not_found means "not in there"

    def counts(self) -> dict[str, int]:
        out = {status: 0 for status in STATUSES}
        for check in self.checks:
            out[check.status] = out.get(check.status, 0) + 1
        out["requests"] = self.requests
        return out

    def stage_counts(self) -> dict[str, int]:
        return self.counts()


# --- comparison rules ---------------------------------------------------------------------------


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _acronyms(words: list[str]) -> set[str]:
    """Initials of every run of 2-5 consecutive words, plural-s optional ("llms" -> "llm")."""
    out = set()
    for i in range(len(words)):
        for n in range(2, 6):
            run = words[i : i + n]
            if len(run) == n:
                out.add("".join(w[0] for w in run))
    return out


def title_coverage(cited: str, found: str) -> float:
    """Share of the cited title's content words that the found title has (see module docstring)."""
    cited_words = [_stem(w) for w in words(cited) if w not in STOP_WORDS]
    if not cited_words:
        return 1.0
    found_words = words(found)
    found_stems = {_stem(w) for w in found_words}
    acronyms = _acronyms(found_words)
    hits = sum(1 for w in cited_words if w in found_stems or w in acronyms)
    return hits / len(cited_words)


def titles_match(cited: str | None, found: str) -> bool:
    return cited is None or not cited.strip() or title_coverage(cited, found) >= TITLE_COVERAGE


def cited_period(text: str | None) -> tuple[dt.date, dt.date] | None:
    """'2025' / '2025-04' / '2025-04-12' (also '~2025-04') -> the first and last day meant."""
    if not text:
        return None
    match = re.search(r"(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?", text)
    if not match:
        return None
    year = int(match.group(1))
    if match.group(3):
        day = dt.date(year, int(match.group(2)), int(match.group(3)))
        return day, day
    if match.group(2):
        month = int(match.group(2))
        return dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1])
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def dates_match(cited: str | None, published: dt.date | None) -> bool:
    period = cited_period(cited)
    if period is None or published is None:
        return True  # nothing to compare against
    first, last = period
    return first - DATE_SLACK <= published <= last + DATE_SLACK


def classify(
    cited_title: str | None, cited_date: str | None, found: FoundPaper | None, offline: bool = False
) -> str:
    if found is None:
        return "not_in_snapshot" if offline else "not_found"
    if not titles_match(cited_title, found.title):
        return "title_differs"
    if not dates_match(cited_date, found.published):
        return "date_differs"
    return "grounded"


# --- look-ups -----------------------------------------------------------------------------------


def lookup_api(settings: Settings, ids: list[str]) -> tuple[dict[str, FoundPaper], int]:
    """Look ids up on the arXiv API, `ID_CHUNK` per request; returns (found by id, requests)."""
    from monitor.sources.api import result_to_record

    session = PoliteSession.from_settings(settings.arxiv, validate=require_atom_feed)
    found: dict[str, FoundPaper] = {}
    for start in range(0, len(ids), ID_CHUNK):
        chunk = ids[start : start + ID_CHUNK]
        client = make_client(settings, session, page_size=len(chunk))
        search = arxiv.Search(id_list=chunk, max_results=len(chunk))
        try:
            for result in client.results(search):
                rec = result_to_record(result)
                found[rec.arxiv_id] = FoundPaper(rec.arxiv_id, rec.title, rec.published)
        except arxiv.ArxivError as exc:
            raise SourceError(f"arXiv API: {exc}") from None
    return found, session.stats.requests


def lookup_snapshot(path: Path, ids: Iterable[str]) -> dict[str, FoundPaper]:
    wanted = set(ids)
    records: list[PaperRecord] = read_snapshot(path)
    return {r.arxiv_id: FoundPaper(r.arxiv_id, r.title, r.published) for r in records if r.arxiv_id in wanted}


def verify_anchors(store: Store, settings: Settings, source: str | None = None) -> AnchorReport:
    """Check every active anchor (online, or against a snapshot file) and store the outcome."""
    with store.session() as s:
        wanted = [(a.id, a.arxiv_id) for a in active_anchors(s)]
    ids = sorted({split_arxiv_id(raw)[0] for _, raw in wanted if is_arxiv_id(raw)})
    report = AnchorReport()
    if source == "sample":
        from monitor.sources.sample import sample_path

        source = str(sample_path(settings))
    if source and source != "api":
        found = lookup_snapshot(Path(source), ids)
        report.looked_up_in = source
    else:
        # A malformed id would make arXiv reject the whole id_list, so those never leave the machine.
        found, report.requests = lookup_api(settings, ids) if ids else ({}, 0)
    now = utcnow()
    with store.session() as s:
        for anchor_id, raw in wanted:
            anchor = s.get(Anchor, anchor_id)
            if anchor is None:
                continue
            well_formed = is_arxiv_id(raw)
            paper = found.get(split_arxiv_id(raw)[0]) if well_formed else None
            offline = well_formed and report.looked_up_in != "arXiv API"
            anchor.status = classify(anchor.cited_title, anchor.cited_date_text, paper, offline)
            anchor.found_title = paper.title if paper else None
            anchor.found_published = paper.published if paper else None
            anchor.checked_at = now
            report.checks.append(
                AnchorCheck(
                    anchor.line_id,
                    anchor.arxiv_id,
                    anchor.cited_title,
                    anchor.cited_date_text,
                    anchor.status,
                    anchor.found_title,
                    anchor.found_published,
                )
            )
    return report
