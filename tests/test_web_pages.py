"""The claim board's pages say what holds (issue 31): evidence grouped by how it stands (a withheld
leaning never under a stance's heading), a paper page that lists only the claims the paper bears on,
LaTeX read as text, claim pages in pages of evidence well under 200 KB, and the numbers explained.

Real stores (SQLite and PostgreSQL), the app over HTTP (Starlette's test client)."""

from __future__ import annotations

import datetime as dt
import re

from digest_world import World
from starlette.testclient import TestClient
from web_world import board_settings

from monitor.verdicts.rollup import compute_verdicts
from monitor.web.app import create_app
from monitor.web.pages import CARDS_PER_PAGE

CLAIM = (
    r"Pass@$k$ gains shrink: \PassK{1} rises while \textbf{diversity} falls under $\mathcal{O}(n)$ updates"
)
LONG_ABSTRACT = "We study reinforcement learning from verifiable rewards at scale. " * 50  # ~3.3 KB


def _client(store, settings) -> TestClient:
    return TestClient(create_app(store, settings), follow_redirects=False)


def _headings(html: str) -> list[str]:
    found = re.findall(r'<h3 class="group"[^>]*>(.*?)</h3>', html, re.S)
    return [re.sub(r"\s+", " ", h).strip() for h in found]


def _world(store, db_url: str):
    settings = board_settings(db_url)
    w = World(store)
    w.line("rl", "What breaks in RL?")
    w.claim("c1", CLAIM, ("rl",), date_text="2025", start=dt.date(2025, 1, 1), end=dt.date(2025, 12, 31))
    w.claim("c2", "SFT keeps breadth", ("rl",), date_text="2025")
    w.claim("c3", "Entropy collapses under RL", ("rl",), date_text="2025")
    w.paper("2603.00001", r"Counting \emph{rises}: pass@$k$ at scale", dt.date(2026, 3, 2))
    w.assess("2603.00001", "c1", "SUPPORTS", 0.9, evidence="a quoted sentence")
    w.paper("2603.00002", "A leaning nobody trusts", dt.date(2026, 3, 3))
    w.assess("2603.00002", "c1", "RELAXES", 0.4, judge="local", abstained=True, evidence="a quoted sentence")
    w.assess("2603.00002", "c2", "UNRELATED", 0.9)
    w.assess("2603.00002", "c3", "UNRELATED", 0.8, judge="local")
    compute_verdicts(store, settings, as_of=dt.date(2026, 3, 31))
    return w, settings


def test_a_withheld_leaning_is_grouped_apart_from_the_stances_that_count(store, db_url) -> None:
    _, settings = _world(store, db_url)
    page = _client(store, settings).get("/claims/c1")
    assert page.status_code == 200
    assert _headings(page.text) == [
        "Counts toward the verdict (1)",
        "Withheld: related, but its stance is not trusted (counts for nothing) (1)",
    ]
    withheld = page.text[page.text.index('data-standing="withheld"') :]
    assert "A leaning nobody trusts" in withheld and "leans RELAXES 0.40" in withheld
    assert "stance unclear" in withheld
    assert "A leaning nobody trusts" not in page.text[: page.text.index('data-standing="withheld"')]
    assert not re.search(r"<h3[^>]*>\s*(SUPPORTS|RELAXES|OVERTURNS) \(", page.text)
    # What the verdict and the numbers mean, on the page that shows them.
    meaning = '<span class="muted" id="meaning">— strong evidence supports it'
    assert f'id="status">DURABLE {meaning}' in page.text
    assert "many unsure labels never add up to one" in page.text


def test_a_paper_page_lists_the_claims_it_bears_on_and_folds_those_it_does_not(store, db_url) -> None:
    _, settings = _world(store, db_url)
    html = _client(store, settings).get("/papers/2603.00002").text
    assert "Claims it bears on (1)" in html and "Read and found unrelated (2)" in html
    bears = html[html.index('id="bears"') : html.index('id="unrelated"')]
    folded = html[html.index('id="unrelated"') :]
    assert 'data-claim="c1"' in bears and 'data-claim="c2"' not in bears and 'data-claim="c3"' not in bears
    assert 'data-claim="c2"' in folded and 'data-claim="c3"' in folded
    assert '<details id="unrelated">' in html  # folded: shown on request
    assert "many unsure labels never add up to one" in html


