"""The answer lengths estimates and budget reservations assume are those of the answers kept in the repo.

A week's cost is the sum of thousands of answers, so the estimate uses their mean length. If the prompts
change and the kept answers grow (or shrink), these fail until the constants follow them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from monitor.judge.second_look import ANSWER_TOKENS, MAX_ANSWER_TOKENS
from monitor.judge.work import COMPLETION_TOKENS_PER_CLAIM
from monitor.llm.cost import estimate_tokens

KEPT = Path(__file__).resolve().parent.parent / "training" / "teacher" / "issue30"


def per_claim(files: list[Path]) -> list[float]:
    """Each kept answer's estimated tokens over the claims it assesses, one value an answer."""
    lengths: list[float] = []
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            content = json.loads(line)["content"]
            try:
                claims = len(json.loads(content)["assessments"])
            except (ValueError, KeyError, TypeError):
                continue  # a refusal or malformed answer kept to replay a fault
            if claims:
                lengths.extend([estimate_tokens(content) / claims] * claims)
    return lengths


def second_look_files() -> list[Path]:
    """The kept second readings of the shipped second-look prompt, one a call and grouped."""
    return [
        *sorted(KEPT.glob("second_look_week_*.jsonl")),
        *sorted(KEPT.glob("second_look_grouped_week_*.jsonl")),
        *sorted((KEPT / "second_look_grouping_control").glob("*.jsonl")),
        KEPT / "second_look_domain_dev.jsonl",
    ]


@pytest.mark.parametrize(
    ("files", "estimate"),
    [
        (lambda: sorted(KEPT.glob("judge_week_*.jsonl")), COMPLETION_TOKENS_PER_CLAIM),
        (second_look_files, ANSWER_TOKENS),
    ],
    ids=["judge", "second_look"],
)
def test_estimate_is_the_kept_answers_mean(files: Callable[[], list[Path]], estimate: int) -> None:
    lengths = per_claim(files())
    assert len(lengths) > 1000  # enough answers for a mean to mean something
    mean = sum(lengths) / len(lengths)
    # At the mean or a little above it, never below: an estimate under the mean underprices every week.
    assert mean <= estimate <= mean * 1.1, f"kept answers average {mean:.0f} tokens; estimate {estimate}"


def test_a_second_reading_may_run_far_past_its_estimate() -> None:
    longest = max(per_claim(second_look_files()))
    assert 2 * longest <= MAX_ANSWER_TOKENS  # the cap cuts off no answer a capable model wrote
