"""Helpers for the operations tests: a small snapshot, settings, a config file, the `monitor` command.

`cli` runs the command in this process (the same `main`, the same exit codes and output, a second
or more faster than a fresh interpreter); `monitor_process` and `start_paused` start a real process,
for what only one proves: kills, signals, pause points, locks held by another process.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import io
import json
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from monitor.config import Settings

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "monitor" / "data" / "sample.jsonl.gz"
MONITOR = str(Path(sys.executable).parent / "monitor")

# Two ISO weeks of the shipped sample: a few dozen real papers, enough for candidates in every stage.
SNAPSHOT_FROM = dt.date(2025, 3, 3)  # a Monday
SNAPSHOT_TO = dt.date(2025, 3, 16)  # the Sunday after next
# The defaults but the LLM screen: these tests run the judge (embedded, or a scripted LLM that answers the
# judge's requests); the screen of every claim has its own (test_relevance_screen.py, test_llm_path.py).
FAST_RELEVANCE: dict[str, object] = {"screen": "none"}


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
    """`monitor --config <config> <args>`, in this process unless a pause point asks for a real one."""
    if "MONITOR_TEST_PAUSE_AT" in env_extra:  # a paused process must be one that can be killed
        return monitor_process(config, *args, timeout=timeout, **env_extra)
    return cli("--config", str(config), *args, environ=env(**env_extra))


def monitor_process(
    config: Path, *args: str, timeout: float = 300, **env_extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MONITOR, "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(**env_extra),
    )


@contextlib.contextmanager
def _swapped_environ(environ: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def consoles_as_at_start() -> None:
    """The CLI's consoles built as a new process's import builds them: width from COLUMNS as it is now."""
    import monitor.cli.context as context

    context.console.__init__()
    context.err_console.__init__(stderr=True)


@contextlib.contextmanager
def _consoles_rebuilt_after() -> Iterator[None]:
    """The consoles built again for this process once a command that rebuilt them for itself ends."""
    try:
        yield
    finally:
        consoles_as_at_start()


@contextlib.contextmanager
def _fresh_process_state() -> Iterator[list[Any]]:
    """What a new process would start with and leave behind: no log handlers (so `--verbose` reaches
    stderr), this process's signal handlers back afterwards, and every store the command opened closed."""
    import monitor.cli.context as context
    import monitor.store as stores  # where the CLI's context imports open_store from, on first use

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    opened: list[Any] = []
    real_open = stores.open_store

    def recording_open(*args: Any, **kwargs: Any) -> Any:
        opened.append(real_open(*args, **kwargs))
        return opened[-1]

    root.handlers = []
    tally, context._tally = context._tally, None  # a new process holds back no earlier command's warnings
    stores.open_store = recording_open
    consoles_as_at_start()  # width from COLUMNS, colour from the (captured) streams
    try:
        yield opened
    finally:
        stores.open_store = real_open
        for store in opened:
            store.close()
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = handlers, level
        context._tally = tally
        for number, handler in signals.items():
            signal.signal(number, handler)


def cli(
    *args: str, environ: Mapping[str, str] | None = None, cwd: Path | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """`monitor <args>` run by `monitor.cli.main` in this process, as the console script would run it:
    its stdout, stderr and exit code (an uncaught exception: its traceback and 1, as Python exits)."""
    from monitor.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = [MONITOR, *args]
    code: int = 0
    with contextlib.ExitStack() as stack:
        stack.enter_context(_consoles_rebuilt_after())
        stack.enter_context(_swapped_environ(env() if environ is None else environ))
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        stack.enter_context(_fresh_process_state())
        saved_argv, saved_stdin = sys.argv, sys.stdin
        sys.argv, sys.stdin = argv, io.StringIO(stdin)
        try:
            main()
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:  # sys.exit("message"): Python prints it and exits 1
                print(exc.code, file=sys.stderr)
                code = 1
        except Exception:  # noqa: BLE001 - what the interpreter does with an uncaught exception
            traceback.print_exc()
            code = 1
        finally:
            sys.argv, sys.stdin = saved_argv, saved_stdin
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


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


def bare_environ(**env_extra: str) -> dict[str, str]:
    """This environment with no MONITOR_*/OPENAI_* variable but those given."""
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith(("MONITOR_", "OPENAI_"))}
    clean.update(COLUMNS="200", NO_COLOR="1", **env_extra)
    return clean


def bare_monitor(*args: str, cwd: Path, **env_extra: str) -> subprocess.CompletedProcess[str]:
    """`monitor <args>` in `cwd` with no MONITOR_*/OPENAI_* variable but those given."""
    return cli(*args, environ=bare_environ(**env_extra), cwd=cwd)
