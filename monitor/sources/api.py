"""The API source: the `arxiv` package, unchanged, talking through our polite session.

Query plan: one broad query per category set and date window,
`(cat:cs.CL OR cat:cs.LG OR cat:cs.AI) AND submittedDate:[YYYYMMDDHHMM TO YYYYMMDDHHMM]`, sorted by
submission date ascending, in pages of up to 2000 (the API's maximum). Narrowing to a line's topics
is the relevance stage's job: a per-claim query would cost one request per claim per window, the
broad one costs ceil(results / 2000). With `arxiv.query_mode = "topics"` each line gets its own
query instead (its topic terms ANDed with the categories), for users who want fewer papers stored.

The window starts at the high-water mark minus `ANNOUNCE_LAG` (papers become visible in the API only
when announced, a day or more after submission, so the last days are asked again and deduplicated),
or `lookback_days` back on the first run, or at `--since`. After every page the papers are stored and
the mark moves to the newest submission stored; when the window is done it moves to the window's end
(an empty answer moves nothing).
arXiv serves at most 30,000 results per query: past that we stop, keep what we have (the mark stays
at the last stored paper, so the next run continues from there) and warn how to narrow.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import arxiv
import requests
from lxml import etree

from monitor.config import Settings
from monitor.errors import SourceError
from monitor.sources.base import Batch, PaperRecord, Source, clean_text, split_arxiv_id, to_naive_utc
from monitor.sources.client import PoliteSession, require_atom_feed
from monitor.store.db import Store
from monitor.store.marks import get_mark

log = logging.getLogger(__name__)

API_PAGE_MAX = 2000
API_RESULT_CAP = 30_000
ANNOUNCE_LAG = dt.timedelta(days=4)
_OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"


@dataclass(frozen=True)
class PlannedQuery:
    """One API query: its search string and the key its high-water mark is stored under."""

    key: str
    query: str
    start: dt.datetime
    end: dt.datetime


def arxiv_stamp(value: dt.datetime) -> str:
    return value.strftime("%Y%m%d%H%M")


def category_clause(categories: list[str]) -> str:
    cats = " OR ".join(f"cat:{c}" for c in sorted(categories))
    return f"({cats})" if len(categories) > 1 else cats


def topic_clause(topics: list[str]) -> str:
    terms = " OR ".join(f'abs:"{t}"' if " " in t else f"abs:{t}" for t in topics)
    return f"({terms})"


def query_keys(categories: list[str], line_topics: dict[str, list[str]] | None) -> dict[str, list[str]]:
    """Mark key -> topic terms ([] for the broad query): one broad key, or one key per line."""
    base = "+".join(sorted(categories))
    if not line_topics:
        return {base: []}
    return {f"{base}|{line_id}": topics for line_id, topics in sorted(line_topics.items()) if topics}


def make_query(
    key: str, categories: list[str], start: dt.datetime, end: dt.datetime, topics: list[str]
) -> PlannedQuery:
    window = f"submittedDate:[{arxiv_stamp(start)} TO {arxiv_stamp(end)}]"
    parts = [category_clause(categories)] + ([topic_clause(topics)] if topics else []) + [window]
    return PlannedQuery(key, " AND ".join(parts), start, end)


def plan_queries(
    categories: list[str],
    start: dt.datetime,
    end: dt.datetime,
    line_topics: dict[str, list[str]] | None = None,
) -> list[PlannedQuery]:
    """Broad by default: one query for all categories; with line topics, one query per line."""
    return [make_query(k, categories, start, end, t) for k, t in query_keys(categories, line_topics).items()]


def result_to_record(result: arxiv.Result) -> PaperRecord:
    arxiv_id, version = split_arxiv_id(result.entry_id)
    published = to_naive_utc(result.published)
    return PaperRecord(
        arxiv_id=arxiv_id,
        version=version or 1,
        title=clean_text(result.title),
        abstract=clean_text(result.summary),
        authors=[a.name for a in result.authors],
        categories=list(result.categories),
        primary_category=result.primary_category or None,
        published=published.date() if published else None,
        updated=to_naive_utc(result.updated),
        comment=result.comment,
        journal_ref=result.journal_ref,
        doi=result.doi,
    )


class ApiPageCheck:
    """The session's `validate` hook for API pages: an Atom feed, well-formed; remember totalResults."""

    def __init__(self) -> None:
        self.total_results: int | None = None

    def __call__(self, response: requests.Response) -> None:
        require_atom_feed(response)
        root = etree.fromstring(response.content)
        total = root.findtext(f"{_OPENSEARCH}totalResults")
        self.total_results = int(total) if total and total.strip().isdigit() else None


