"""A large library's digest (monitor/report/budget.py): changed verdicts and the strongest new evidence
in full, every other claim counted, and the verdict table still counting all of them."""

from __future__ import annotations

import datetime as dt
import re

from digest_world import World, settled_write, trusted_settings

from monitor.report.budget import CLAIMS_IN_FULL, LISTED_CLAIMS

LINES, PER_LINE = 8, 20  # 160 claims: above LISTED_CLAIMS


def test_large_library_digest_shows_changes_and_strongest_news_in_full(store, tmp_path) -> None:
    assert LINES * PER_LINE > LISTED_CLAIMS
    w = World(store)
    for k in range(LINES):
        w.line(f"L{k}", f"Question {k}?")
        for j in range(PER_LINE):
            n = k * PER_LINE + j
            w.claim(f"c{n:03d}", f"Claim number {n} holds", lines=(f"L{k}",), date_text="2025")
    # 40 claims were supported before the period, and get more support in it (news, same verdict).
    w.paper("2602.00001", "Earlier support", dt.date(2026, 2, 2))
    w.paper("2603.00002", "New support", dt.date(2026, 3, 10))
    for n in range(40):
        w.assess("2602.00001", f"c{n:03d}", "SUPPORTS", 0.9)
        w.assess("2603.00002", f"c{n:03d}", "SUPPORTS", 0.5 + n / 100)
    # One claim's verdict changes in the period.
    w.assess("2603.00002", "c100", "SUPPORTS", 0.95)
    settings = trusted_settings()
    settings.paths.reports = tmp_path / "reports"

    result = settled_write(store, settings, "2026-W11", formats=["html"])
    text = result.paths["md"].read_text()

    in_full = re.findall(r"^### \w+( \(was \w+\))?: Claim number (\d+) holds", text, re.MULTILINE)
    shown = sorted(int(n) for _, n in in_full)
    # c100 (changed) and the 25 with the most confident new evidence (c015..c039), nothing else.
    assert shown == [*range(40 - CLAIMS_IN_FULL, 40), 100]
    assert "Claim number 3 holds" not in text  # weaker news: counted, not listed
    assert "+20 more claim" not in text and "+15 more claims of this line" in text  # L0: c000-c014
    assert "134 claims not listed in this digest**, 5 lines with none shown" in text
    assert "## Question 2?" not in text and "## Question 5?" in text
    counts = dict(re.findall(r"^\| (\w+) \| (\d+) \| [^|]+ \|$", text, re.MULTILINE))
    assert len(counts) == 6
    assert sum(int(v) for v in counts.values()) == LINES * PER_LINE  # the table counts every claim
    assert result.stats["lines"] == LINES  # stats describe the period, not what was listed
    html = result.paths["html"].read_text()
    assert "134 claims not listed in this digest" in html and "monitor verdicts --line L0" in html
