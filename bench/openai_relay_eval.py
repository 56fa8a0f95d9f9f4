"""The `openai` judge on the dev sets, the teacher answering through llm_relay.py: what a key buys.

    python bench/openai_relay_eval.py --pairs ../shared/eval/domain_dev.jsonl --answers ANSWERS.jsonl \
        [--prompts DIR] [--lines LINES.json]

ANSWERS are the teacher's replies to the requests `monitor eval --judge openai --pairs PAIRS` sends
(recorded with `llm_relay.py collect`; the teacher never sees the gold labels). This starts the relay
in replay mode and runs `monitor eval --judge openai --json` against it: requests, parsing, the
corrective turn and grounding are the project's own. Prints the eval JSON.

Answers fit the prompts they were given under: `--prompts training/teacher/prompts` for the answers in
training/teacher/dev_answers/ (prompt 76986db88a0e), the default prompts/ for those in
training/teacher/dev_answers_v2/. `--lines` (a JSON list of 1-based line numbers) scores only those
pairs, so two prompt versions can be compared on the same subset.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training"))
from build_teacher_set import REPO, read_jsonl, relay_server  # noqa: E402

from monitor.judge.evaluate import score  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--answers", type=Path, required=True)
    parser.add_argument("--prompts", type=Path, default=REPO / "prompts", help="the prompts the answers fit")
    parser.add_argument("--lines", type=Path, help="JSON list of 1-based line numbers to score")
    args = parser.parse_args()
    with relay_server(read_jsonl(args.answers), args.prompts) as env, tempfile.TemporaryDirectory() as tmp:
        predictions = Path(tmp) / "predictions.jsonl"
        command = ["monitor", "eval", "--judge", "openai", "--pairs", str(args.pairs.resolve()), "--json"]
        done = subprocess.run(
            [*command, "--predictions", str(predictions)], env=env, check=True, capture_output=True, text=True
        )
        rows = read_jsonl(predictions)
    report = json.loads(done.stdout)
    if args.lines:
        wanted = set(json.loads(args.lines.read_text()))
        rows = [r for number, r in enumerate(rows, start=1) if number in wanted]
        gold, predicted = [r["gold"] for r in rows], [r["predicted"] for r in rows]
        scored = score(gold, predicted)
        report = {"n": len(rows), "macro_f1": scored.macro_f1, "accuracy": scored.accuracy}
        report["errors"] = sum(1 for r in rows if r.get("error"))
        report["per_class"] = {k: asdict(v) for k, v in scored.per_class.items()}
    keep = (
        "n",
        "macro_f1",
        "macro_f1_3way",
        "accuracy",
        "errors",
        "ungrounded",
        "per_class",
        "per_class_3way",
    )
    print(json.dumps({k: report[k] for k in keep if k in report}, indent=1))


if __name__ == "__main__":
    main()
