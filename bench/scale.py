"""A library of many claims against a week of many papers: cost of each stage, on SQLite and PostgreSQL.

    nice python bench/scale.py --claims 100 --papers 5000 [--backend sqlite|postgresql]
        [--judge-claims 20] [--keep DIR]
    nice python bench/scale.py --grid 100,300,1000x2000,5000,22000 --judge-claims 10   # and fit
    python bench/scale.py --fit rows.jsonl more.jsonl     # fit rows printed earlier

The claim library is real text only: the seeds' claims (`monitor seeds import seeds/`), then the
teacher set's other and variant claims (training/teacher/*.jsonl, in file order), then, to reach 1,000,
SciFact's claims (../shared/eval/scifact/claims_*.jsonl; real claims, biomedical, so their relevance
cuts are still a per-claim share of papers). The week: the first `--papers` corpus papers
(../shared/arxiv/corpus.jsonl in file order, held-out papers left out; 22,120 less the held-out ones is
all there is, so a 25,000-paper week is not possible) re-dated into ISO week 2026-W20.

Each stage is one `monitor` subprocess; for each: wall seconds, user+sys CPU seconds of the child,
its peak RSS. Stages: import (claims), fetch, relevance, judge (embedded), verdicts, report (digest).
`--judge-claims K` judges only the candidate pairs of K claims (`monitor judge --claim`, spread over
the library) and scales its time by pairs: the embedded judge costs the same per pair whatever the
claim, and judging every pair of the large cells would take hours on two shared cores. The digest is
then written over a store where only those claims have judgements.

Prints one JSON row per cell; with `--grid`, also each stage's exponents in
cost ~ claims^a x papers^b (least squares on log CPU seconds) and the fit's 1,000 x 22,120 estimate.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml
from sqlalchemy import create_engine, text

from monitor.config import JudgeSettings

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MONITOR_SHARED", REPO.parent / "shared"))
PG_BASE = os.environ.get("MONITOR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MONITOR = str(Path(sys.executable).parent / "monitor")
WEEK = "2026-W20"
SEED_CLAIMS = 35  # what `monitor seeds import` makes of seeds/ (10 dated claims, 25 notes)
TEACHER_FILES = ("other_claims.jsonl", "variant_claims.jsonl", "variant_claims_rl.jsonl", "pairs.jsonl")
STAGES = ("import", "fetch", "relevance", "judge", "verdicts", "report")
LINE_SIZE = 20  # claims per line of the generated claim file
_JUDGE = JudgeSettings()  # the defaults the bench's config keeps
TRIAGE_TOP_K, TRIAGE_ABOVE_CLAIMS = _JUDGE.embedded_top_k, _JUDGE.embedded_cut_above_claims


def library(n: int, seed_texts: set[str]) -> list[str]:
    """`n - 35` real claim texts beside the seeds': teacher claims first, then SciFact's."""
    texts: dict[str, None] = {}
    for name in TEACHER_FILES:
        for raw in (REPO / "training" / "teacher" / name).open(encoding="utf-8"):
            claim = " ".join(json.loads(raw)["claim"].split())
            if claim not in seed_texts:
                texts[claim] = None
    for name in ("claims_train.jsonl", "claims_dev.jsonl"):
        for raw in (SHARED / "eval" / "scifact" / name).open(encoding="utf-8"):
            texts[" ".join(json.loads(raw)["claim"].split())] = None
    wanted = n - SEED_CLAIMS
    if wanted > len(texts):
        raise SystemExit(f"only {len(texts) + SEED_CLAIMS} real claim texts, asked for {n}")
    return list(texts)[:wanted]


def seed_texts() -> set[str]:
    texts = set()
    for raw in (REPO / "training" / "teacher" / "pairs.jsonl").open(encoding="utf-8"):
        row = json.loads(raw)
        if row["source"] == "seed":
            texts.add(" ".join(row["claim"].split()))
    return texts


def claim_file(path: Path, texts: list[str]) -> None:
    lines = [
        {"question": f"Scale bench library, part {k // LINE_SIZE + 1}", "claims": texts[k : k + LINE_SIZE]}
        for k in range(0, len(texts), LINE_SIZE)
    ]
    path.write_text(yaml.safe_dump({"lines": lines}, allow_unicode=True, width=1000), encoding="utf-8")


def week(path: Path, n: int) -> int:
    """The first `n` corpus papers (held-out ones left out), re-dated into WEEK; how many there were."""
    held = {line.strip() for line in (SHARED / "eval" / "heldout_papers.txt").open() if line[:1].isdigit()}
    import datetime as dt

    monday = dt.date.fromisocalendar(2026, 20, 1)
    rows = []
    with (SHARED / "arxiv" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for raw in fh:
            paper = json.loads(raw)
            if paper["arxiv_id"] in held:
                continue
            stamp = f"{monday + dt.timedelta(days=len(rows) % 5)}T12:00:00Z"
            rows.append({**paper, "published": stamp, "updated": stamp})
            if len(rows) == n:
                break
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def timed(work: Path, *args: str) -> dict[str, float]:
    """Run `monitor args` in `work`: wall and CPU seconds and peak RSS of that process."""
    cmd = [MONITOR, "--config", str(work / "monitor.toml"), *args]
    started = time.monotonic()
    with (work / "out.txt").open("w") as out, (work / "err.txt").open("w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=work)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU time and peak RSS
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = (work / "err.txt").read_text()[-3000:]
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{tail}")
    return {
        "wall_s": round(time.monotonic() - started, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "rss_mib": round(usage.ru_maxrss / 1024),
    }


def claim_ids(work: Path) -> list[str]:
    cmd = [MONITOR, "--config", str(work / "monitor.toml"), "claims", "--json"]
    done = subprocess.run(cmd, capture_output=True, check=True, cwd=work)
    return [c["id"] for c in json.loads(done.stdout)]


def assessed(url: str) -> int:
    """Pairs judged (current assessments)."""
    engine = create_engine(url)
    with engine.connect() as conn:
        n = conn.execute(text("SELECT count(*) FROM assessments WHERE is_current")).scalar_one()
    engine.dispose()
    return int(n)


def counts(url: str) -> tuple[int, dict[str, int]]:
    """Candidate pairs, and candidate pairs per claim."""
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT claim_id, count(*) FROM candidates GROUP BY claim_id")).all()
    engine.dispose()
    per = {str(c): int(n) for c, n in rows}
    return sum(per.values()), per


def digest_size(path: Path) -> dict[str, int]:
    body = path.read_text(encoding="utf-8")
    return {
        "digest_bytes": len(body.encode()),
        "digest_lines": body.count("\n"),
        "evidence_items": len(re.findall(r"^\d+\. \[", body, re.MULTILINE)),
    }


def cell(url: str, work: Path, n_claims: int, n_papers: int, judge_claims: int | None) -> dict[str, object]:
    (work / "monitor.toml").write_text(
        f'[database]\nurl = "{url}"\n[paths]\nseeds = "{REPO / "seeds"}"\nreports = "{work / "reports"}"\n'
        '[judge]\nprovider = "embedded"\n[report]\nresearch_questions = false\n',
        encoding="utf-8",
    )
    claim_file(work / "library.yaml", library(n_claims, seed_texts()))
    got_papers = week(work / "week.jsonl", n_papers)
    stages = {"import": timed(work, "seeds", "import", str(REPO / "seeds"), str(work / "library.yaml"))}
    stages["fetch"] = timed(work, "fetch", "--source", str(work / "week.jsonl"))
    stages["relevance"] = timed(work, "relevance")
    pairs, per_claim = counts(url)
    ids = claim_ids(work)
    chosen = ids if not judge_claims or judge_claims >= len(ids) else ids[:: max(1, len(ids) // judge_claims)]
    chosen = chosen[: judge_claims or len(ids)]
    judge_args = [a for c in chosen for a in ("--claim", c)] if len(chosen) < len(ids) else []
    stages["judge"] = timed(work, "judge", "--skip-relevance", *judge_args)
    judged_pairs = assessed(url)
    stages["verdicts"] = timed(work, "verdicts", "--json")
    stages["report"] = timed(work, "report", "--period", WEEK)
    # Scaled to every claim only when some were left out, by the pairs the judge reads: with the
    # embedded judge's triage cut (the defaults: 10 a claim above 150 claims; the week is one ISO
    # week) the pairs below it are not its work and are not scaled in.
    cut = TRIAGE_TOP_K if len(ids) > TRIAGE_ABOVE_CLAIMS else None

    def reads(claim: str) -> int:
        return min(per_claim.get(claim, 0), cut) if cut else per_claim.get(claim, 0)

    read_chosen = sum(reads(c) for c in chosen)
    scale = sum(reads(c) for c in ids) / read_chosen if judge_args and read_chosen else 1.0
    row: dict[str, object] = {
        "claims": len(ids),
        "papers": got_papers,
        "pairs": pairs,
        "judged_pairs": judged_pairs,
        "judge_scaled_cpu_s": round(stages["judge"]["cpu_s"] * scale, 1),
        "judge_scaled_wall_s": round(stages["judge"]["wall_s"] * scale, 1),
        "stages": stages,
        "peak_rss_mib": max(s["rss_mib"] for s in stages.values()),
        "load_avg": os.getloadavg(),
    }
    row.update(digest_size(work / "reports" / f"digest-{WEEK}.md"))
    return row


def on_backend(backend: str, job: Callable[[str, Path], dict[str, object]], keep: Path | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        work = keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if backend == "sqlite":
            return job(f"sqlite:///{work / 'scale.db'}", work)
        schema = "scale_" + uuid.uuid4().hex[:10]
        admin = create_engine(PG_BASE)
        with admin.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA {schema}"))
        try:
            return job(f"{PG_BASE}?options=-csearch_path%3D{schema}", work)
        finally:
            with admin.begin() as conn:
                conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
            admin.dispose()


def fit(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per stage, cpu ~ c * claims^a * papers^b, and its estimate at 1,000 claims x 22,120 papers."""
    x = np.array([[1.0, np.log(r["claims"]), np.log(r["papers"])] for r in rows])
    out = {}
    for stage in STAGES:
        cost = [r["judge_scaled_cpu_s"] if stage == "judge" else r["stages"][stage]["cpu_s"] for r in rows]
        y = np.log(np.maximum(cost, 0.05))
        (c, a, b), *_ = np.linalg.lstsq(x, y, rcond=None)
        out[stage] = {"claims_exp": round(a, 2), "papers_exp": round(b, 2),
                      "cpu_s_at_1000x22120": round(float(np.exp(c) * 1000**a * 22120**b), 0)}  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--papers", type=int, default=25000)
    parser.add_argument("--grid", help="CLAIMS,..xPAPERS,.. : every cell, smallest first, then the fit")
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--judge-claims", type=int, help="judge only this many claims' pairs; scale by pairs")
    parser.add_argument("--keep", type=Path, help="work here and keep the store and digest (one cell)")
    parser.add_argument("--fit", type=Path, nargs="+", help="only fit the rows these files hold (JSON lines)")
    args = parser.parse_args()
    if args.fit:
        rows = [json.loads(line) for path in args.fit for line in path.open() if line.startswith('{"claims"')]
        print(json.dumps({"fit": fit(rows)}, indent=1))
        return
    if args.grid:
        claims, papers = (sorted(int(v) for v in part.split(",")) for part in args.grid.split("x"))
        cells = [(c, p) for c in claims for p in papers]
        cells.sort(key=lambda cp: cp[0] * cp[1])
    else:
        cells = [(args.claims, args.papers)]
    rows = []
    for n_claims, n_papers in cells:
        job = functools.partial(cell, n_claims=n_claims, n_papers=n_papers, judge_claims=args.judge_claims)
        row = on_backend(args.backend, job, args.keep)
        row["backend"] = args.backend
        rows.append(row)
        print(json.dumps(row), flush=True)
    if len(rows) >= 3:
        print(json.dumps({"fit": fit(rows)}, indent=1))


if __name__ == "__main__":
    main()
