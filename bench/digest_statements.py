"""A digest's per-paper statements, laid out for a grader who reads each against its abstract.

    python bench/digest_statements.py KEEP_DIR [KEEP_DIR ...] --out OUT_PREFIX [--parts 2]
        [--sample N --seed S] [--only-differing]

KEEP_DIR is what `bench/llm_path_week.py --keep DIR` leaves: the store (monitor.db), the week's papers
(week.jsonl) and the digest (reports/digest-*.md). Every "- on `claim`" line the digest prints under a
paper of the period becomes one numbered statement: the claim's full text, the paper's title and
abstract, and what the digest prints for that pair (label line, quote, rationale), verbatim. Written to
OUT_PREFIX_a.md, OUT_PREFIX_b.md, ... (`--parts` files, statements dealt in turn), each for one grader
(training/teacher/issue30/grading/instructions.md); `--sample N` keeps a seeded random N of them.
Verdicts (a claim's heading and lines, with every paper listed under it) go to OUT_PREFIX_verdicts.md.
Several KEEP_DIRs (one week under two prompts, say) are graded blind: their statements are pooled, one
printed alike by several runs is laid out once, the order is shuffled, and OUT_PREFIX_key.jsonl says
which runs print each numbered statement (bench/statement_grades.py tallies the grades per run);
`--only-differing` leaves out what every run of a week prints alike (one rule changed on the same
answers: only what the change changed is graded; several weeks' pairs of runs may be pooled).
`--leave-out REGEX` removes what it matches from every printing before they are compared and laid out:
a bar the changed rule prints in every line would otherwise tell the arms apart (graders read two bars
in one file as the digest contradicting itself).
Nothing here grades: it only lays out what was printed beside what it rests on.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
from collections import Counter
from pathlib import Path

PAPER = re.compile(r"^(?P<number>\d+)\. \[(?P<title>.*)\]\(https://arxiv\.org/abs/(?P<id>[^)v]+)v\d+\)")
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
    """(arxiv id, claim id, printed text) for each claim line under a paper, with its quote and rationale,
    and the paper's number in its section (what a verdict's "paper 2 below" points to)."""
    out: list[dict[str, str]] = []
    paper: str | None = None
    number = ""
    for line in digest.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            paper = None
        found = PAPER.match(line)
        if found:
            paper, number = found["id"], found["number"]
            continue
        on = ON.match(line)
        if on and paper:
            out.append({"arxiv_id": paper, "claim_id": on["claim"], "printed": on["said"], "number": number})
        elif out and paper and line.startswith("     ") and line.strip():
            out[-1]["printed"] += "\n" + line.strip()
    return out


def statement_block(number: int, row: dict[str, str], claims: dict, papers: dict) -> str:
    text, date = claims[row["claim_id"]]
    paper = papers[row["arxiv_id"]]
    return (
        f"## Statement {number}\n\n**Claim** `{row['claim_id']}` (made {date or 'undated'}): {text}\n\n"
        f"**Paper** arXiv:{row['arxiv_id']} — {paper['title']}\n\nAbstract: {paper['abstract']}\n\n"
        f"**What the digest prints about this paper and this claim:**\n\n{row['printed']}\n"
    )


def verdict_block(
    number: int, verdict: dict[str, str], every: list[dict[str, str]], claims: dict, papers: dict
) -> str:
    text, date = claims[verdict["claim_id"]]
    lines = [
        f"## Statement V{number}\n\n**Claim** `{verdict['claim_id']}` (made {date or 'undated'}): {text}\n"
    ]
    lines.append(f"**What the digest prints for this claim:**\n\n{verdict['printed']}\n")
    lines.append(
        "**The papers the digest lists for it (numbered as in its section), and what it prints for each:**\n"
    )
    for row in (r for r in every if r["claim_id"] == verdict["claim_id"]):
        paper = papers[row["arxiv_id"]]
        lines.append(
            f"- paper {row['number']}: arXiv:{row['arxiv_id']} — {paper['title']}\n\n"
            f"  Abstract: {paper['abstract']}\n\n"
            f"  Printed: {row['printed']}\n"
        )
    return "\n".join(lines)


Statement = tuple[dict[str, str], list[int]]  # what is printed, and the runs (indices) that print it
Verdict = tuple[dict[str, str], list[dict[str, str]], list[int]]  # heading, its claim's papers, runs


def pooled(
    keeps: list[Path], leave_out: re.Pattern[str] | None = None
) -> tuple[list[Statement], list[Verdict], dict, dict]:
    """Each run's per-paper statements and verdicts (less what `leave_out` matches), one printed alike by
    several runs kept once with the runs that print it; then the claims and the papers, for laying them
    out."""

    def shown(text: str) -> str:
        return leave_out.sub("", text) if leave_out else text

    papers: dict[str, dict] = {}
    claims: dict[str, tuple[str, str]] = {}
    said: dict[tuple[str, str, str], Statement] = {}
    judged: dict[str, Verdict] = {}
    for run, keep in enumerate(keeps):
        for line in (keep / "week.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            papers[record["arxiv_id"]] = record
        db = sqlite3.connect(keep / "monitor.db")
        claims |= {
            cid: (text, date) for cid, text, date in db.execute("SELECT id, text, date_text FROM claims")
        }
        db.close()
        (digest,) = sorted((keep / "reports").glob("digest-*.md"))
        every = statements(digest)
        for row in every:
            row["printed"] = shown(row["printed"])
            said.setdefault((row["arxiv_id"], row["claim_id"], row["printed"]), (row, []))[1].append(run)
        for verdict in verdicts(digest):
            verdict["printed"] = shown(verdict["printed"])
            alike = verdict_block(0, verdict, every, claims, papers)  # the same heading over the same papers
            judged.setdefault(alike, (verdict, every, []))[2].append(run)
    return list(said.values()), list(judged.values()), claims, papers


def deal(pair: tuple[str, str], parts: list[list[str]], seen: list[set[tuple[str, str]]]) -> int:
    """The part (grader) a pooled statement goes to: the emptiest that holds no other printing of the
    same pair, so no grader reads two runs' versions side by side (graders marked such a pair down as
    the digest contradicting itself)."""
    free = [i for i in range(len(parts)) if pair not in seen[i]] or list(range(len(parts)))
    part = min(free, key=lambda i: (len(parts[i]), i))
    seen[part].add(pair)
    return part


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keep", type=Path, nargs="+", help="one kept run, or several to grade blind")
    parser.add_argument("--out", required=True, help="OUT_PREFIX of the files written")
    parser.add_argument("--parts", type=int, default=2)
    parser.add_argument("--verdict-parts", type=int, default=1, help="files the verdicts are split into")
    parser.add_argument("--sample", type=int)
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--only-differing", action="store_true", help="leave out what every run prints")
    parser.add_argument("--leave-out", type=re.compile, help="a regex removed from every printing")
    args = parser.parse_args()
    said, judged, claims, papers = pooled(args.keep, args.leave_out)
    if args.only_differing:
        # Runs of several weeks may be pooled: a statement is alike when every run of its week prints it.
        weeks = [sorted((keep / "reports").glob("digest-*.md"))[0].stem for keep in args.keep]
        runs_of = Counter(weeks)
        said = [s for s in said if len(set(s[1])) < runs_of[weeks[s[1][0]]]]
        judged = [v for v in judged if len(set(v[2])) < runs_of[weeks[v[2][0]]]]
    blind = len(args.keep) > 1
    if blind:
        # Several runs (say, two prompts on one week): pooled and shuffled so no grader can tell which
        # run printed what; the key says which runs print each statement.
        random.Random(args.seed).shuffle(said)
        random.Random(args.seed).shuffle(judged)
    if args.sample:
        said = random.Random(args.seed).sample(said, min(args.sample, len(said)))
    parts: list[list[str]] = [[] for _ in range(args.parts)]
    seen: list[set[tuple[str, str]]] = [set() for _ in range(args.parts)]
    key: list[dict[str, object]] = []
    for number, (row, runs) in enumerate(said, start=1):
        pair = (row["arxiv_id"], row["claim_id"])
        part = deal(pair, parts, seen) if blind else (number - 1) % args.parts  # one run: dealt in turn
        parts[part].append(statement_block(number, row, claims, papers))
        key.append({"statement": number, "runs": [str(args.keep[r]) for r in runs]})
    shown: list[list[str]] = [[] for _ in range(args.verdict_parts)]
    claimed: list[set[tuple[str, str]]] = [set() for _ in range(args.verdict_parts)]
    size = -(-len(judged) // args.verdict_parts) if judged else 0
    for number, (verdict, every, runs) in enumerate(judged, start=1):
        # One run: split in order, as the files graded before pooling existed were.
        part = deal((verdict["claim_id"], "verdict"), shown, claimed) if blind else (number - 1) // size
        shown[part].append(verdict_block(number, verdict, every, claims, papers))
        key.append({"statement": f"V{number}", "runs": [str(args.keep[r]) for r in runs]})
    for index, blocks in enumerate(shown if judged else []):
        suffix = f"_{index + 1}" if args.verdict_parts > 1 else ""
        path = Path(f"{args.out}_verdicts{suffix}.md")
        path.write_text("\n".join(blocks), encoding="utf-8")
        print(f"{path}: {len(blocks)} verdict statements")
    for index, part in enumerate(parts):
        path = Path(f"{args.out}_{chr(ord('a') + index)}.md")
        path.write_text("\n".join(part), encoding="utf-8")
        print(f"{path}: {len(part)} statements")
    Path(f"{args.out}_key.jsonl").write_text("".join(json.dumps(k) + "\n" for k in key), encoding="utf-8")


if __name__ == "__main__":
    main()
