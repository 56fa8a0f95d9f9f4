"""A real week of the shipped sample through the LLM path, the teacher answering: screen, judge, second look.

    python bench/llm_path_week.py --week 2026-W20 [--answers FILE ...] [--record OUT] [--keep DIR]
        [--prompts DIR] [--set MONITOR_NAME=VALUE ...]

The week's papers (held-out ones left out) are fetched from a snapshot into a fresh SQLite store with
the seeds' 35 claims, and `monitor judge` then `monitor report --period WEEK` run as a user runs them,
their LLM calls answered by `llm_relay.py mixed` (bench/relay.py) from `--answers` (default: the kept
answers in training/teacher/issue30/, and with `--prompts` a revision's answers kept beside its
prompts). Requests it has no answer for are recorded into `--record`: a round's new requests are
answered by the teacher (training/teacher_tool.py), then the bench runs again, until nothing new is
recorded (the screen's answers decide what is judged, the judge's what gets a second look). Printed: per
stage, calls, tokens (the cached part as the relay reports it) and what gpt-4o-mini would charge; the
screen's kept share; the judge's labels; the digest's path. With `--keep DIR` the store, the digest and
the week's snapshot stay in DIR for a reader to grade. `--set` gives every `monitor` command of the run
a setting (`MONITOR_VERDICTS__MIN_CONFIDENCE_AGAINST=0.55`): the same answers under other rules, for a
blind comparison of the two digests (bench/digest_statements.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relay import REPO, SHARED, first_turns, kind_of, relay  # noqa: E402

ANSWERS = REPO / "training" / "teacher" / "issue30"
SAMPLE = REPO / "monitor" / "data" / "sample.jsonl.gz"


def week_days(week: str) -> tuple[dt.date, dt.date]:
    year, number = week.split("-W")
    monday = dt.date.fromisocalendar(int(year), int(number), 1)
    return monday, monday + dt.timedelta(days=6)


def week_snapshot(week: str, path: Path, sample: int | None = None) -> int:
    """The sample's papers published in `week`, held-out ones left out (a seeded `sample` of them, if
    given), as a JSONL snapshot."""
    first, last = week_days(week)
    heldout = set((SHARED / "eval" / "heldout_papers.txt").read_text().split())
    rows = []
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as shipped:
        for line in shipped:
            row = json.loads(line)
            day = dt.date.fromisoformat(row["published"][:10])
            if first <= day <= last and row["arxiv_id"] not in heldout:
                rows.append(row)
    if sample is not None and sample < len(rows):
        rows = sorted(random.Random(20261128).sample(rows, sample), key=lambda r: r["arxiv_id"])
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def monitor(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["monitor", *args], env=env, cwd=cwd, capture_output=True, text=True, check=False)


def stage_counts(db: Path) -> dict[str, Any]:
    """Per stage (provider), calls and tokens from the store's llm_exchanges, and the judge's labels."""
    import sqlite3

    con = sqlite3.connect(db)
    try:
        usage = con.execute(
            "SELECT provider, COUNT(*), SUM(prompt_tokens), SUM(cached_tokens), SUM(completion_tokens) "
            "FROM llm_exchanges GROUP BY provider"
        ).fetchall()
        screen = dict(con.execute("SELECT screen, COUNT(*) FROM candidates GROUP BY screen").fetchall())
        labels = dict(
            con.execute("SELECT label, COUNT(*) FROM assessments WHERE is_current GROUP BY label").fetchall()
        )
        second = dict(
            con.execute(
                "SELECT second_look, COUNT(*) FROM assessments WHERE is_current AND second_look IS NOT NULL "
                "GROUP BY second_look"
            ).fetchall()
        )
    finally:
        con.close()
    return {
        "usage": {
            p: {"calls": n, "prompt": pt, "cached": ct, "completion": co} for p, n, pt, ct, co in usage
        },
        "screen": screen,
        "labels": labels,
        "second_look": second,
    }


def price(usage: dict[str, dict[str, int]]) -> float:
    """USD at gpt-4o-mini's rates (the project's defaults), cached prompt tokens at theirs."""
    from monitor.config import Settings
    from monitor.llm.cost import token_cost

    settings = Settings()
    return sum(
        token_cost(settings, u["prompt"] or 0, u["completion"] or 0, False, u["cached"] or 0)
        for u in usage.values()
    )


def run_week(
    week: str,
    answers: list[Path],
    record: Path,
    folder: Path,
    sample: int | None = None,
    prompts: Path | None = None,
    settings: dict[str, str] | None = None,
) -> dict[str, Any]:
    papers = week_snapshot(week, folder / "week.jsonl", sample)
    with relay(answers, record) as env:
        env.update(
            MONITOR_DATABASE__URL=f"sqlite:///{folder / 'monitor.db'}",
            MONITOR_PATHS__SEEDS=str(REPO / "seeds"),
            MONITOR_PATHS__REPORTS=str(folder / "reports"),
            MONITOR_REPORT__RESEARCH_QUESTIONS="false",
            COLUMNS="200",
        )
        if prompts is not None:
            env["MONITOR_JUDGE__PROMPTS_DIR"] = str(prompts.resolve())
        env.update(settings or {})
        steps = [
            ("import", ("seeds", "import")),
            ("fetch", ("fetch", "--source", str(folder / "week.jsonl"))),
            ("judge", ("judge",)),
            ("report", ("report", "--period", week)),
        ]
        outcome: dict[str, Any] = {"week": week, "papers": papers}
        for name, args in steps:
            done = monitor(env, folder, *args)
            outcome[name] = done.returncode
            if done.returncode not in (0, 6):
                outcome[f"{name}_stderr"] = done.stderr[-2000:]
    outcome |= stage_counts(folder / "monitor.db")
    outcome["usd_gpt4o_mini"] = round(price(outcome["usage"]), 4)
    outcome["to_answer"] = dict(Counter(kind_of(r) for r in first_turns(record)))
    digests = sorted((folder / "reports").glob("digest-*.md"))
    outcome["digest"] = str(digests[-1]) if digests else None
    return outcome


def kept_answers(prompts: Path | None) -> list[Path]:
    """The answers kept for the shipped prompts and, for a revision's prompts kept beside its answers
    (`--prompts training/teacher/issue30/judge_prompt_v7/prompts`), that revision's answers too: they
    answer different requests, so neither shadows the other."""
    files = sorted(ANSWERS.glob("*.jsonl"))
    if prompts is not None and prompts.resolve().parent != ANSWERS.resolve():
        files += sorted(prompts.resolve().parent.glob("*.jsonl"))
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--week", default="2026-W20")
    parser.add_argument("--answers", type=Path, nargs="*", help="answer files (default: the kept ones)")
    parser.add_argument("--record", type=Path, help="where requests without an answer are recorded")
    parser.add_argument("--keep", type=Path, help="keep the store, digest and snapshot in this folder")
    parser.add_argument("--sample", type=int, help="a seeded random sample of the week's papers")
    parser.add_argument("--prompts", type=Path, help="the prompts the answers fit (default: shipped)")
    parser.add_argument("--set", nargs="*", default=[], metavar="MONITOR_NAME=VALUE", help="run settings")
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.set)
    if not all(name.startswith("MONITOR_") for name in settings):
        parser.error("--set takes MONITOR_NAME=VALUE pairs")
    answers = args.answers if args.answers is not None else kept_answers(args.prompts)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        record = args.record or folder / "recorded.jsonl"
        outcome = run_week(args.week, answers, record, folder, args.sample, args.prompts, settings)
        if args.keep:
            if args.keep.exists():
                shutil.rmtree(args.keep)
            shutil.copytree(folder, args.keep)
            outcome["digest"] = outcome["digest"] and str(
                args.keep / Path(outcome["digest"]).relative_to(folder)
            )
    print(json.dumps(outcome, indent=2))


if __name__ == "__main__":
    main()
