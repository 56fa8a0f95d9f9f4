"""Turn the teacher's answers into the teacher set, through the project's own `openai` judge path.

    python training/build_teacher_set.py --drawn training/teacher/drawn.jsonl \
        --requests REQS.jsonl --answers ANSWERS.jsonl [--answers MORE.jsonl] --out OUT.jsonl

REQS is what `llm_relay.py collect` recorded while `monitor eval --judge openai --pairs DRAWN` ran;
ANSWERS are the teacher's replies to those requests ({key, content}). This script starts
`llm_relay.py replay` with the answers, runs `monitor eval --judge openai --pairs DRAWN --predictions`
against it, so every answer goes through the judge's request, parser (schema validation, one
corrective turn) and evidence grounding, and writes each answered pair with the teacher's label,
confidence, rationale and evidence. Pairs without an answer are left out. Each pair's `split`
(train / calib / test) follows a hash of its paper id, so a paper is in one split only.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from jsonl import read_jsonl, write_jsonl

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
RELAY = SHARED / "tools" / "llm_relay.py"
TEACHER_MODEL = "claude (build-time helper agents)"
# The judge prompts the teacher set was answered under (a frozen copy; prompts/ has moved on since).
TEACHER_PROMPTS = REPO / "training" / "teacher" / "prompts"


def split_of(arxiv_id: str) -> str:
    """test 15%, calib 15%, train 70%, fixed by the paper id."""
    bucket = int(hashlib.sha256(arxiv_id.encode()).hexdigest(), 16) % 20
    return "test" if bucket < 3 else "calib" if bucket < 6 else "train"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def relay_server(answers: list[dict], prompts: Path = TEACHER_PROMPTS) -> Iterator[dict[str, str]]:
    """`llm_relay.py replay` answering from `answers`; yields the environment that points the judge at it.

    Answers are keyed by the exact request, so the judge must render it with the prompts the teacher
    read: by default the frozen copy in teacher/prompts/ (version 76986db88a0e), not today's prompts/.
    """
    with tempfile.TemporaryDirectory() as tmp:
        answers_file = Path(tmp) / "answers.jsonl"
        write_jsonl(answers_file, answers)
        port = free_port()
        relay = subprocess.Popen(
            [
                sys.executable,
                str(RELAY),
                "replay",
                str(port),
                str(Path(tmp) / "seen.jsonl"),
                str(answers_file),
            ],
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(50):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            yield dict(
                os.environ,
                MONITOR_JUDGE__BASE_URL=f"http://127.0.0.1:{port}/v1",
                MONITOR_JUDGE__API_KEY="relay",
                MONITOR_JUDGE__MODEL="teacher",
                MONITOR_JUDGE__PROMPTS_DIR=str(prompts.resolve()),
            )
        finally:
            relay.terminate()
            relay.wait()


def replay(drawn: Path, answers: list[dict]) -> list[dict]:
    """Run `monitor eval --judge openai --predictions` over DRAWN against the relay; the predictions."""
    with relay_server(answers) as env, tempfile.TemporaryDirectory() as tmp:
        predictions = Path(tmp) / "predictions.jsonl"
        command = ["monitor", "eval", "--judge", "openai", "--pairs", str(drawn.resolve()), "--json"]
        subprocess.run([*command, "--predictions", str(predictions)], env=env, check=True,
                       stdout=subprocess.DEVNULL, cwd=tmp)  # fmt: skip
        return read_jsonl(predictions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawn", type=Path, required=True)
    parser.add_argument("--requests", type=Path, required=True)
    parser.add_argument("--answers", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    from monitor.judge.prompts import load_prompts

    answers = [a for path in args.answers for a in read_jsonl(path)]
    answered = {a["key"] for a in answers}
    # The request for pair N asks about claim id line-N (monitor eval's numbering of the pairs file).
    answered_lines = {
        int(r["claim_ids"][0].removeprefix("line-"))
        for r in read_jsonl(args.requests)
        if r["key"] in answered
    }
    rows = []
    for number, p in enumerate(replay(args.drawn, answers), start=1):
        if number not in answered_lines:
            continue
        if p["error"]:
            print(f"pair {number}: no valid answer ({p['error']}); left out", file=sys.stderr)
            continue
        out = {k: v for k, v in p.items() if k not in ("gold", "predicted", "confidence", "error")}
        out.update(
            label=p["predicted"],
            teacher_confidence=p["confidence"],
            teacher_model=TEACHER_MODEL,
            prompt_version=load_prompts(TEACHER_PROMPTS).version,
            split=split_of(p["arxiv_id"]),
        )
        rows.append(out)
    write_jsonl(args.out, rows)
    print(f"{len(rows)} teacher pairs -> {args.out}")


if __name__ == "__main__":
    main()
