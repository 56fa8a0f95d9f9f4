"""Progress bars: a person at a terminal sees fetch, relevance and judge move; cron sees only summaries."""

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


def test_cron_gets_summaries_and_no_bars(tmp_path: Path) -> None:
    config, snapshot = _setup(tmp_path)
    done = monitor(config, "run", "--source", str(snapshot), "--no-email")
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stderr + done.stdout  # no cursor movement, no colours
    assert not re.search(r"\d+/\d+ (papers|pairs)", done.stderr + done.stdout)


def test_bars_can_be_switched_off_at_a_terminal(tmp_path: Path) -> None:
    config, snapshot = _setup(tmp_path)
    args = ["--config", str(config), "run", "--source", str(snapshot), "--no-email"]
    code, seen = _run_on_terminal(args, MONITOR_NO_PROGRESS="1")
    text = seen.decode(errors="replace")
    assert code == 0, text[-2000:]
    assert "run " in text and not re.search(r"\d+/\d+ (papers|pairs)", text)
