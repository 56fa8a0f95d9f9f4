"""The claim board's guard (issue 33, items 4 and 13): a token of real strength, sign-in attempts
limited per client and overall, a new session at sign-in, sign-out that kills every copy of the
cookie, Secure cookies over https (also behind a trusted proxy), no framing, no file path shown to a
visitor, and an over-long id answered 404. Over HTTP through Starlette's test client on SQLite and
PostgreSQL, and through `monitor serve` as a subprocess where the server's own behaviour matters."""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from digest_world import TRUSTED_ENV, settled_write
from starlette.testclient import TestClient
from web_world import TOKEN, board_settings, fill

from monitor.errors import ConfigError
from monitor.review.queue import decisions, review_queue
from monitor.store import open_store
from monitor.store.digests import save_digest
from monitor.web.app import create_app
from monitor.web.security import MIN_TOKEN_CHARS

SESSION = "monitor_session"


@pytest.fixture
def world(store, db_url, tmp_path):
    settings = board_settings(db_url)
    settings.paths.reports = tmp_path / "reports"
    settings.paths.reports.mkdir()
    fill(store, settings)
    return store, settings


def client(store, settings, address: str = "203.0.113.1", https: bool = False) -> TestClient:
    base = "https://board.example" if https else "http://testserver"
    app = create_app(store, settings)
    return TestClient(app, base_url=base, follow_redirects=False, client=(address, 40000))


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', html).group(1)


def holding(app, session: str) -> TestClient:
    """A client that sends `session` as its session cookie (set where the server's own would be)."""
    c = TestClient(app, follow_redirects=False)
    c.cookies.set(SESSION, session, domain="testserver.local", path="/")
    return c


def copy_of(app, original: TestClient) -> TestClient:
    """Another client holding every cookie `original` holds (a copied browser profile, a stolen jar)."""
    c = TestClient(app, follow_redirects=False)
    for cookie in original.cookies.jar:
        c.cookies.set(cookie.name, cookie.value, domain=cookie.domain, path=cookie.path)
    return c


def try_token(c: TestClient, token: str, name: str = "Eve") -> int:
    page = c.get("/login")
    return c.post("/login", data={"csrf": csrf_of(page.text), "name": name, "token": token}).status_code


def sign_in(c: TestClient, name: str = "Ann Curator") -> None:
    assert try_token(c, TOKEN, name) == 303


def signed_in_as(c: TestClient) -> str | None:
    found = re.search(r'<span id="curator">([^<]*)</span>', c.get("/review").text)
    return found.group(1) if found else None


def _item(store, settings) -> int:
    return next(i.assessment_id for i in review_queue(store, settings) if i.arxiv_id == "2603.05555")


# --- item 4: the token, sign-in limits, sessions ---------------------------------------------------


def _serve(*args: str, timeout: float = 20, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MONITOR_WEB")}
    environ.update(env)
    code = "from monitor.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout, env=environ
    )


@pytest.mark.parametrize(
    ("token", "said"),
    [("", "is empty"), ("   ", "is empty"), ("x", "is 1 characters long"), ("ab" * 15, "only 2 different")],
    ids=["blank", "spaces", "one-character", "two-letters-repeated"],
)
def test_a_blank_or_weak_token_is_refused_wherever_the_board_listens(tmp_path, token, said) -> None:
    url = f"sqlite:///{tmp_path / 'monitor.db'}"
    for host in ("0.0.0.0", "127.0.0.1"):
        done = _serve("--db", url, "serve", "--host", host, "--port", "0", MONITOR_WEB__TOKEN=token)
        assert done.returncode == 2, done.stderr
        assert "MONITOR_WEB__TOKEN" in done.stderr and said in done.stderr
        assert f"at least {MIN_TOKEN_CHARS} characters" in done.stderr
        assert token.strip() == "" or token not in done.stderr  # the token itself is never echoed
    assert not (tmp_path / "monitor.db").exists()  # refused before anything was opened


def test_the_app_itself_refuses_a_weak_token(store, db_url) -> None:
    with pytest.raises(ConfigError, match="MONITOR_WEB__TOKEN is 5 characters long"):
        create_app(store, board_settings(db_url, token="short"))


