"""Wall time of the quick commands on a replay store: --help, --version, claims, verdicts, show, a dry run.

    nice python bench/cli_speed.py --work /tmp/replay-store          # builds the store there if missing
    python bench/cli_speed.py --work /tmp/replay-store --repeat 7

The store is the weekly replay of the whole 22,120-paper snapshot with the embedded judge (what
bench/replay_bench.py times; built once with `monitor replay`, then kept in --work). Each command runs
`--repeat` times as a child process; printed per command: median and best wall seconds, median CPU
seconds (user + sys of the child), the exit code, and the 1-minute load average when it ran, since on a
shared machine wall time grows with the load and CPU time much less. Goals (issue 24): --help and
--version under 1 s, the read-only commands under 1.5 s, `judge --dry-run` in seconds when nothing is
pending.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MONITOR_SHARED", REPO.parent / "shared"))
MONITOR = str(Path(sys.executable).parent / "monitor")


def build(work: Path, snapshot: Path) -> None:
    """The replay store, built once: every week of the snapshot judged by the embedded model."""
    work.mkdir(parents=True, exist_ok=True)
    config = work / "monitor.toml"
    config.write_text(
        f'[database]\nurl = "sqlite:///{work / "monitor.db"}"\n[paths]\nseeds = "{REPO / "seeds"}"\n'
        f'reports = "{work / "reports"}"\n[judge]\nprovider = "embedded"\n',
        encoding="utf-8",
    )
    started = time.monotonic()
    cmd = [MONITOR, "--config", str(config), "replay", "--source", str(snapshot), "--every", "week"]
    cmd += ["--from", "2024-01-01", "--to", "2026-08-31"]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"replay failed ({done.returncode}):\n{done.stderr[-3000:]}")
    print(f"built the replay store in {time.monotonic() - started:.0f} s: {work / 'monitor.db'}")


def timed(args: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + sys) and exit code of one child run."""
    started = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - started, usage.ru_utime + usage.ru_stime, proc.returncode


def first_claim(config: Path) -> str:
    out = subprocess.run(
        [MONITOR, "--config", str(config), "verdicts", "--json"], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)[0]["claim_id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="where the replay store is, or is built")
    parser.add_argument("--snapshot", type=Path, default=SHARED / "arxiv" / "corpus.jsonl")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    config = args.work / "monitor.toml"
    if not (args.work / "monitor.db").exists():
        build(args.work, args.snapshot)
    base = [MONITOR, "--config", str(config)]
    claim = first_claim(config)
    commands = {
        "--help": [MONITOR, "--help"],
        "--version": [MONITOR, "--version"],
        "claims": [*base, "claims"],
        "verdicts": [*base, "verdicts"],
        f"show {claim}": [*base, "show", claim],
        "judge --dry-run": [*base, "judge", "--dry-run"],
    }
    print(f"{'command':<24} {'median wall':>11} {'best wall':>9} {'median CPU':>10} {'exit':>4} {'load':>5}")
    for name, cmd in commands.items():
        runs = [timed(cmd) for _ in range(args.repeat)]
        walls = [r[0] for r in runs]
        cpus = [r[1] for r in runs]
        codes = ",".join(map(str, sorted({r[2] for r in runs})))
        print(
            f"{name:<24} {statistics.median(walls):>10.2f}s {min(walls):>8.2f}s "
            f"{statistics.median(cpus):>9.2f}s {codes:>4} {os.getloadavg()[0]:>5.1f}"
        )


if __name__ == "__main__":
    main()
