"""Test helper: the digest tests' sample world plus a paper whose abstract carries a script, for the
claim board's tests (tests/test_web.py, tests/test_web_browser.py)."""

from __future__ import annotations

import datetime as dt

from digest_world import World, sample, trusted_settings

from monitor.config import Settings
from monitor.store.db import Store
from monitor.verdicts.rollup import compute_verdicts

TOKEN = "curator-token-7f3a-Qm9v-2xLp-k8Zr"
SCRIPT_ABSTRACT = (
    'We study calibration. <script>window.__xss = 1</script> <a href="javascript:alert(1)">click</a> '
    "Binary rewards keep calibration intact in our runs."
)
SCRIPT_QUOTE = "Binary rewards keep calibration intact"
SCRIPT_PAPER = "2603.09999"


def board_settings(url: str, token: str | None = TOKEN) -> Settings:
    settings = trusted_settings()
    settings.database.url = url
    settings.web.token = None
    if token:
        from pydantic import SecretStr

        settings.web.token = SecretStr(token)
    return settings


def fill(store: Store, settings: Settings) -> None:
    """digest_world.sample, a hostile abstract on c_calib, and verdicts as of the week's end."""
    w = World(store)
    sample(w)
    w.paper(SCRIPT_PAPER, "Calibration <b>kept</b>", dt.date(2026, 3, 14), abstract=SCRIPT_ABSTRACT)
    w.assess(SCRIPT_PAPER, "c_calib", "SUPPORTS", 0.7, judge="local", evidence=SCRIPT_QUOTE)
    compute_verdicts(store, settings, as_of=dt.date(2026, 3, 15))
