"""Benchmark the README quickstart: `monitor run --source sample` in a fresh directory, as a newcomer runs it.

A temp directory gets a copy of the repository's seeds/ and nothing else (no monitor.toml: SQLite, the
embedded judge, the defaults); `monitor run --source sample` runs there with stderr a pipe, not a
terminal, as under cron. Prints wall time, the pairs judged (and the candidate pairs left for `monitor
judge`), the peak RSS of the `monitor` process, the progress lines stderr carried and its longest
silence. The bar (issue 21): under two minutes on two cores.

    python bench/quickstart.py                # the code `monitor` imports (PYTHONPATH)
    python bench/quickstart.py --keep DIR     # keep the store and digest in DIR
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MONITOR = str(Path(sys.executable).parent / "monitor")


def _watch(stream: object, lines: list[tuple[float, str]], started: float) -> None:
    """Collect stderr's lines with the second each arrived at."""
    for raw in stream:  # type: ignore[attr-defined]
        lines.append((time.monotonic() - started, raw.rstrip("\n")))


def run_quickstart(work: Path) -> dict[str, object]:
    shutil.copytree(REPO / "seeds", work / "seeds")
    started = time.monotonic()
    proc = subprocess.Popen(
        [MONITOR, "run", "--source", "sample"],
        cwd=work,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err: list[tuple[float, str]] = []
    watcher = threading.Thread(target=_watch, args=(proc.stderr, err, started), daemon=True)
    watcher.start()
    out = proc.stdout.read() if proc.stdout else ""
    # wait4 gives this child's own peak RSS (KiB on Linux).
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4 above
    watcher.join(10)
    if proc.returncode != 0:
        tail = "\n".join(line for _, line in err[-40:])
        raise SystemExit(f"monitor run failed ({proc.returncode}):\n{out[-3000:]}\n{tail}")
    runs = subprocess.run(
        [MONITOR, "runs", "--json"], cwd=work, capture_output=True, text=True, check=True
    )
    counts = json.loads(runs.stdout)[0]["counts"]
    times = [0.0, *(t for t, _ in err), wall]
    return {
        "wall_s": round(wall, 1),
        "pairs_judged": counts["judge"]["judged"],
        "candidates": counts["relevance"]["candidates_added"],
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "stderr_lines": len(err),
        "longest_stderr_silence_s": round(max(b - a for a, b in zip(times, times[1:], strict=False)), 1),
        "seconds_per_step": counts.get("seconds", {}),
        "stdout_tail": out.strip().splitlines()[-8:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, help="run in this (new) directory and keep it")
    args = parser.parse_args()
    print(f"monitor run --source sample in a fresh directory, {os.cpu_count()} CPUs", flush=True)
    if args.keep:
        args.keep.mkdir(parents=True)
        result = run_quickstart(args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="quickstart-bench-") as tmp:
            result = run_quickstart(Path(tmp))
    tail = result.pop("stdout_tail")
    for key, value in result.items():
        print(f"{key:26s} {value}")
    print("last lines of stdout:")
    for line in tail:  # type: ignore[attr-defined]
        print("  " + line)


if __name__ == "__main__":
    main()
