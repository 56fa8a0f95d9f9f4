"""The Source object for a `--source` value: api, rss, sample, or a snapshot file path."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from monitor.config import Settings
from monitor.errors import InputError
from monitor.sources.api import ApiSource
from monitor.sources.base import Source
from monitor.sources.files import FileSource
from monitor.sources.rss import RssSource
from monitor.sources.sample import sample_path
from monitor.store.db import Store


def make_source(
    store: Store,
    settings: Settings,
    source: str,
    since: dt.date | None,
    until: dt.date | None,
    categories: list[str] | None,
) -> Source:
    """The Source for `source`; InputError when it is neither a known name nor an existing file."""
    cats = categories or list(settings.arxiv.categories)
    if source == "api":
        return ApiSource(store, settings, cats, since=since, until=until)
    if source == "rss":
        return RssSource(store, settings, cats)
    if source == "sample":
        return FileSource(
            sample_path(settings), since=since, until=until, name="sample", categories=categories
        )
    path = Path(source)
    if not path.exists():
        raise InputError(source, None, "no such file (use --source api, rss, sample or a snapshot path)")
    return FileSource(path, since=since, until=until, name="file", categories=categories)