def test_failed_sign_ins_are_limited_per_client_then_overall_and_the_right_token_waits_too(world) -> None:
    store, settings = world
    app = create_app(store, settings)

    def at(address: str) -> TestClient:
        return TestClient(app, follow_redirects=False, client=(address, 40000))

    eve = at("203.0.113.66")
    page = eve.get("/login")
    form = {"csrf": csrf_of(page.text), "name": "Eve"}
    started = time.monotonic()
    answers = [eve.post("/login", data={**form, "token": f"guess-{n}"}) for n in range(50)]
    assert time.monotonic() - started < 30
    assert [a.status_code for a in answers[:5]] == [403] * 5
    assert {a.status_code for a in answers[5:]} == {429}
    limited = answers[-1]
    assert "Too many failed sign-in attempts from your address" in limited.text
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    # The right token right after: refused as well, and nobody is signed in.
    right = eve.post("/login", data={**form, "name": "Eve", "token": TOKEN})
    assert right.status_code == 429 and signed_in_as(eve) is None
    # A wrong header token counts as an attempt too, and a limited address cannot use the right one.
    item = _item(store, settings)
    header = eve.post(f"/review/{item}", data={"do": "dismiss"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert header.status_code == 429 and "Too many failed sign-in attempts" in header.text
    # Another address is not held up by Eve's tries ...
    assert try_token(at("198.51.100.7"), TOKEN, "Ann") == 303
    # ... until the failures of all addresses together reach the overall limit.
    for n in range(5):
        for _ in range(5):
            assert try_token(at(f"198.51.100.{20 + n}"), "wrong-guess") == 403
    everyone = at("198.51.100.99")
    page = everyone.get("/login")
    over = everyone.post("/login", data={"csrf": csrf_of(page.text), "name": "Ann", "token": TOKEN})
    assert over.status_code == 429 and "from all addresses together" in over.text
    assert decisions(store) == []


def test_sign_in_starts_a_new_session_and_a_chosen_or_planted_one_is_worthless(world) -> None:
    store, settings = world
    app = create_app(store, settings)
    chosen = "attacker-chosen-session-0123456789"
    visitor = holding(app, chosen)
    first = visitor.get("/login")
    assert first.cookies.get(SESSION) not in (None, chosen)  # a session the client named is not taken
    # The attacker reads the board, gets a valid (anonymous) session and plants it on the curator.
    attacker = TestClient(app, follow_redirects=False)
    attacker.get("/review")
    planted = attacker.cookies[SESSION]
    curator = holding(app, planted)
    sign_in(curator)
    assert curator.cookies[SESSION] != planted
    assert signed_in_as(curator) == "Ann Curator" and signed_in_as(attacker) is None
    item = _item(store, settings)
    form = {"csrf": csrf_of(attacker.get("/review").text), "do": "dismiss"}
    forged = attacker.post(f"/review/{item}", data=form)
    assert forged.status_code == 403 and decisions(store) == []


def test_signing_out_kills_every_copy_of_the_cookie(world) -> None:
    store, settings = world
    app = create_app(store, settings)
    ann = TestClient(app, follow_redirects=False)
    sign_in(ann)
    copy = copy_of(app, ann)
    assert signed_in_as(copy) == "Ann Curator"  # before sign-out the copy is as good as the original
    out = ann.post("/logout", data={"csrf": csrf_of(ann.get("/review").text)})
    assert out.status_code == 303
    assert signed_in_as(ann) is None and signed_in_as(copy) is None
    item = _item(store, settings)
    late = copy.post(f"/review/{item}", data={"csrf": csrf_of(copy.get("/review").text), "do": "OVERTURNS"})
    assert late.status_code == 403 and "sign in" in late.text
    assert decisions(store) == []


def test_a_post_without_a_sign_in_is_told_to_sign_in_not_about_csrf(world) -> None:
    store, settings = world
    item = _item(store, settings)
    bare = client(store, settings).post(f"/review/{item}", data={"do": "OVERTURNS"})
    assert bare.status_code == 403
    assert "sign in at /login" in bare.text and "CSRF" not in bare.text
    assert decisions(store) == []


# --- item 13: cookies over https, framing, paths, long ids -----------------------------------------


def test_cookies_are_secure_over_https_and_only_then(world) -> None:
    store, settings = world
    secure = client(store, settings, https=True)
    cookie = secure.get("/").headers["set-cookie"]
    assert "secure" in [p.strip().lower() for p in cookie.split(";")]
    sign_in(secure)
    plain = client(store, settings).get("/").headers["set-cookie"]
    assert "secure" not in plain.lower()


def _digests(store, settings, tmp_path: Path) -> Path:
    """The week's digest written into the reports folder, and an older one recorded at a path
    outside it (a moved folder); returns that outside file."""
    settled_write(store, settings, "2026-W11", formats=["md", "html"])
    outside = tmp_path / "elsewhere" / "digest-2026-W10.md"
    outside.parent.mkdir()
    outside.write_text("# old digest\n")
    with store.session() as s:
        fields = {"markdown_path": str(outside), "html_path": None, "stats": {}, "content_sha256": "0" * 64}
        save_digest(s, "2026-W10", dt.date(2026, 3, 2), dt.date(2026, 3, 8), fields)
    return outside


def test_no_page_can_be_framed_and_no_file_path_reaches_a_visitor(world, tmp_path) -> None:
    store, settings = world
    outside = _digests(store, settings, tmp_path)
    c = client(store, settings)
    feed = c.get("/feed.xml")
    assert feed.status_code == 200
    assert "file:" not in feed.text and str(tmp_path) not in feed.text
    links = re.findall(r'href="([^"]+)"', feed.text)
    assert "http://testserver/feed.xml" in links
    served = [link for link in links if link.startswith("http://testserver/digests/")]
    assert {link.rsplit("/", 1)[1] for link in served} == {"digest-2026-W11.html", "digest-2026-W11.md"}
    for link in served:  # every link the feed gives is a page this board serves
        assert c.get(link.removeprefix("http://testserver")).status_code == 200
    missing = c.get("/digests/2026-W10")
    assert missing.status_code == 404
    assert str(outside.parent) not in missing.text and str(settings.paths.reports) not in missing.text
    for url in ("/", "/claims/c_calib", "/digests", "/digests/2026-W11", "/feed.xml", "/login", "/nowhere"):
        answer = c.get(url)
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"], url
        assert answer.headers["x-frame-options"] == "DENY", url


def test_an_over_long_id_is_404_not_500(world) -> None:
    store, settings = world
    c = client(store, settings)
    # 60,000 characters: past SQLite's LIKE pattern limit (50,000), within the test client's URL limit.
    for url in ("/claims/" + "c" * 60_000, "/papers/" + "2" * 60_000, "/claims/c%25_" + "x" * 200):
        answer = c.get(url)
        assert answer.status_code == 404, url
        assert len(answer.text) < 10_000  # the id is not echoed back
    assert c.get("/claims/c_calib").status_code == 200


# --- a real server behind a proxy ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[callable]:
    url = f"sqlite:///{tmp_path / 'monitor.db'}"
    store = open_store(url)
    fill(store, board_settings(url))
    store.close()
    procs: list[subprocess.Popen[str]] = []

    def start(**env: str) -> str:
        port = _free_port()
        environ = {**os.environ, **TRUSTED_ENV, "MONITOR_WEB__TOKEN": TOKEN, "MONITOR_DATABASE__URL": url}
        environ.update(env)
        proc = subprocess.Popen(
            [sys.executable, "-c", "from monitor.cli import main; main()", "serve", "--port", str(port)],
            cwd=tmp_path,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return f"http://127.0.0.1:{port}"
            if proc.poll() is not None:
                pytest.fail(f"monitor serve exited {proc.returncode}: {proc.stderr.read()}")
            time.sleep(0.1)
        pytest.fail("monitor serve did not listen within 60 s")

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)


def _cookie(base: str, **headers: str) -> str:
    with urllib.request.urlopen(urllib.request.Request(base + "/login", headers=headers), timeout=20) as r:
        return r.headers["set-cookie"]


def test_behind_a_trusted_proxy_an_https_request_gets_a_secure_cookie(served) -> None:
    trusted = served()
    assert "secure" in _cookie(trusted, **{"X-Forwarded-Proto": "https"}).lower()
    assert "secure" not in _cookie(trusted).lower()
    # The same header from an address that is no trusted proxy is not believed.
    untrusted = served(MONITOR_WEB__TRUSTED_PROXIES='["192.0.2.1"]')
    assert "secure" not in _cookie(untrusted, **{"X-Forwarded-Proto": "https"}).lower()
