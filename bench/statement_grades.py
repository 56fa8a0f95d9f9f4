"""Graders' verdicts on a digest's statements, tallied per run: signable / half / not.

    python bench/statement_grades.py KEY.jsonl GRADES.jsonl [GRADES.jsonl ...]

KEY.jsonl is what `bench/digest_statements.py ... --out PREFIX` writes beside the graders' files
(PREFIX_key.jsonl: which runs print each numbered statement); each GRADES file holds a grader's lines
{"statement": n or "Vn", "grade": "signable|half|not", "why": ...}
(training/teacher/issue30/grading/instructions.md). A statement printed alike by several runs counts for
each of them. Printed per run: per-paper statements, verdicts and all, each as signable / half / not
of n and the signable share; statements no grader graded are named.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

GRADES = ("signable", "half", "not")


def read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tally(key: list[dict[str, object]], grades: dict[str, str]) -> dict[str, dict[str, object]]:
    counts: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for row in key:
        number = str(row["statement"])
        kind = "verdicts" if number.startswith("V") else "statements"
        for run in row["runs"]:  # type: ignore[attr-defined]
            counts[run][kind][grades.get(number, "ungraded")] += 1
    out: dict[str, dict[str, object]] = {}
    for run, kinds in counts.items():
        kinds["all"] = kinds["statements"] + kinds["verdicts"]
        out[run] = {}
        for kind in ("statements", "verdicts", "all"):
            seen = kinds[kind]
            total = sum(seen[g] for g in GRADES)
            shown = " / ".join(str(seen[g]) for g in GRADES)
            share = f"{seen['signable'] / total:.0%}" if total else "-"
            out[run][kind] = f"{shown} of {total} ({share} signable)"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("key", type=Path)
    parser.add_argument("grades", type=Path, nargs="+")
    args = parser.parse_args()
    grades: dict[str, str] = {}
    for path in args.grades:
        for row in read(path):
            grade = str(row["grade"])
            if grade not in GRADES:
                where = f"{path}: statement {row['statement']}"
                raise SystemExit(f"{where}: grade {grade!r} is not one of {', '.join(GRADES)}")
            grades[str(row["statement"])] = grade
    key = read(args.key)
    missing = [str(row["statement"]) for row in key if str(row["statement"]) not in grades]
    result: dict[str, object] = {"per_run": tally(key, grades)}
    if missing:
        result["ungraded"] = missing
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
