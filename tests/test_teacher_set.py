"""The teacher set the embedded judge learns from: what the issue's rules require of every row."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from monitor.judge.base import LABELS

TEACHER = Path(__file__).resolve().parents[1] / "training" / "teacher" / "pairs.jsonl"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [json.loads(line) for line in TEACHER.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_no_held_out_or_domain_dev_paper_is_ever_in_the_teacher_set(rows: list[dict], shared: Path) -> None:
    held = {
        line.strip()
        for line in (shared / "eval" / "heldout_papers.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    dev = {
        json.loads(line)["arxiv_id"] for line in (shared / "eval" / "domain_dev.jsonl").open() if line.strip()
    }
    assert held and dev
    used = {r["arxiv_id"] for r in rows}
    assert not used & held
    assert not used & dev


def test_every_row_is_a_grounded_teacher_answer_with_its_provenance(rows: list[dict]) -> None:
    assert len(rows) >= 4000
    for number, r in enumerate(rows, start=1):
        where = f"{TEACHER.name}:{number}"
        assert r["label"] in LABELS, where
        assert r["teacher_model"] and r["prompt_version"], where
        assert r["rationale"].strip(), where
        if r["label"] != "UNRELATED":
            # The quote a stance rests on is a verbatim span of the paper (title or abstract).
            assert r["evidence"] and r["grounded"], where
            assert r["evidence"] in r["abstract"] or r["evidence"] in r["title"], where


def test_a_paper_is_in_one_split_only_and_no_pair_is_labelled_twice(rows: list[dict]) -> None:
    splits: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        splits[r["arxiv_id"]].add(r["split"])
    assert all(len(s) == 1 for s in splits.values())
    pairs = [(r["claim"], r["arxiv_id"]) for r in rows]
    assert len(pairs) == len(set(pairs))
    assert {r["split"] for r in rows} == {"train", "calib", "test"}
