"""How long and how loud a digest is: the sample's last week, and a week of real volume.

    python bench/digest_size.py [--papers 6000] [--skip-sample] [--keep DIR]

1. The sample: `monitor run --source sample` in a fresh folder (seeds, SQLite, embedded judge), then
   the digest of the sample's last week.
2. A week of real volume: `--papers` corpus papers (not held out) re-dated into one ISO week
   (2026-W20), fetched from that file, judged with the embedded judge, and that week's digest.

For each: Markdown lines, evidence items shown, verdict counts, the summary's figures, and the seconds
`monitor judge` and `monitor report` took. Prints JSON; limits are for the reader, not asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MONITOR_SHARED", REPO.parent / "shared"))
MONITOR = str(Path(sys.executable).parent / "monitor")
WEEK = "2026-W20"


def monitor(work: Path, *args: str) -> tuple[str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [MONITOR, "--config", str(work / "monitor.toml"), *args], capture_output=True, text=True, cwd=work
    )
    if done.returncode != 0:
        raise SystemExit(f"monitor {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout, time.monotonic() - started


def setup(work: Path) -> None:
    (work / "monitor.toml").write_text(
        f'[database]\nurl = "sqlite:///{work / "monitor.db"}"\n[paths]\nseeds = "{REPO / "seeds"}"\n'
        f'reports = "{work / "reports"}"\n[judge]\nprovider = "embedded"\n'
        "[report]\nresearch_questions = false\n",
        encoding="utf-8",
    )


def measure(path: Path) -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    evidence = len(re.findall(r"^\d+\. \[", text, re.MULTILINE))
    status = r"^\| (OVERTURNED|CONTESTED|PERISHABLE|DURABLE|UNTESTED) \| (\d+) \|"
    counts = dict(re.findall(status, text, re.MULTILINE))
    summary = re.search(r"^- Pairs judged: .*$", text, re.MULTILINE)
    return {
        "file": path.name,
        "markdown_lines": text.count("\n"),
        "evidence_items_shown": evidence,
        "more_lines": len(re.findall(r"^\+\d+ more:", text, re.MULTILINE)),
        "verdicts": {k: int(v) for k, v in counts.items()},
        "summary": summary.group(0) if summary else "",
    }


def sample_week(work: Path) -> dict[str, object]:
    setup(work)
    _, run_s = monitor(work, "run", "--source", "sample", "--no-email")
    reports = sorted((work / "reports").glob("digest-*.md"))
    out = measure(reports[-1])
    out["run_s"] = round(run_s, 1)
    return out


def prepare_week(work: Path, papers: int) -> int:
    """A store in `work` with the seeds and `papers` corpus papers (not held out) fetched into one ISO
    week, nothing judged yet; returns how many papers were fetched."""
    setup(work)
    held = {
        line.strip()
        for line in (SHARED / "eval" / "heldout_papers.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    monday = dt.date.fromisocalendar(2026, 20, 1)
    rows = []
    with (SHARED / "arxiv" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for raw in fh:
            paper = json.loads(raw)
            if paper["arxiv_id"] in held:
                continue
            day = monday + dt.timedelta(days=len(rows) % 5)
            stamp = f"{day.isoformat()}T12:00:00Z"
            rows.append({**paper, "published": stamp, "updated": stamp})
            if len(rows) == papers:
                break
    snapshot = work / "week.jsonl"
    snapshot.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monitor(work, "seeds", "import")
    monitor(work, "fetch", "--source", str(snapshot))
    return len(rows)


def volume_week(work: Path, papers: int) -> dict[str, object]:
    fetched = prepare_week(work, papers)
    _, judge_s = monitor(work, "judge")
    _, report_s = monitor(work, "report", "--period", WEEK)
    out = measure(work / "reports" / f"digest-{WEEK}.md")
    out.update(papers=fetched, judge_s=round(judge_s, 1), report_s=round(report_s, 1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=6000)
    parser.add_argument("--skip-sample", action="store_true")
    parser.add_argument("--keep", type=Path, help="Work here and keep the stores and digests.")
    args = parser.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        if not args.skip_sample:
            (base / "sample").mkdir(parents=True, exist_ok=True)
            results["sample_last_week"] = sample_week(base / "sample")
        (base / "volume").mkdir(parents=True, exist_ok=True)
        results[f"{args.papers}_papers_week"] = volume_week(base / "volume", args.papers)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
