"""The claim board in a real browser: Playwright driving Debian's chromium against `monitor serve`
started as a subprocess over a store filled by the digest tests' sample world (tests/web_world.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from digest_world import TRUSTED_ENV
from web_world import SCRIPT_PAPER, TOKEN, board_settings, fill

from monitor.store import open_store

CHROMIUM = Path(os.environ.get("MONITOR_TEST_CHROMIUM", "/usr/bin/chromium"))
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the .[dev] extra)")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no chromium at {CHROMIUM}: apt-get install -y chromium (.ci/run does)"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    url = f"sqlite:///{tmp_path / 'monitor.db'}"
    store = open_store(url)
    fill(store, board_settings(url))
    store.close()
    port = free_port()
    env = {**os.environ, **TRUSTED_ENV, "MONITOR_WEB__TOKEN": TOKEN, "MONITOR_DATABASE__URL": url}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from monitor.cli import main; main()", "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None:
            pytest.fail(f"monitor serve exited {proc.returncode}: {proc.stderr.read()}")
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}", proc
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        chromium.close()


def status_on_board(page, claim_id: str) -> str:
    return page.locator(f'tr[data-claim="{claim_id}"] td.status').inner_text()


def test_a_curator_filters_reads_a_claim_and_confirms_a_label_in_the_browser(served, browser) -> None:
    base, proc = served
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(base + "/")
    assert page.locator("#board tbody tr").count() == 4
    page.select_option("select[name=verdict]", "CONTESTED")
    page.click("#filters button")
    assert page.locator("#board tbody tr").count() == 1
    page.click('tr[data-claim="c_sparse"] a')
    assert page.locator("#status").inner_text().startswith("CONTESTED — strong evidence")
    assert page.locator("svg#strength-plot polyline.series").count() == 3
    assert page.locator("svg#strength-plot line.change").count() >= 1

    # Without the token the review form is refused and nothing changes.
    page.goto(base + "/review")
    page.locator('.review-item:has(a[href="/papers/2603.05555"]) button.confirm').click()
    assert "Read-only" in page.locator("#error").inner_text()
    page.goto(base + "/")
    assert status_on_board(page, "c_calib") == "UNTESTED"

    # Signed in, a decisive confirmation of the weak OVERTURNS overturns the claim on the board.
    page.goto(base + "/login?next=/review")
    page.fill("input[name=name]", "Ann Curator")
    page.fill("input[name=token]", TOKEN)
    page.click("#sign-in")
    assert page.locator("#curator").inner_text() == "Ann Curator"
    item = page.locator('.review-item:has(a[href="/papers/2603.05555"])')
    item.locator("input[name=decisive]").check()
    item.locator("button.confirm").click()
    assert "confirm c_calib" in page.locator("#done").inner_text()
    page.goto(base + "/")
    assert status_on_board(page, "c_calib") == "OVERTURNED"
    assert "confirm by Ann Curator" in page.goto(base + "/claims/c_calib").text()

    # An abstract with a <script> renders as text: nothing ran.
    page.goto(f"{base}/papers/{SCRIPT_PAPER}")
    assert "<script>window.__xss = 1</script>" in page.locator(".abstract").inner_text()
    assert page.evaluate("window.__xss") is None and dialogs == []
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert TOKEN not in out + err  # the token is never logged
