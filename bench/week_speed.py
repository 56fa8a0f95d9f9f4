"""The week in under a minute: `monitor judge` + `monitor report` over a 6,000-paper week, and the ways of
running the embedded judge, each against the one-pair-a-call path it ships with.

    python bench/week_speed.py [--papers 6000] [--keep DIR] [--skip-week] [--store URL] [--batch 8]

1. The week: `--papers` corpus papers (not held out) re-dated into one ISO week (bench/digest_size.py),
   the seeds' claims, embedded judge. `monitor judge` (claims, relevance, judge) then `monitor report`,
   each a subprocess: wall seconds, user+sys CPU seconds, peak RSS, pairs judged and pairs/s.
2. The student, over every candidate pair of that store (or of `--store`): the same encoded pairs run
   - one pair a call with onnxruntime's default session (b849e61: worker threads spin while idle);
   - one pair a call with the shipped session (`embeddings.cpu_session`: threads sleep);
   - `--batch` pairs a call, padded to the longest; and `--batch` pairs of equal length a call.
   For each: CPU and wall seconds, pairs/s, and how many labels (label + stance withheld) and how large a
   probability differ from the first. The int8 model quantises activations per call, over the whole
   batch, so a batched pair's numbers depend on its neighbours: that is what the agreement measures.

Prints JSON. The machine's load average is printed with each step: on a shared machine wall time
inflates, CPU time much less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from digest_size import MONITOR, WEEK, prepare_week  # noqa: E402

from monitor.judge.embedded import EmbeddedJudge, Encoded, decide_stance, pad_batch  # noqa: E402
from monitor.judge.sentences import split_sentences  # noqa: E402
from monitor.judge.work import pending_units  # noqa: E402
from monitor.store import open_store  # noqa: E402
from monitor.store.models import Assessment  # noqa: E402


def timed_monitor(work: Path, *args: str) -> dict[str, object]:
    """Run `monitor ARGS` in `work`: wall, user+sys CPU of the child, and the load when it ended."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [MONITOR, "--config", str(work / "monitor.toml"), *args], capture_output=True, text=True, cwd=work
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"monitor {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load_1min": os.getloadavg()[0]}


def week(work: Path, papers: int) -> dict[str, object]:
    fetched = prepare_week(work, papers)
    judge = timed_monitor(work, "judge")
    report = timed_monitor(work, "report", "--period", WEEK)
    with open_store(f"sqlite:///{work / 'monitor.db'}").session() as session:
        pairs = session.scalar(select(func.count()).select_from(Assessment)) or 0
    return {
        "papers": fetched,
        "pairs_judged": pairs,
        "judge": judge,
        "report": report,
        "judge_plus_report_wall_s": round(float(judge["wall_s"]) + float(report["wall_s"]), 1),  # type: ignore[arg-type]
        "pairs_per_s_of_judge_wall": round(pairs / float(judge["wall_s"]), 1),  # type: ignore[arg-type]
        # The largest child's peak: `monitor judge`.
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
    }


def encoded_pairs(url: str, judge: EmbeddedJudge) -> list[Encoded]:
    """Every candidate pair of the store, as the judge encodes it (cached or not)."""
    units = pending_units(open_store(url), judge, force=True)
    out: list[Encoded] = []
    for unit in units:
        sentences = split_sentences(unit.paper.abstract)
        out.extend(judge.encoder.encode(c.text, unit.paper.title, sentences) for c in unit.claims)
    return out


Runner = Callable[[list[Encoded]], np.ndarray]


def one_at_a_time(session: object) -> Runner:
    def run(pairs: list[Encoded]) -> np.ndarray:
        return np.concatenate([session.run(["logits"], pad_batch([(e.ids, e.types)]))[0] for e in pairs])  # type: ignore[attr-defined]

    return run


def batched(session: object, size: int, equal_length: bool) -> Runner:
    def run(pairs: list[Encoded]) -> np.ndarray:
        groups: dict[int, list[int]] = {}
        for i, e in enumerate(pairs):
            groups.setdefault(len(e.ids) if equal_length else 0, []).append(i)
        out = np.zeros((len(pairs), 4), dtype=np.float32)
        for members in groups.values():
            members.sort(key=lambda i: len(pairs[i].ids))  # little padding
            for start in range(0, len(members), size):
                idx = members[start : start + size]
                feed = pad_batch([(pairs[i].ids, pairs[i].types) for i in idx])
                out[idx] = session.run(["logits"], feed)[0]  # type: ignore[attr-defined]
        return out

    return run


def default_session(judge: EmbeddedJudge) -> object:
    """onnxruntime's defaults, as b849e61 ran the student."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(judge.model_path), options, providers=["CPUExecutionProvider"])


def compare(judge: EmbeddedJudge, pairs: list[Encoded], batch: int) -> dict[str, object]:
    ways: dict[str, Runner] = {
        "one pair a call, default session (b849e61)": one_at_a_time(default_session(judge)),
        "one pair a call, shipped session": one_at_a_time(judge.session),
        f"{batch} a call, padded": batched(judge.session, batch, equal_length=False),
        f"{batch} a call, equal length": batched(judge.session, batch, equal_length=True),
    }
    reference: tuple[np.ndarray, list[tuple[str, bool]]] | None = None
    results: dict[str, object] = {}
    for name, run in ways.items():
        cpu, wall = time.process_time(), time.monotonic()
        probs = judge.config.probabilities(run(pairs))
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        labels = [(d.label, d.abstained) for d in (decide_stance(row, judge.config) for row in probs)]
        reference = reference or (probs, labels)
        results[name] = {
            "cpu_s": round(cpu, 2),
            "wall_s": round(wall, 2),
            "pairs_per_s": round(len(pairs) / wall, 1),
            "labels_differing": sum(a != b for a, b in zip(labels, reference[1], strict=True)),
            "max_probability_change": round(float(np.abs(probs - reference[0]).max()), 4),
            "load_1min": os.getloadavg()[0],
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=6000)
    parser.add_argument("--keep", type=Path, help="Work here and keep the store.")
    parser.add_argument("--skip-week", action="store_true", help="Only compare the student's ways.")
    parser.add_argument("--store", help="Compare over this store's candidates (default: the week's).")
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if not args.skip_week:
            results["week"] = week(work, args.papers)
        judge = EmbeddedJudge()
        cpu = time.process_time()
        pairs = encoded_pairs(args.store or f"sqlite:///{work / 'monitor.db'}", judge)
        results["pairs_compared"] = len(pairs)
        results["encode_cpu_s"] = round(time.process_time() - cpu, 2)
        results["student"] = compare(judge, pairs, args.batch)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
