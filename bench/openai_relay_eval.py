"""The `openai` judge on the dev sets, the teacher answering through llm_relay.py: what a key buys.

    python bench/openai_relay_eval.py --pairs ../shared/eval/domain_dev.jsonl --answers ANSWERS.jsonl

ANSWERS are the teacher's replies to the requests `monitor eval --judge openai --pairs PAIRS` sends
(recorded with `llm_relay.py collect`; the teacher never sees the gold labels). This starts the relay
in replay mode and runs `monitor eval --judge openai --json` against it: requests, parsing, the
corrective turn and grounding are the project's own. Prints the eval JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training"))
from build_teacher_set import read_jsonl, relay_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--answers", type=Path, required=True)
    args = parser.parse_args()
    with relay_server(read_jsonl(args.answers)) as env:
        done = subprocess.run(
            ["monitor", "eval", "--judge", "openai", "--pairs", str(args.pairs.resolve()), "--json"],
            env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
    report = json.loads(done.stdout)
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
