"""The verdict rules on hand-made evidence (no store)."""

from __future__ import annotations

import datetime as dt

import pytest

from monitor.verdicts.rules import (
    DURABLE,
    OVERTURNED,
    PERISHABLE,
    UNTESTED,
    ClaimDate,
    EvidenceItem,
    Thresholds,
    decide,
    evidence_cutoff,
    months_before,
)

TH = Thresholds(overturn=0.7, local_overturn=0.9, min_confidence=0.3, recent_months=6)
MAY_2025 = ClaimDate(dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month", False)
_ids = iter(range(1, 10_000))


def item(
    label: str,
    conf: float,
    published: dt.date,
    grounded: bool = True,
    judge: str = "openai",
    arxiv_id: str | None = None,
) -> EvidenceItem:
    n = next(_ids)
    return EvidenceItem(
        assessment_id=n,
        arxiv_id=arxiv_id or f"2601.{n:05d}",
        version=1,
        title=f"paper {n}",
        published=published,
        appeared=published,
        label=label,
        confidence=conf,
        grounded=grounded,
        judge=judge,
    )


def test_grounded_confident_overturns_overturns() -> None:
    strong = item("OVERTURNS", 0.8, dt.date(2025, 9, 1))
    support = item("SUPPORTS", 0.9, dt.date(2025, 8, 1))
    out = decide([support, strong], TH, MAY_2025)
    assert out.status == OVERTURNED
    assert out.movers == [strong]
    assert out.last_changed == dt.date(2025, 9, 1)  # DURABLE from 08-01, OVERTURNED from 09-01


def test_ungrounded_overturns_never_overturns() -> None:
    out = decide([item("OVERTURNS", 0.99, dt.date(2025, 9, 1), grounded=False)], TH, MAY_2025)
    assert out.status == PERISHABLE
    assert out.movers[0].grounded is False


def test_overturns_below_threshold_is_perishable() -> None:
    out = decide([item("OVERTURNS", 0.69, dt.date(2025, 9, 1))], TH, MAY_2025)
    assert out.status == PERISHABLE
    assert out.for_review == []  # only the local judge's weak OVERTURNS are flagged for review


def test_local_overturns_below_calibrated_threshold_is_flagged_not_overturned() -> None:
    weak = item("OVERTURNS", 0.85, dt.date(2025, 9, 1), judge="local")  # clears 0.7, not the local 0.9
    out = decide([weak], TH, MAY_2025)
    assert out.status == PERISHABLE
    assert out.for_review == [weak]
    strong = item("OVERTURNS", 0.95, dt.date(2025, 9, 2), judge="local")
    out = decide([weak, strong], TH, MAY_2025)
    assert out.status == OVERTURNED
    assert out.movers == [strong]
    assert out.for_review == [weak]


def test_relaxes_is_perishable_and_supports_only_is_durable() -> None:
    support = item("SUPPORTS", 0.8, dt.date(2025, 7, 1))
    relax = item("RELAXES", 0.6, dt.date(2025, 8, 1))
    assert decide([support], TH, MAY_2025).status == DURABLE
    out = decide([support, relax], TH, MAY_2025)
    assert out.status == PERISHABLE
    assert out.movers == [relax]


def test_unrelated_and_low_confidence_leave_it_untested() -> None:
    out = decide(
        [item("UNRELATED", 0.99, dt.date(2025, 9, 1)), item("OVERTURNS", 0.2, dt.date(2025, 9, 1))],
        TH,
        MAY_2025,
    )
    assert out.status == UNTESTED
    assert out.counted == []
    assert out.last_changed is None


def test_papers_older_than_the_claim_do_not_count() -> None:
    older = item("OVERTURNS", 0.99, dt.date(2025, 4, 30))
    same_month = item("OVERTURNS", 0.99, dt.date(2025, 5, 20))  # exact month: the claim had it in hand
    out = decide([older, same_month], TH, MAY_2025)
    assert out.status == UNTESTED
    newer = item("SUPPORTS", 0.9, dt.date(2025, 6, 1))
    assert decide([older, same_month, newer], TH, MAY_2025).status == DURABLE


@pytest.mark.parametrize(
    ("date", "cutoff"),
    [
        (ClaimDate(), None),
        (ClaimDate(dt.date(2025, 5, 3), dt.date(2025, 5, 3), "day"), dt.date(2025, 5, 3)),
        (ClaimDate(dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month"), dt.date(2025, 5, 31)),
        # "~2025-05": approximate, so anything after the period starts counts
        (ClaimDate(dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month", True), dt.date(2025, 5, 1)),
        (ClaimDate(dt.date(2025, 1, 1), dt.date(2025, 12, 31), "year", True), dt.date(2025, 1, 1)),
        (ClaimDate(dt.date(2025, 1, 1), dt.date(2025, 12, 31), "year"), dt.date(2025, 1, 1)),
        # a range "2025-06, 2025-10" spans months: its start
        (ClaimDate(dt.date(2025, 6, 1), dt.date(2025, 10, 31), "month"), dt.date(2025, 6, 1)),
    ],
)
def test_evidence_cutoff(date: ClaimDate, cutoff: dt.date | None) -> None:
    assert evidence_cutoff(date) == cutoff


def test_approximate_year_counts_papers_later_that_year() -> None:
    approx = ClaimDate(dt.date(2025, 1, 1), dt.date(2025, 12, 31), "year", True)
    out = decide([item("RELAXES", 0.8, dt.date(2025, 7, 1))], TH, approx)
    assert out.status == PERISHABLE


def test_undated_claim_counts_every_paper() -> None:
    out = decide([item("SUPPORTS", 0.8, dt.date(2001, 1, 1))], TH, ClaimDate())
    assert out.status == DURABLE


def test_as_of_excludes_later_papers() -> None:
    later = item("OVERTURNS", 0.95, dt.date(2025, 12, 1))
    earlier = item("SUPPORTS", 0.9, dt.date(2025, 8, 1))
    assert decide([earlier, later], TH, MAY_2025, as_of=dt.date(2025, 11, 30)).status == DURABLE
    assert decide([earlier, later], TH, MAY_2025, as_of=dt.date(2025, 12, 1)).status == OVERTURNED


def test_strongest_recent_contradicting_work_is_within_the_window() -> None:
    old = item("OVERTURNS", 0.99, dt.date(2025, 6, 15))
    recent_relax = item("RELAXES", 0.9, dt.date(2026, 1, 5))
    recent_over = item("OVERTURNS", 0.75, dt.date(2026, 2, 5))
    support = item("SUPPORTS", 0.99, dt.date(2026, 2, 6))
    out = decide([old, recent_relax, recent_over, support], TH, MAY_2025, as_of=dt.date(2026, 3, 1))
    assert out.strongest_recent == recent_over
    out = decide([old, support], TH, MAY_2025, as_of=dt.date(2026, 3, 1))
    assert out.strongest_recent is None  # the OVERTURNS is older than six months


def test_months_before_clamps_to_month_end() -> None:
    assert months_before(dt.date(2026, 8, 31), 6) == dt.date(2026, 2, 28)
    assert months_before(dt.date(2026, 3, 15), 6) == dt.date(2025, 9, 15)
