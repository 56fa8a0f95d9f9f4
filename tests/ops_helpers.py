"""Helpers for the operations tests: a small snapshot, settings, a config file, the `monitor` command."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from monitor.config import Settings

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "monitor" / "data" / "sample.jsonl.gz"
MONITOR = str(Path(sys.executable).parent / "monitor")

# Two ISO weeks of the shipped sample: a few dozen real papers, enough for candidates in every stage.
SNAPSHOT_FROM = dt.date(2025, 3, 3)  # a Monday
SNAPSHOT_TO = dt.date(2025, 3, 16)  # the Sunday after next
FAST_RELEVANCE: dict[str, object] = {}  # the defaults; a small snapshot yields few candidates


def write_snapshot(
    path: Path, start: dt.date = SNAPSHOT_FROM, end: dt.date = SNAPSHOT_TO, limit: int = 40
) -> int:
    """Write the sample's papers published in start..end (at most `limit`) as a JSONL snapshot."""
    rows = []
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if start.isoformat() <= row["published"][:10] <= end.isoformat():
                rows.append(row)
    rows = rows[:limit]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def sections(tmp_path: Path, db_url: str, **extra: dict[str, Any]) -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = {
        "database": {"url": db_url},
        "paths": {"seeds": str(REPO / "seeds"), "reports": str(tmp_path / "reports")},
        "judge": {"provider": "embedded"},
        "relevance": dict(FAST_RELEVANCE),
    }
    for name, values in extra.items():
        data.setdefault(name, {}).update(values)
    return data


def make_settings(tmp_path: Path, db_url: str, **extra: dict[str, Any]) -> Settings:
    return Settings(**sections(tmp_path, db_url, **extra))


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def write_config(tmp_path: Path, db_url: str, **extra: dict[str, Any]) -> Path:
    path = tmp_path / "monitor.toml"
    out = []
    for name, values in sections(tmp_path, db_url, **extra).items():
        out.append(f"[{name}]")
        out += [f"{k} = {_toml_value(v)}" for k, v in values.items()]
        out.append("")
    path.write_text("\n".join(out), encoding="utf-8")
    return path


def env(**extra: str) -> dict[str, str]:
    out = dict(os.environ)
    out.pop("MONITOR_TEST_PAUSE_AT", None)
    out.update(extra)
    return out


def monitor(
    config: Path, *args: str, timeout: float = 300, **env_extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MONITOR, "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(**env_extra),
    )


def start_paused(config: Path, point: str, marker: Path, *args: str) -> subprocess.Popen[str]:
    """Start `monitor <args>` that will stop at test pause point `point`; wait until it is there."""
    proc = subprocess.Popen(
        [MONITOR, "--config", str(config), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(MONITOR_TEST_PAUSE_AT=point, MONITOR_TEST_PAUSE_FILE=str(marker)),
    )
    wait_paused(proc, marker, point, 240)
    return proc


def wait_paused(proc: subprocess.Popen[str], marker: Path, point: str, timeout: float = 120) -> None:
    """Wait until `proc` writes that it paused at `point`; fail with its output if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker.exists() and f"PAUSED {point}" in marker.read_text():
            return
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"monitor exited {proc.returncode} before {point}:\n{out}\n{err}")
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"monitor never reached {point}")


def bare_monitor(*args: str, cwd: Path, **env_extra: str) -> subprocess.CompletedProcess[str]:
    """`python -m monitor <args>` in `cwd` with no MONITOR_*/OPENAI_* variable but those given."""
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith(("MONITOR_", "OPENAI_"))}
    clean.update(COLUMNS="200", NO_COLOR="1", **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )
