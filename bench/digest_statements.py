"""A digest's per-paper statements, laid out for a grader who reads each against its abstract.

    python bench/digest_statements.py KEEP_DIR OUT_PREFIX [--parts 2] [--sample N --seed S]

KEEP_DIR is what `bench/llm_path_week.py --keep DIR` leaves: the store (monitor.db), the week's papers
(week.jsonl) and the digest (reports/digest-*.md). Every "- on `claim`" line the digest prints under a
paper of the period becomes one numbered statement: the claim's full text, the paper's title and
abstract, and what the digest prints for that pair (label line, quote, rationale), verbatim. Written to
OUT_PREFIX_a.md, OUT_PREFIX_b.md, ... (`--parts` files, statements dealt in turn), each for one grader
(training/teacher/issue30/grading/instructions.md); `--sample N` keeps a seeded random N of them.
Nothing here grades: it only lays out what was printed beside what it rests on.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
from pathlib import Path

PAPER = re.compile(r"^\d+\. \[(?P<title>.*)\]\(https://arxiv\.org/abs/(?P<id>[^)v]+)v\d+\)")
ON = re.compile(r"^\s+- on `(?P<claim>c-[0-9a-f]+)` \(.*?\): (?P<said>.*)$")
VERDICT = re.compile(r"^### (?P<status>[A-Z]+)\b.*$")
CLAIM_LINE = re.compile(r"^- `(?P<claim>c-[0-9a-f]+)` · ")


def verdicts(digest: Path) -> list[dict[str, str]]:
    """Each claim section the digest heads with a verdict other than UNTESTED: its heading and lines."""
    out: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in digest.read_text(encoding="utf-8").splitlines():
        heading = VERDICT.match(line)
        if heading:
            current = {"status": heading["status"], "printed": line, "claim_id": ""}
            if heading["status"] != "UNTESTED":
                out.append(current)
            continue
        if current is not None and line.startswith("- "):
            claim = CLAIM_LINE.match(line)
            current["claim_id"] = current["claim_id"] or (claim["claim"] if claim else "")
            current["printed"] += "\n" + line
        elif line.startswith("#"):
            current = None
    return out


def statements(digest: Path) -> list[dict[str, str]]:
    """(arxiv id, claim id, printed text) for each claim line under a paper, with its quote and rationale."""
    out: list[dict[str, str]] = []
    paper: str | None = None
    for line in digest.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            paper = None
        found = PAPER.match(line)
        if found:
            paper = found["id"]
            continue
        on = ON.match(line)
        if on and paper:
            out.append({"arxiv_id": paper, "claim_id": on["claim"], "printed": on["said"]})
        elif out and paper and line.startswith("     ") and line.strip():
            out[-1]["printed"] += "\n" + line.strip()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keep", type=Path)
    parser.add_argument("out_prefix")
    parser.add_argument("--parts", type=int, default=2)
    parser.add_argument("--verdict-parts", type=int, default=1, help="files the verdicts are split into")
    parser.add_argument("--sample", type=int)
    parser.add_argument("--seed", type=int, default=20261128)
    args = parser.parse_args()
    (digest,) = sorted((args.keep / "reports").glob("digest-*.md"))
    every = statements(digest)
    rows = every
    if args.sample:
        rows = random.Random(args.seed).sample(rows, min(args.sample, len(rows)))
    papers = {}
    for line in (args.keep / "week.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        papers[record["arxiv_id"]] = record
    db = sqlite3.connect(args.keep / "monitor.db")
    claims = {cid: (text, date) for cid, text, date in db.execute("SELECT id, text, date_text FROM claims")}
    parts: list[list[str]] = [[] for _ in range(args.parts)]
    for number, row in enumerate(rows, start=1):
        text, date = claims[row["claim_id"]]
        paper = papers[row["arxiv_id"]]
        parts[(number - 1) % args.parts].append(
            f"## Statement {number}\n\n**Claim** `{row['claim_id']}` (made {date or 'undated'}): {text}\n\n"
            f"**Paper** arXiv:{row['arxiv_id']} — {paper['title']}\n\nAbstract: {paper['abstract']}\n\n"
            f"**What the digest prints about this paper and this claim:**\n\n{row['printed']}\n"
        )
    judged = verdicts(digest)
    shown: list[str] = []
    for number, verdict in enumerate(judged, start=1):
        text, date = claims[verdict["claim_id"]]
        made = date or "undated"
        lines = [f"## Statement V{number}\n\n**Claim** `{verdict['claim_id']}` (made {made}): {text}\n"]
        lines.append(f"**What the digest prints for this claim:**\n\n{verdict['printed']}\n")
        lines.append("**The papers the digest lists for it, and what it prints for each:**\n")
        for row in (r for r in every if r["claim_id"] == verdict["claim_id"]):
            paper = papers[row["arxiv_id"]]
            lines.append(
                f"- arXiv:{row['arxiv_id']} — {paper['title']}\n\n  Abstract: {paper['abstract']}\n\n"
                f"  Printed: {row['printed']}\n"
            )
        shown.append("\n".join(lines))
    size = -(-len(shown) // args.verdict_parts) if shown else 0
    for index in range(args.verdict_parts if shown else 0):
        suffix = f"_{index + 1}" if args.verdict_parts > 1 else ""
        path = Path(f"{args.out_prefix}_verdicts{suffix}.md")
        path.write_text("\n".join(shown[index * size : (index + 1) * size]), encoding="utf-8")
        print(f"{path}: {len(shown[index * size : (index + 1) * size])} verdict statements")
    for index, part in enumerate(parts):
        path = Path(f"{args.out_prefix}_{chr(ord('a') + index)}.md")
        path.write_text("\n".join(part), encoding="utf-8")
        print(f"{path}: {len(part)} statements")


if __name__ == "__main__":
    main()
