"""Tools for a teacher answering the judge's recorded requests (llm_relay.py collect output).

    python training/teacher_tool.py split REQUESTS.jsonl OUTDIR --size 100  # OUTDIR/NN/requests.jsonl
    python training/teacher_tool.py show CHUNK_DIR [--start I] [--count N]  # the requests, readable
    python training/teacher_tool.py check CHUNK_DIR                         # CHUNK_DIR/answers.jsonl

`show` prints each request's user message as sent (each system prompt is numbered and printed once,
before the first request that uses it, and every request names its own: the judge's is the same for
all, a screen request's carries its claims). `check`
runs every answer through the project's own parser (monitor.judge.schema, or the screen's
monitor.relevance.screen.parse_screen) and evidence grounding (monitor.judge.grounding) and says what is
missing, invalid or ungrounded, so the teacher can fix its answer; it never proposes a label.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from jsonl import read_jsonl

from monitor.judge.base import Judgement
from monitor.judge.grounding import ground
from monitor.judge.schema import parse_answer
from monitor.llm.answers import InvalidAnswer
from monitor.llm.texts import PaperText
from monitor.relevance.screen import parse_screen

_TAG = re.compile(r"<(title|abstract)>(.*?)</\1>", re.DOTALL)
_CLAIM = re.compile(r'<claim id="([^"]+)"[^>]*>(.*?)</claim>', re.DOTALL)


def split(requests: Path, outdir: Path, size: int) -> None:
    rows = read_jsonl(requests)
    for start in range(0, len(rows), size):
        chunk = outdir / f"{start // size:02d}"
        chunk.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[start : start + size])
        (chunk / "requests.jsonl").write_text(text, encoding="utf-8")
    print(f"{len(rows)} requests -> {(len(rows) + size - 1) // size} chunks in {outdir}")


def show(chunk: Path, start: int, count: int | None) -> None:
    rows = read_jsonl(chunk / "requests.jsonl")
    # Each distinct system prompt is numbered and printed once; every request names the one it uses
    # (requests of a chunk may alternate between two).
    numbers: dict[str, int] = {}
    for row in rows:
        numbers.setdefault(row["messages"][0]["content"], len(numbers) + 1)
    shown = {row["messages"][0]["content"] for row in rows[:start]}
    for index, row in enumerate(rows[start : start + count if count else None], start=start):
        system = row["messages"][0]["content"]
        if system not in shown:
            shown.add(system)
            print(f"=== SYSTEM S{numbers[system]} ===")
            print(system + "\n")
        ids = row.get("claim_ids")
        named = f" claim_ids={ids}" if ids else ""
        print(f"=== #{index} key={row['key']} system S{numbers[system]}{named} ===")
        print(row["messages"][-1]["content"] + "\n")


_SCREEN_CLAIM = re.compile(r'<claim id="C\d+">')
_SCREEN_PAPER = re.compile(r'<paper id="P\d+">')


def screen_problems(row: dict, text: str) -> list[str]:
    """What keeps a screen answer from being used (the screen's own parser), [] when nothing does."""
    claims = len(_SCREEN_CLAIM.findall(row["messages"][0]["content"]))
    papers = len(_SCREEN_PAPER.findall(row["messages"][-1]["content"]))
    try:
        parse_screen(text, papers, claims)
    except InvalidAnswer as exc:
        return [f"invalid: {exc}"]
    return []


def paper_of(row: dict) -> PaperText:
    parts = dict(_TAG.findall(row["messages"][-1]["content"]))
    return PaperText("teacher", 1, parts.get("title", ""), parts.get("abstract", ""))


def check(chunk: Path) -> None:
    rows = read_jsonl(chunk / "requests.jsonl")
    answers_path = chunk / "answers.jsonl"
    answers = {a["key"]: a["content"] for a in read_jsonl(answers_path)} if answers_path.exists() else {}
    problems = 0
    for index, row in enumerate(rows):
        content = answers.get(row["key"])
        if content is None:
            print(f"#{index} {row['key']}: no answer yet")
            problems += 1
            continue
        text = content if isinstance(content, str) else json.dumps(content)
        schema = ((row.get("response_format") or {}).get("json_schema") or {}).get("name")
        if schema == "screened_papers":
            for problem in screen_problems(row, text):
                print(f"#{index} {row['key']}: {problem}")
                problems += 1
            continue
        try:
            judgements: list[Judgement] = parse_answer(text, row["claim_ids"])
        except InvalidAnswer as exc:
            print(f"#{index} {row['key']}: invalid: {exc}")
            problems += 1
            continue
        for judgement in judgements:
            claims = dict(_CLAIM.findall(row["messages"][-1]["content"]))
            grounding = ground(judgement, paper_of(row), claims.get(judgement.claim_id))
            if not grounding.grounded:
                quote = judgement.evidence
                print(f"#{index} {row['key']}: evidence {quote!r} is not usable: {grounding.reason}")
                problems += 1
    print(f"{len(rows)} requests, {len(answers)} answers, {problems} problem(s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("split")
    p.add_argument("requests", type=Path)
    p.add_argument("outdir", type=Path)
    p.add_argument("--size", type=int, default=100)
    p = sub.add_parser("show")
    p.add_argument("chunk", type=Path)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--count", type=int)
    p = sub.add_parser("check")
    p.add_argument("chunk", type=Path)
    args = parser.parse_args()
    if args.command == "split":
        split(args.requests, args.outdir, args.size)
    elif args.command == "show":
        show(args.chunk, args.start, args.count)
    else:
        check(args.chunk)


if __name__ == "__main__":
    main()