def test_latex_in_claims_and_titles_reads_as_text_on_every_page(store, db_url) -> None:
    _, settings = _world(store, db_url)
    c = _client(store, settings)
    plain_claim = "Pass@k gains shrink: 1 rises while diversity falls under O(n) updates"
    for url in ("/", "/claims/c1", "/papers/2603.00001", "/papers/2603.00002"):
        html = c.get(url).text
        for syntax in ("$k$", "\\PassK", "\\textbf", "\\mathcal", "\\emph"):
            assert syntax not in html, (url, syntax)
    assert plain_claim in c.get("/").text and plain_claim in c.get("/claims/c1").text
    assert "Counting rises: pass@k at scale" in c.get("/claims/c1").text
    assert "Counting rises: pass@k at scale" in c.get("/papers/2603.00001").text


def test_a_claim_page_shows_its_evidence_a_page_at_a_time_each_under_200_kb(store, db_url) -> None:
    w, settings = _world(store, db_url)
    many = 2 * CARDS_PER_PAGE + 10
    for n in range(many):
        arxiv_id = f"2604.{n:05d}"
        day = dt.date(2026, 4, 1) + dt.timedelta(days=n % 28)
        w.paper(arxiv_id, f"Paper {n}", day, abstract=LONG_ABSTRACT)
        w.assess(arxiv_id, "c1", "RELAXES", 0.5, judge="local", abstained=True, evidence="at scale")
        w.assess(arxiv_id, "c2", "UNRELATED", 0.9, judge="local")
    compute_verdicts(store, settings, as_of=dt.date(2026, 4, 30))
    c = _client(store, settings)
    seen: list[str] = []
    for number in (1, 2, 3):
        page = c.get(f"/claims/c1?page={number}")
        assert page.status_code == 200 and len(page.content) < 200_000, (number, len(page.content))
        cards = re.findall(r'<div class="card evidence" data-ref="([^"]+)"', page.text)
        seen += cards
        assert len(cards) == (CARDS_PER_PAGE if number < 3 else many + 2 - 2 * CARDS_PER_PAGE)
        assert f"page {number} of 3" in page.text
    assert len(seen) == len(set(seen)) == many + 2  # every card once, across the pages
    assert 'href="?page=2#evidence"' in c.get("/claims/c1").text
    assert c.get("/claims/c1?page=99").status_code == 200  # past the end: the last page
    assert c.get("/claims/c1?page=x").status_code == 200  # not a number: the first


def test_the_board_marks_a_side_held_at_the_cap(store, db_url) -> None:
    """Two unsure RELAXES (0.6 each) would add up to 0.84; with no confident finding the side stays at
    0.60, and the board says so where it prints the number, as the digest does."""
    settings = board_settings(db_url)
    w = World(store)
    w.line("rl", "What breaks in RL?")
    w.claim("c_held", "RL updates few parameters", ("rl",), date_text="2025")
    w.claim("c_sure", "Entropy collapses under RL", ("rl",), date_text="2025")
    labels = (("c_held", 0.6), ("c_held", 0.6), ("c_sure", 0.6), ("c_sure", 0.8))
    for n, (claim, confidence) in enumerate(labels):
        w.paper(f"2603.0000{n + 1}", f"Paper {n + 1}", dt.date(2026, 3, 2 + n))
        w.assess(f"2603.0000{n + 1}", claim, "RELAXES", confidence, evidence="a quoted sentence")
    compute_verdicts(store, settings, as_of=dt.date(2026, 3, 31))
    page = _client(store, settings).get("/")
    assert page.status_code == 200
    rows = {m[0]: m[1] for m in re.findall(r'<tr data-claim="([^"]+)">(.*?)</tr>', page.text, re.S)}
    held = 'title="relaxes or overturns held at 0.60: no finding stated at 0.70 or more yet'
    assert held in rows["c_held"] and "0.60<abbr" in rows["c_held"]
    assert "held" not in rows["c_sure"] and "PERISHABLE" in rows["c_sure"]  # a finding at 0.8 anchors it
