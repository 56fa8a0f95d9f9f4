"""Benchmark `monitor replay`: the shared corpus, weekly, with the embedded judge, on SQLite and PostgreSQL.

Prints wall time, peak memory (max RSS of the `monitor` process), papers/s, pairs judged and digests
written per backend. The bar: the whole corpus (22,120 papers, 2024-01..2026-08) in under 15 minutes on
a 2-core machine.

    python bench/replay_bench.py                                  # whole corpus, both backends
    python bench/replay_bench.py --from 2026-01-01 --to 2026-03-31  # a slice
    python bench/replay_bench.py --backends sqlite --snapshot path/to/corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MONITOR_SHARED", REPO.parent / "shared"))
PG_BASE = os.environ.get("MONITOR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MONITOR = str(Path(sys.executable).parent / "monitor")


def run_replay(url: str, work: Path, args: argparse.Namespace) -> dict[str, object]:
    config = work / "monitor.toml"
    config.write_text(
        f'[database]\nurl = "{url}"\n[paths]\nseeds = "{REPO / "seeds"}"\nreports = "{work / "reports"}"\n'
        '[judge]\nprovider = "embedded"\n',
        encoding="utf-8",
    )
    cmd = [
        MONITOR,
        "--config",
        str(config),
        "replay",
        "--source",
        str(args.snapshot),
        "--from",
        args.start,
        "--to",
        args.end,
        "--every",
        args.every,
        "--judge",
        "embedded",
        "--json",
    ]
    started = time.monotonic()
    with (work / "out.json").open("w") as out_fh, (work / "err.txt").open("w") as err_fh:
        proc = subprocess.Popen(cmd, stdout=out_fh, stderr=err_fh)
        # wait4 gives this child's own peak RSS (KiB on Linux).
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code  # reaped by wait4 above
    if code != 0:
        raise SystemExit(f"replay failed ({code}):\n{(work / 'err.txt').read_text()[-3000:]}")
    peak_kib = usage.ru_maxrss
    out = (work / "out.json").read_text()
    data = json.loads(out)
    return {
        "wall_s": round(wall, 1),
        # On a shared machine wall time inflates with the load; CPU time much less.
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "load_1min_at_end": os.getloadavg()[0],
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "periods": data["periods"],
        "papers": data["papers"],
        "papers_per_s": round(data["papers"] / wall, 1) if wall else None,
        "pairs_judged": data["pairs_judged"],
        "digests_written": data["digests_written"],
        "verdict_rows": data["verdict_changes"],
    }


def pg_schema() -> tuple[str, object]:
    schema = "bench_" + uuid.uuid4().hex[:10]
    admin = create_engine(PG_BASE)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))

    def drop() -> None:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()

    return f"{PG_BASE}?options=-csearch_path%3D{schema}", drop


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--snapshot", type=Path, default=SHARED / "arxiv" / "corpus.jsonl")
    parser.add_argument("--from", dest="start", default="2024-01-01")
    parser.add_argument("--to", dest="end", default="2026-08-31")
    parser.add_argument("--every", choices=["week", "month"], default="week")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    if not args.snapshot.exists():
        raise SystemExit(f"{args.snapshot}: not found (set MONITOR_SHARED or --snapshot)")
    print(
        f"replay {args.snapshot.name} {args.start}..{args.end} every {args.every}, embedded judge, "
        f"{os.cpu_count()} CPUs"
    )
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
            work = Path(tmp)
            if backend == "sqlite":
                result = run_replay(f"sqlite:///{work / 'bench.db'}", work, args)
            else:
                url, drop = pg_schema()
                try:
                    result = run_replay(url, work, args)
                finally:
                    drop()  # type: ignore[operator]
        print(f"{backend:10s} " + "  ".join(f"{k}={v}" for k, v in result.items()), flush=True)


if __name__ == "__main__":
    main()
