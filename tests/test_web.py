"""`monitor serve` over HTTP (Starlette's test client, a real store on SQLite and PostgreSQL): the
board says what `monitor verdicts` says, writes need the curator token and a CSRF token, paper text
is escaped, and binding beyond 127.0.0.1 needs a token."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from schema_fixtures import load_schema
from sqlalchemy import text
from starlette.testclient import TestClient
from web_world import SCRIPT_PAPER, SCRIPT_QUOTE, TOKEN, board_settings, fill

from monitor.review.queue import decisions, review_queue
from monitor.store import SCHEMA_VERSION, open_store
from monitor.verdicts.rollup import current_verdicts
from monitor.web.app import create_app


@pytest.fixture
def world(store, db_url):
    settings = board_settings(db_url)
    fill(store, settings)
    return store, settings


def client(store, settings) -> TestClient:
    return TestClient(create_app(store, settings), follow_redirects=False)


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', html).group(1)


def sign_in(c: TestClient, name: str = "Ann Curator") -> None:
    page = c.get("/login")
    done = c.post("/login", data={"csrf": csrf_of(page.text), "name": name, "token": TOKEN})
    assert done.status_code == 303, done.text


def rows_of(html: str) -> dict[str, str]:
    """claim id -> status, as the board's table shows them."""
    found = re.findall(r'<tr data-claim="([^"]+)">\s*<td class="status (\w+)">', html)
    return dict(found)


def test_the_board_shows_every_claim_with_the_verdict_monitor_verdicts_prints(world) -> None:
    store, settings = world
    c = client(store, settings)
    page = c.get("/")
    assert page.status_code == 200
    assert rows_of(page.text) == {v.claim_id: v.status for v in current_verdicts(store)}
    assert rows_of(page.text)["c_sparse"] == "CONTESTED"
    assert rows_of(c.get("/?verdict=CONTESTED").text) == {"c_sparse": "CONTESTED"}
    assert set(rows_of(c.get("/?line=div").text)) == {"c_sparse", "c_div"}
    assert set(rows_of(c.get("/?dated=undated").text)) == {"c_div"}
    assert set(rows_of(c.get("/?q=calibration").text)) == {"c_calib"}
    waiting = {item.claim_id for item in review_queue(store, settings)}
    assert f"{len(review_queue(store, settings))} waiting for review" in page.text and "c_calib" in waiting


def test_the_claim_page_plots_strength_per_side_and_escapes_paper_text(world) -> None:
    store, settings = world
    c = client(store, settings)
    page = c.get("/claims/c_sparse")
    assert page.status_code == 200
    svg = re.search(r"<svg id=\"strength-plot\".*?</svg>", page.text, re.S).group(0)
    assert set(re.findall(r'class="series" data-side="(\w+)"', svg)) == {"SUPPORTS", "AGAINST", "OVERTURNS"}
    assert 'class="change"' in svg and "CONTESTED" in svg  # the verdict change is marked
    # The hostile title and quote (digest_world.NASTY) render as text, never as markup.
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    hrefs = re.findall(r'href="([^"]*)"', page.text)
    assert all(h.startswith("/") or h.startswith("https://arxiv.org/") for h in hrefs), hrefs


def test_a_script_in_an_abstract_renders_as_text_and_the_quote_is_marked(world) -> None:
    store, settings = world
    c = client(store, settings)
    for url in ("/claims/c_calib", f"/papers/{SCRIPT_PAPER}"):
        page = c.get(url)
        assert page.status_code == 200
        assert "<script>" not in page.text and "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in page.text
        assert 'href="javascript:' not in page.text
    assert f"<mark>{SCRIPT_QUOTE}</mark>" in c.get("/claims/c_calib").text
    assert "c_calib" in c.get(f"/papers/{SCRIPT_PAPER}").text  # the paper page lists the claim


def test_the_embedded_judge_is_named_embedded_on_every_page(world) -> None:
    """Its assessments are stored under its old name "local"; no page shows that name."""
    store, settings = world
    c = client(store, settings)
    claim = c.get("/claims/c_calib").text
    assert "judge embedded ·" in claim and "judge local" not in claim
    assert "<td>embedded</td>" in c.get(f"/papers/{SCRIPT_PAPER}").text
    review = c.get("/review").text
    assert any(i.arxiv_id == SCRIPT_PAPER for i in review_queue(store, settings))  # it waits for a curator
    assert "· embedded ·" in review and "· local ·" not in review
    # Under its heading a waiting card says why once, not "counts: waits (for review: waits for ...)".
    assert "· for review: waits for a curator" in claim and "counts: waits" not in claim


def _calib_item(store, settings) -> int:
    return next(i.assessment_id for i in review_queue(store, settings) if i.arxiv_id == "2603.05555")