def make_client(settings: Settings, session: PoliteSession, page_size: int | None = None) -> arxiv.Client:
    """An arxiv.Client whose HTTP goes through `session` to `settings.arxiv.api_url`."""
    # Politeness and HTTP retries are the session's; the package only retries an unexpectedly empty
    # page, which arXiv sometimes serves mid-paging.
    client = arxiv.Client(
        page_size=min(page_size or settings.arxiv.page_size, API_PAGE_MAX), delay_seconds=0, num_retries=2
    )
    client.query_url_format = settings.arxiv.api_url + "?{}"
    client._session = session  # the package's documented attribute for its HTTP session
    return client


class ApiSource(Source):
    """New submissions in the configured categories since the last successful fetch."""

    name = "api"

    def __init__(
        self,
        store: Store,
        settings: Settings,
        categories: list[str],
        since: dt.date | None = None,
        until: dt.date | None = None,
        line_topics: dict[str, list[str]] | None = None,
        now: dt.datetime | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.settings = settings
        self.categories = sorted(categories)
        self.since = since
        self.until = until
        self.now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None)
        if line_topics is None and settings.arxiv.query_mode == "topics":
            from monitor.sources.topics import line_topics as derive

            line_topics = derive(store, settings)
        self.line_topics = line_topics
        for line_id, topics in sorted((line_topics or {}).items()):
            if not topics:
                self.report.warnings.append(
                    f"line {line_id} has no search terms (set [arxiv.topics] or the line's topics); "
                    "it gets no query in query_mode = topics"
                )
        self.check = ApiPageCheck()
        self.session = PoliteSession.from_settings(settings.arxiv, validate=self.check)
        self.client = make_client(settings, self.session)

    @property
    def requests(self) -> int:
        return self.session.stats.requests

    @property
    def wait_seconds(self) -> float:
        return self.session.stats.wait_seconds

    def window(self, key: str) -> tuple[dt.datetime, dt.datetime, bool]:
        """(start, end, whether finishing it may move the mark) for one query key."""
        end = dt.datetime.combine(self.until, dt.time(23, 59)) if self.until else self.now
        if self.since is not None:
            start = dt.datetime.combine(self.since, dt.time())
            mark = get_mark(self.store, self.name, key)
            # A backfill moves the mark only if it joins up with what was fetched before.
            return start, end, mark is None or start <= mark
        mark = get_mark(self.store, self.name, key)
        if mark is None:
            return end - dt.timedelta(days=self.settings.arxiv.lookback_days), end, True
        return mark - ANNOUNCE_LAG, end, True

    def batches(self) -> Iterator[Batch]:
        for key, topics in query_keys(self.categories, self.line_topics).items():
            start, end, moves_mark = self.window(key)
            yield from self._run_query(make_query(key, self.categories, start, end, topics), moves_mark)

    def _run_query(self, planned: PlannedQuery, moves_mark: bool) -> Iterator[Batch]:
        search = arxiv.Search(
            query=planned.query,
            max_results=API_RESULT_CAP,
            sort_by=arxiv.SortCriterion.SubmittedDate,
            sort_order=arxiv.SortOrder.Ascending,
        )
        key = planned.key if moves_mark else None
        page: list[PaperRecord] = []
        stored = 0
        results = self.client.results(search)
        try:
            for result in results:
                page.append(result_to_record(result))
                if len(page) >= self.client.page_size:
                    stored += len(page)
                    yield self._batch(page, key)
                    page = []
        except arxiv.ArxivError as exc:
            raise SourceError(f"arXiv API: {exc}") from None
        if page:
            stored += len(page)
            yield self._batch(page, key)
        total = self.check.total_results or 0
        if stored == 0 and total > 0:
            # arXiv sometimes serves an empty first page for a query that has results; the package
            # takes that as "no results". Say so rather than move on as if the window were empty.
            raise SourceError(
                f"arXiv returned an empty page for {planned.query!r} ({total} results); try again"
            )
        if total > API_RESULT_CAP:
            self.report.warnings.append(
                f"arXiv query {planned.query!r} matched {total} papers but arXiv serves at most "
                f"{API_RESULT_CAP} per query; stored the first {stored} (oldest first). Narrow it with "
                "--since/--until (a shorter window) or fewer --category values; without --since, the "
                "next fetch continues from the last stored paper."
            )
            return
        self.report.notes.append(
            f"query {planned.key}: {stored} results for {planned.start:%Y-%m-%d %H:%M}"
            f" .. {planned.end:%Y-%m-%d %H:%M}"
        )
        # An empty answer earns no mark: it may be arXiv's flakiness rather than a quiet window,
        # and asking again next time costs one request.
        if key is not None and stored:
            yield Batch(records=[], query_key=key, mark=planned.end)

    @staticmethod
    def _batch(page: list[PaperRecord], key: str | None) -> Batch:
        # The page is sorted by submission: everything up to its newest paper is stored with it.
        # Minute precision matches the query syntax; the next window starts at or before it.
        newest = max((dt.datetime.combine(r.published, dt.time()) for r in page if r.published), default=None)
        return Batch(records=page, query_key=key, mark=newest)
