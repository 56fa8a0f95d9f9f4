"""The `openai` judge on the dev sets, the teacher answering through llm_relay.py: what a key buys.

    python bench/openai_relay_eval.py --pairs ../shared/eval/domain_dev.jsonl --answers FILE [FILE ...] \
        [--record OUT] [--prompts DIR] [--lines LINES.json] [--second-look all|moving|none]

The answers are the teacher's replies to the requests `monitor eval --judge openai --pairs PAIRS` sends
(the first readings, then the second looks they call for; the teacher never sees the gold labels). This
starts `llm_relay.py mixed` (bench/relay.py), which records any request it has no answer for into
`--record` (for a next round), and runs `monitor eval --judge openai --json` against it: requests,
parsing, the corrective turn, grounding and the second look are the project's own. Prints the scores
after the second look (a pair whose two readings disagree is withheld, as the pipeline sends it to a
curator) and of the first reading alone, each label's precision and recall, the withheld share, and the
digest's operating point (`stated_at_min_confidence`: the labels both readings agree on, stated at the
confidence each label needs, `verdicts.min_confidence` or `min_confidence_against`; how many are right,
how many of gold's they find).

Answers fit the prompts they were given under: `--prompts training/teacher/prompts` for the answers in
training/teacher/dev_answers/ (prompt 76986db88a0e), with `--second-look none` as then. `--lines` (a
JSON list of 1-based line numbers) scores only those pairs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relay import REPO, first_turns, kind_of, read_jsonl, relay  # noqa: E402

from monitor.config import Settings  # noqa: E402
from monitor.judge.evaluate import score  # noqa: E402
from monitor.verdicts.rules import Thresholds  # noqa: E402

BEARING = ("SUPPORTS", "RELAXES", "OVERTURNS")


def said_right_support(rows: list[dict[str, Any]], label: str, floor: float = 0.0) -> tuple[int, int, int]:
    """How many pairs state `label` (not withheld, at `floor` or more), how many of those are right, and
    how many pairs gold labels so."""
    said = [r for r in rows if r["predicted"] == label and not r["abstained"] and r["confidence"] >= floor]
    right = sum(1 for r in said if r["gold"] == label)
    return len(said), right, sum(1 for r in rows if r["gold"] == label)


def stated(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each label's precision and recall among the labels stated (withheld pairs state none)."""
    out: dict[str, Any] = {}
    for label in (*BEARING, "UNRELATED"):
        said, right, support = said_right_support(rows, label)
        out[label] = {
            "precision": round(right / said, 3) if said else None,
            "recall": round(right / support, 3) if support else None,
            "stated": said,
            "support": support,
        }
    return out


def stated_at(rows: list[dict[str, Any]], th: Thresholds) -> dict[str, Any]:
    """The digest's operating point: per bearing label, the labels it states (both readings agree, at
    the confidence that label needs: `verdicts.min_confidence`, `min_confidence_against` for RELAXES and
    OVERTURNS), how many are right, and how many of gold's they find."""
    out: dict[str, Any] = {"min_confidence": th.min_confidence, "min_confidence_against": th.floor("RELAXES")}
    for label in BEARING:
        said, right, support = said_right_support(rows, label, th.floor(label))
        out[label] = f"{right} of {said} right, {right} of {support} found"
    return out


def scores(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    gold, predicted = [r["gold"] for r in rows], [r[key] or r["predicted"] for r in rows]
    result = score(gold, predicted)
    return {
        "n": result.n,
        "macro_f1": round(result.macro_f1, 4),
        "accuracy": round(result.accuracy, 4),
        "per_class": {
            k: {m: round(v, 3) if isinstance(v, float) else v for m, v in asdict(s).items()}
            for k, s in result.per_class.items()
        },
        "confusion": result.confusion,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--answers", type=Path, nargs="+", required=True)
    parser.add_argument("--record", type=Path, help="where requests without an answer are recorded")
    parser.add_argument("--prompts", type=Path, default=REPO / "prompts", help="the prompts the answers fit")
    parser.add_argument("--lines", type=Path, help="JSON list of 1-based line numbers to score")
    parser.add_argument("--second-look", choices=("all", "moving", "none"), default="all")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        record = args.record or Path(tmp) / "recorded.jsonl"
        with relay(args.answers, record) as env:
            env["MONITOR_JUDGE__PROMPTS_DIR"] = str(args.prompts.resolve())
            env["MONITOR_JUDGE__SECOND_LOOK"] = args.second_look
            predictions = Path(tmp) / "predictions.jsonl"
            command = ["monitor", "eval", "--judge", "openai", "--pairs", str(args.pairs.resolve()), "--json"]
            subprocess.run(
                [*command, "--predictions", str(predictions)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            rows = read_jsonl(predictions)
        to_answer = dict(Counter(kind_of(r) for r in first_turns(record)))
    if args.lines:
        wanted = set(json.loads(args.lines.read_text()))
        rows = [r for number, r in enumerate(rows, start=1) if number in wanted]
    withheld = [r for r in rows if r["abstained"]]
    report = {
        "pairs": str(args.pairs),
        "after_second_look": scores(rows, "predicted"),
        "first_reading": scores(rows, "first_label"),
        "stated_after_second_look": stated(rows),
        "stated_at_min_confidence": stated_at(rows, Thresholds.from_settings(Settings().verdicts)),
        "withheld_for_a_curator": len(withheld),
        "withheld_gold": dict(Counter(r["gold"] for r in withheld)),
        "second_looks": dict(Counter(r["second_look"] for r in rows if r["second_look"])),
        "misread": [
            f"line {number}: gold {r['gold']}, read {r['predicted']}"
            for number, r in enumerate(rows, start=1)
            if r["predicted"] != r["gold"]
        ],
        "errors": sum(1 for r in rows if r.get("error")),
        "ungrounded": sum(1 for r in rows if not r["grounded"] and not r.get("error")),
        "to_answer": to_answer,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