def test_writes_need_the_curator_token_and_the_form_token(world) -> None:
    store, settings = world
    item = _calib_item(store, settings)
    c = client(store, settings)
    csrf = csrf_of(c.get("/review").text)
    refused = c.post(f"/review/{item}", data={"csrf": csrf, "do": "OVERTURNS"})
    assert refused.status_code == 403 and "Read-only" in refused.text
    wrong = c.post("/login", data={"csrf": csrf, "name": "Eve", "token": "guess"})
    assert wrong.status_code == 403 and "set-cookie" not in wrong.headers  # the session is unchanged
    sign_in(c)
    no_csrf = c.post(f"/review/{item}", data={"do": "OVERTURNS"})
    assert no_csrf.status_code == 403 and "CSRF" in no_csrf.text
    other = client(store, settings)  # another visitor's form token does not pass for this session
    forged = c.post(f"/review/{item}", data={"csrf": csrf_of(other.get("/review").text), "do": "OVERTURNS"})
    assert forged.status_code == 403
    bad_bearer = client(store, settings).post(
        f"/review/{item}", data={"do": "OVERTURNS"}, headers={"Authorization": "Bearer nope"}
    )
    assert bad_bearer.status_code == 403
    assert decisions(store) == []  # nothing was written by any refused request


def test_a_signed_in_curator_confirms_and_the_board_moves_with_their_name_recorded(world) -> None:
    store, settings = world
    item = _calib_item(store, settings)
    c = client(store, settings)
    assert rows_of(c.get("/").text)["c_calib"] == "UNTESTED"
    sign_in(c, "Ann Curator")
    csrf = csrf_of(c.get("/review").text)
    done = c.post(f"/review/{item}", data={"csrf": csrf, "do": "OVERTURNS", "decisive": "1"})
    assert done.status_code == 303 and done.headers["location"].startswith("/review?done=confirm")
    assert rows_of(c.get("/").text)["c_calib"] == "OVERTURNED"
    [decision] = decisions(store)
    assert decision["action"] == "confirm" and decision["decisive"] is True
    assert decision["history"][0]["reviewer"] == "Ann Curator"
    assert "confirm by Ann Curator" in c.get("/claims/c_calib").text
    # A script's header token also writes, with the reviewer it names.
    paper = next(i for i in review_queue(store, settings) if i.arxiv_id == SCRIPT_PAPER)
    scripted = client(store, settings).post(
        f"/review/{paper.assessment_id}",
        data={"do": "dismiss"},
        headers={"Authorization": f"Bearer {TOKEN}", "X-Reviewer": "bot"},
    )
    assert scripted.status_code == 303
    assert {d["history"][-1]["reviewer"] for d in decisions(store)} == {"Ann Curator", "bot"}


def test_without_a_token_the_board_is_read_only(world) -> None:
    store, _ = world
    settings = board_settings(store.engine.url.render_as_string(hide_password=False), token=None)
    c = client(store, settings)
    page = c.get("/review")
    assert "no curator token" in page.text
    login = c.post("/login", data={"csrf": csrf_of(page.text), "name": "x", "token": ""})
    assert login.status_code == 403


def test_migration_8_adds_the_reviewer_column_to_an_older_store(db_url) -> None:
    load_schema(db_url, 7)
    again = open_store(db_url)
    with again.engine.connect() as conn:
        assert conn.execute(text("SELECT version FROM schema_version")).scalar() == SCHEMA_VERSION
        conn.execute(text("SELECT reviewer FROM reviews"))
    again.close()


def _serve(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    environ = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_WEB")}
    environ.update(env)
    code = "from monitor.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, env=environ
    )


def test_listening_beyond_loopback_without_a_token_is_refused(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'monitor.db'}"
    done = _serve("--db", url, "serve", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 2, done.stderr
    assert "MONITOR_WEB__TOKEN" in done.stderr and "0.0.0.0" in done.stderr
    assert not (tmp_path / "monitor.db").exists()  # refused before anything was opened
    (tmp_path / "monitor.toml").write_text('[web]\ntoken = "in-a-file"\n')
    filed = _serve("--config", str(tmp_path / "monitor.toml"), "serve")
    assert filed.returncode == 2 and "environment, not in a file" in filed.stderr


def test_a_proposed_wording_is_rejected_from_the_review_page_and_kept_in_the_claims_history(world) -> None:
    from monitor.store.rewordings import add_proposal, get_rewording

    store, settings = world
    with store.session() as s:
        proposal = add_proposal(
            s,
            {
                "claim_id": "c_quiet",
                "text": "GRPO collapses out of distribution <i>unless</i> regularised",
                "condition": "with a KL penalty it holds",
                "cited": ["2602.00002"],
                "model": "m",
                "prompt_version": "p",
            },
        )
    c = client(store, settings)
    review = c.get("/review").text
    assert "&lt;i&gt;unless&lt;/i&gt;" in review and f'action="/wordings/{proposal}"' in review
    refused = c.post(f"/wordings/{proposal}", data={"csrf": csrf_of(review), "do": "reject"})
    assert refused.status_code == 403
    sign_in(c)  # a new session: the form token of the page read before signing in is void
    form = {"csrf": csrf_of(c.get("/review").text), "do": "reject", "note": "too broad"}
    done = c.post(f"/wordings/{proposal}", data=form)
    assert done.status_code == 303
    with store.session() as s:
        assert get_rewording(s, proposal).status == "rejected"
    assert "rejected: “GRPO collapses" in c.get("/claims/c_quiet").text
