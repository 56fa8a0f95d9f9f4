"""Progress: a person at a terminal sees bars for fetch, relevance and judge; cron and redirected output
get a plain line every MONITOR_PROGRESS_INTERVAL seconds, so a long step is never silent."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from pathlib import Path

from ops_helpers import MONITOR, env, monitor, write_config, write_snapshot

_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\]8;[^\x1b]*\x1b\\")


def _run_on_terminal(args: list[str], timeout: float = 300, **extra: str) -> tuple[int, bytes]:
    """Run `monitor` with stdout and stderr on a pseudo-terminal; all it wrote, without escapes."""
    import pty

    main_fd, child_fd = pty.openpty()
    proc = subprocess.Popen(
        [MONITOR, *args], stdin=subprocess.DEVNULL, stdout=child_fd, stderr=child_fd, env=env(**extra)
    )
    os.close(child_fd)
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main_fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    code = proc.wait(timeout=30)
    os.close(main_fd)
    return code, _ESCAPES.sub(b"", seen)


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot, limit=30)
    return write_config(tmp_path, f"sqlite:///{tmp_path / 'monitor.db'}"), snapshot


def test_a_run_at_a_terminal_draws_a_bar_for_each_long_step(tmp_path: Path) -> None:
    config, snapshot = _setup(tmp_path)
    code, seen = _run_on_terminal(["--config", str(config), "run", "--source", str(snapshot), "--no-email"])
    text = seen.decode(errors="replace")
    assert code == 0, text[-2000:]
    assert re.search(r"fetch file: \d+ new .*papers", text), text[-2000:]
    assert re.search(r"relevance .*\d+/\d+ papers", text), text[-2000:]
    assert re.search(r"judge .*\d+/\d+ pairs", text), text[-2000:]


def test_cron_gets_plain_progress_lines_and_no_bars(tmp_path: Path) -> None:
    config, snapshot = _setup(tmp_path)
    # A short interval makes the small run's steps "long"; stderr is a pipe, as under cron.
    done = monitor(config, "run", "--source", str(snapshot), "--no-email", MONITOR_PROGRESS_INTERVAL="0.02")
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stderr + done.stdout  # no cursor movement, no colours
    assert re.search(r"^progress: relevance \d+/30 papers, \d+s elapsed$", done.stderr, re.M), done.stderr
    ticks = re.findall(r"^progress: judge (\d+)/(\d+) pairs, \d+s elapsed$", done.stderr, re.M)
    assert ticks and all(int(n) <= int(total) for n, total in ticks), done.stderr
    ended = re.search(r"^progress: judge (\d+)/(\d+) pairs, ended after \d+s$", done.stderr, re.M)
    assert ended and ended[1] == ended[2] == str(done_pairs(done.stdout)), done.stderr
    assert "progress:" not in done.stdout  # stdout keeps the summaries scripts parse


def done_pairs(stdout: str) -> int:
    found = re.search(r"judge: pending \d+, papers \d+, judged (\d+)", stdout)
    assert found, stdout
    return int(found[1])


def test_short_steps_and_interval_zero_print_no_progress_lines(tmp_path: Path) -> None:
    config, snapshot = _setup(tmp_path)
    done = monitor(config, "run", "--source", str(snapshot), "--no-email", MONITOR_PROGRESS_INTERVAL="0")
    assert done.returncode == 0, done.stderr
    assert "progress:" not in done.stderr and not re.search(r"\d+/\d+ (papers|pairs)", done.stderr)


def test_a_bad_interval_is_a_configuration_error_before_any_work(tmp_path: Path) -> None:
    config, snapshot = _setup(tmp_path)
    done = monitor(config, "run", "--source", str(snapshot), MONITOR_PROGRESS_INTERVAL="ten")
    assert done.returncode == 2, done.stderr
    assert "MONITOR_PROGRESS_INTERVAL='ten'" in done.stderr
    assert not (tmp_path / "monitor.db").exists()


def test_lines_tick_while_a_step_waits_and_say_how_it_ended(monkeypatch, capsys) -> None:
    from monitor.progress import progress_bar

    monkeypatch.setenv("MONITOR_PROGRESS_INTERVAL", "0.05")
    with progress_bar("judge", 10, "pairs", True) as advance:
        advance(3)
        time.sleep(0.3)  # one slow call: no advance, the lines still come
    err = capsys.readouterr().err
    assert re.search(r"^progress: judge 3/10 pairs, \d+s elapsed$", err, re.M), err
    assert err.splitlines()[-1].startswith("progress: judge 3/10 pairs, ended after ")
    try:
        with progress_bar("fetch sample", None, "papers", True) as advance:
            advance(7)
            time.sleep(0.3)
            raise RuntimeError("source down")
    except RuntimeError:
        pass
    err = capsys.readouterr().err
    assert "progress: fetch sample 7 papers, " in err and "failed after" in err.splitlines()[-1]
    monkeypatch.setenv("MONITOR_PROGRESS_INTERVAL", "5")
    with progress_bar("judge", 10, "pairs", True) as advance:
        advance(10)
    with progress_bar("judge", 10, "pairs", False) as advance:
        monkeypatch.setenv("MONITOR_PROGRESS_INTERVAL", "0.01")
        time.sleep(0.1)
    assert capsys.readouterr().err == ""  # a short step, and a disabled one (the daemon), say nothing


def test_bars_can_be_switched_off_at_a_terminal(tmp_path: Path) -> None:
    config, snapshot = _setup(tmp_path)
    args = ["--config", str(config), "run", "--source", str(snapshot), "--no-email"]
    code, seen = _run_on_terminal(args, MONITOR_NO_PROGRESS="1")
    text = seen.decode(errors="replace")
    assert code == 0, text[-2000:]
    assert "run " in text and not re.search(r"\d+/\d+ (papers|pairs)", text)
