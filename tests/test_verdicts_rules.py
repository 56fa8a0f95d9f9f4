"""The verdict rules on hand-made evidence (no store)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from monitor.config import Settings
from monitor.verdicts.rules import (
    CONFIRMED,
    CONTESTED,
    DEFAULT_PRECISION,
    DURABLE,
    OVERTURNED,
    PERISHABLE,
    RELABELLED,
    UNSETTLED,
    UNTESTED,
    WEAK_SIDE_CAP,
    ClaimDate,
    EvidenceItem,
    Thresholds,
    decide,
    evidence_cutoff,
    months_before,
)

# Precision as `monitor eval` would measure it; tests name their own so the shipped defaults can change.
PRECISION = {
    "openai": {"SUPPORTS": 0.9, "RELAXES": 0.9, "OVERTURNS": 0.95},
    "local": {"SUPPORTS": 0.7, "RELAXES": 0.7, "OVERTURNS": 0.7},
}
TH = Thresholds(
    move=0.8,
    overturn=0.9,
    min_confidence=0.3,
    min_confidence_against=0.3,
    recent_months=6,
    precision=PRECISION,
)
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


def test_grounded_strong_overturns_overturns() -> None:
    strong = item("OVERTURNS", 0.95, dt.date(2025, 9, 1))
    weak_support = item("SUPPORTS", 0.7, dt.date(2025, 8, 1))  # 0.7 < move 0.8: moves nothing alone
    out = decide([weak_support, strong], TH, MAY_2025)
    assert out.status == OVERTURNED
    assert out.movers == [strong]
    assert out.last_changed == dt.date(2025, 9, 1)  # UNTESTED until the OVERTURNS appeared
    assert out.strength["OVERTURNS"] == pytest.approx(0.95)


def test_ungrounded_evidence_never_counts() -> None:
    out = decide([item("OVERTURNS", 0.99, dt.date(2025, 9, 1), grounded=False)], TH, MAY_2025)
    assert out.status == UNTESTED
    assert out.counted == []
    out = decide([item("SUPPORTS", 0.99, dt.date(2025, 9, 1), grounded=False)], TH, MAY_2025)
    assert out.status == UNTESTED


def test_one_weak_label_moves_nothing_two_papers_do() -> None:
    first = item("RELAXES", 0.7, dt.date(2025, 8, 1))
    assert decide([first], TH, MAY_2025).status == UNSETTLED  # strength 0.7: counts, moves nothing
    second = item("RELAXES", 0.7, dt.date(2025, 8, 2))
    out = decide([first, second], TH, MAY_2025)  # 1 - 0.3 * 0.3 = 0.91
    assert out.status == PERISHABLE
    assert out.strength["AGAINST"] == pytest.approx(0.91)
    assert out.last_changed == dt.date(2025, 8, 2)
    # Two unsure papers (under ANCHOR_CONFIDENCE) would make 0.84, but no confident finding carries them.
    unsure = [item("RELAXES", 0.6, dt.date(2025, 8, 1)), item("RELAXES", 0.6, dt.date(2025, 8, 2))]
    held = decide(unsure, TH, MAY_2025)
    assert held.status == UNSETTLED and held.strength["AGAINST"] == pytest.approx(WEAK_SIDE_CAP)


def test_capped_sides_names_the_sides_held_at_the_cap_and_only_those() -> None:
    from monitor.verdicts.rules import capped_sides

    day = dt.date(2025, 8, 1)
    unsure = [item("RELAXES", 0.6, day), item("RELAXES", 0.6, dt.date(2025, 8, 2))]  # 0.84 uncapped
    assert capped_sides(unsure, TH) == ["AGAINST"]
    assert capped_sides(unsure[:1], TH) == []  # 0.6 on its own: nothing is held back
    assert capped_sides([*unsure, item("RELAXES", 0.8, day)], TH) == []  # a confident finding anchors it
    both = [*unsure, item("SUPPORTS", 0.6, day), item("SUPPORTS", 0.65, day)]
    assert capped_sides(both, TH) == ["SUPPORTS", "AGAINST"]


def test_a_paper_counts_once_however_many_labels_it_has() -> None:
    one = item("RELAXES", 0.6, dt.date(2025, 8, 1), arxiv_id="2608.00001")
    again = item("RELAXES", 0.6, dt.date(2025, 8, 1), arxiv_id="2608.00001", judge="local")
    out = decide([one, again], TH, MAY_2025)
    assert out.status == UNSETTLED
    assert out.strength["AGAINST"] == pytest.approx(0.6)


def test_confidence_is_capped_at_the_judges_measured_precision() -> None:
    # The local judge's SUPPORTS is right 70% of the time: a 0.95 from it weighs 0.7.
    published = replace(TH, confirm_judges=frozenset())  # its labels count unreviewed
    sure = item("SUPPORTS", 0.95, dt.date(2025, 8, 1), judge="local")
    assert decide([sure], published, MAY_2025).status == UNSETTLED
    other = item("SUPPORTS", 0.95, dt.date(2025, 8, 3), judge="local")
    out = decide([sure, other], published, MAY_2025)  # 1 - 0.3 * 0.3 = 0.91
    assert out.status == DURABLE
    # By default the embedded judge's labels wait for a curator, SUPPORTS too.
    out = decide([sure, other], TH, MAY_2025)
    assert out.status == UNTESTED and out.for_review == [other, sure]
    # An unmeasured judge weighs 0.5 a label.
    stranger = item("SUPPORTS", 0.99, dt.date(2025, 8, 1), judge="mystery")
    assert TH.weight(stranger) == 0.5


def test_overturns_below_the_overturn_bar_is_perishable_and_for_review() -> None:
    weak = item("OVERTURNS", 0.85, dt.date(2025, 9, 1))  # clears move 0.8, not overturn 0.9
    out = decide([weak], TH, MAY_2025)
    assert out.status == PERISHABLE
    assert out.for_review == [weak]
    other = item("OVERTURNS", 0.5, dt.date(2025, 9, 2))  # 1 - 0.15 * 0.5 = 0.925
    out = decide([weak, other], TH, MAY_2025)
    assert out.status == OVERTURNED
    assert out.movers == [weak, other]
    assert out.for_review == []


def test_strong_evidence_both_ways_is_contested() -> None:
    support = item("SUPPORTS", 0.9, dt.date(2025, 7, 1))
    against = item("OVERTURNS", 0.85, dt.date(2025, 8, 1))
    out = decide([support, against], TH, MAY_2025)
    assert out.status == CONTESTED
    assert out.movers == [against, support]
    # RELAXES does not deny the claim: strong support plus strong relaxing is PERISHABLE, not contested.
    relax = item("RELAXES", 0.85, dt.date(2025, 8, 1))
    assert decide([support, relax], TH, MAY_2025).status == PERISHABLE


def test_relaxes_is_perishable_and_supports_only_is_durable() -> None:
    support = item("SUPPORTS", 0.85, dt.date(2025, 7, 1))
    relax = item("RELAXES", 0.85, dt.date(2025, 8, 1))
    assert decide([support], TH, MAY_2025).status == DURABLE
    out = decide([support, relax], TH, MAY_2025)
    assert out.status == PERISHABLE
    assert out.movers == [relax]


def test_precision_settings_override_defaults_per_label() -> None:
    verdicts = Settings(verdicts={"precision": {"openai": {"SUPPORTS": 0.6}}}).verdicts
    th = Thresholds.from_settings(verdicts)
    assert th.precision["openai"]["SUPPORTS"] == 0.6
    assert th.precision["openai"]["OVERTURNS"] == DEFAULT_PRECISION["openai"]["OVERTURNS"]
    assert th.precision["local"] == DEFAULT_PRECISION["local"]


def test_unrelated_and_low_confidence_leave_it_untested() -> None:
    out = decide(
        [item("UNRELATED", 0.99, dt.date(2025, 9, 1)), item("OVERTURNS", 0.2, dt.date(2025, 9, 1))],
        TH,
        MAY_2025,
    )
    assert out.status == UNTESTED
    assert out.counted == []
    assert out.last_changed is None


def test_relaxes_and_overturns_need_the_higher_bar_supports_the_general_one() -> None:
    """At the shipped settings a RELAXES or OVERTURNS stated at 0.55 is withheld, naming the setting that
    holds it, while a SUPPORTS at 0.50 counts and one at 0.45 does not; the bar for RELAXES and OVERTURNS
    never falls below min_confidence."""
    from monitor.verdicts.rules import WITHHELD, standing

    th = Thresholds.from_settings(Settings().verdicts)
    assert (th.min_confidence, th.min_confidence_against) == (0.5, 0.6)
    day = dt.date(2025, 9, 1)
    relaxes, overturns, supports = (
        item("RELAXES", 0.55, day),
        item("OVERTURNS", 0.55, day),
        item("SUPPORTS", 0.5, day),
    )
    out = decide([relaxes, overturns, supports], th, MAY_2025)
    assert out.counted == [supports] and out.status == UNSETTLED
    assert standing(relaxes, None, None, th) == (WITHHELD, "below min_confidence_against 0.6")
    assert standing(item("RELAXES", 0.6, day), None, None, th)[0] != WITHHELD
    assert standing(item("SUPPORTS", 0.45, day), None, None, th) == (WITHHELD, "below min_confidence 0.5")
    lower = replace(th, min_confidence_against=0.4)
    assert lower.floor("RELAXES") == lower.floor("SUPPORTS") == 0.5
    assert standing(relaxes, None, None, lower)[0] != WITHHELD
    assert standing(item("OVERTURNS", 0.45, day), None, None, lower) == (WITHHELD, "below min_confidence 0.5")


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
    assert decide([earlier, later], TH, MAY_2025, as_of=dt.date(2025, 12, 1)).status == CONTESTED


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


def test_the_worked_examples_in_docs_verdicts_md_hold_with_the_shipped_precision() -> None:
    th = Thresholds()  # the shipped defaults the docs quote
    day = dt.date(2025, 9, 1)
    assert decide([item("SUPPORTS", 0.95, day)], th, MAY_2025).status == DURABLE  # 1
    relax = item("RELAXES", 0.7, day)
    assert decide([relax], th, MAY_2025).status == UNSETTLED  # 2
    assert decide([relax, item("RELAXES", 0.7, day)], th, MAY_2025).status == PERISHABLE
    unsure = [item("RELAXES", 0.6, day), item("RELAXES", 0.6, day)]
    assert decide(unsure, th, MAY_2025).status == UNSETTLED
    sure = item("OVERTURNS", 0.99, day)
    out = decide([sure], th, MAY_2025)  # 3
    assert out.status == UNSETTLED and out.for_review == [sure]
    assert decide([sure, item("OVERTURNS", 0.8, day)], th, MAY_2025).status == OVERTURNED
    both = [item("SUPPORTS", 0.9, day), item("OVERTURNS", 0.9, day), item("OVERTURNS", 0.9, day)]
    assert decide(both, th, MAY_2025).status == CONTESTED  # 4
    local = item("SUPPORTS", 0.9, day, judge="local")
    two_local = [local, item("SUPPORTS", 0.9, day, judge="local")]
    assert decide(two_local, th, MAY_2025).status == UNTESTED  # 5: waits for a curator
    published = replace(th, confirm_judges=frozenset())
    assert decide([local], published, MAY_2025).status == UNSETTLED
    assert decide(two_local, published, MAY_2025).status == DURABLE


def test_worked_examples_7_and_8_a_curator_label_and_a_claims_own_source() -> None:
    """docs/verdicts.md worked examples 7 (curators, issue 21 item 5) and 8 (sources, item 3)."""
    from monitor.verdicts.rules import CURATOR_WEIGHT

    th = Thresholds()  # the shipped defaults the docs quote
    day = dt.date(2025, 9, 1)

    def confirmed(one: EvidenceItem, decisive: bool = False) -> EvidenceItem:
        return replace(one, review=CONFIRMED, model_label=one.label, decisive=decisive)

    first = item("SUPPORTS", 0.9, day, judge="local")
    second = item("SUPPORTS", 0.9, day, judge="local")
    assert th.weight(confirmed(first)) == pytest.approx(0.76)  # the judge's own weight, above 0.7
    assert decide([confirmed(first)], th, MAY_2025).status == UNSETTLED  # one keypress moves nothing
    both = decide([confirmed(first), confirmed(second)], th, MAY_2025)
    assert both.status == DURABLE and both.strength["SUPPORTS"] == pytest.approx(1 - 0.24**2)
    assert decide([confirmed(first, decisive=True)], th, MAY_2025).status == DURABLE
    missed = item("UNRELATED", 0.9, day)
    relabelled = replace(missed, label="OVERTURNS", review=RELABELLED, model_label="UNRELATED")
    assert th.weight(relabelled) == CURATOR_WEIGHT == 0.7
    assert decide([relabelled], th, MAY_2025).status == UNSETTLED
    assert decide([replace(relabelled, decisive=True)], th, MAY_2025).status == OVERTURNED
    # 8: the paper the note summarises is its source: shown, never counted.
    own = replace(item("SUPPORTS", 0.95, day), source="this note's paper: the note names it, DARLING")
    out = decide([own], th, MAY_2025)
    assert out.status == UNTESTED and out.counted == [] and out.sources == [own]
    assert out.summary.sentence() == "no paper counts yet; 1 paper is the claim's own source"


def test_the_evidence_summary_counts_distinct_papers_by_standing() -> None:
    day = dt.date(2025, 9, 1)
    items = [
        item("SUPPORTS", 0.9, day),
        item("RELAXES", 0.9, day),
        item("SUPPORTS", 0.9, day, judge="local"),  # waits for a curator
        replace(item("RELAXES", 0.5, day, judge="local"), abstained=True),
        item("OVERTURNS", 0.9, day, grounded=False),
        item("SUPPORTS", 0.1, day),  # below min_confidence
        item("SUPPORTS", 0.9, dt.date(2025, 4, 1)),  # older than the claim: not mentioned
    ]
    summary = decide(items, TH, MAY_2025).summary
    assert summary.counted == {"SUPPORTS": 1, "RELAXES": 1} and summary.waiting == 1
    assert summary.withheld == {"stance unclear": 1, "ungrounded": 1, "too unsure": 1}
    assert summary.sentence() == (
        "2 papers count (1 SUPPORTS, 1 RELAXES); 1 paper waits for a curator; "
        "3 papers withheld (1 stance unclear, 1 ungrounded, 1 too unsure)"
    )
    assert decide([], TH, MAY_2025).summary.sentence() == "no paper judged relevant yet"


def test_counting_between_is_the_evidence_that_counts_in_a_period() -> None:
    from monitor.verdicts.rules import counting_between

    inside = item("RELAXES", 0.6, dt.date(2026, 3, 10))
    stronger = item("OVERTURNS", 0.5, dt.date(2026, 3, 11))
    waiting = item("OVERTURNS", 0.9, dt.date(2026, 3, 11), judge="local")
    source = replace(item("OVERTURNS", 0.9, dt.date(2026, 3, 12)), source="an anchor paper of its line")
    before = item("RELAXES", 0.9, dt.date(2026, 3, 1))
    support = item("SUPPORTS", 0.9, dt.date(2026, 3, 12))
    out = decide([inside, stronger, waiting, source, before, support], TH, MAY_2025)
    week = (dt.date(2026, 3, 9), dt.date(2026, 3, 15))
    assert counting_between(out, *week, ("RELAXES", "OVERTURNS")) == [stronger, inside]
    assert counting_between(out, *week) == [stronger, inside, support]


def test_strongest_recent_work_only_from_evidence_that_moves_verdicts() -> None:
    waiting = item("OVERTURNS", 0.95, dt.date(2026, 2, 1), judge="local")  # needs a curator first
    relax = item("RELAXES", 0.7, dt.date(2026, 1, 5))
    out = decide([waiting, relax], TH, MAY_2025, as_of=dt.date(2026, 3, 1))
    assert out.strongest_recent == relax
    assert out.for_review == [waiting]


def test_strength_weighs_a_label_and_weak_papers_alone_move_nothing() -> None:
    """Issue 30: direct 1, indirect 0.75, weak 0.4 of a label's weight; a side of weak papers only stays
    below the move threshold however many there are; one stronger paper lets them count in full."""
    day = dt.date(2025, 8, 1)
    direct = replace(item("SUPPORTS", 0.85, day), strength="direct")
    assert decide([direct], TH, MAY_2025).status == DURABLE  # 0.85 >= 0.8
    indirect = replace(item("SUPPORTS", 0.85, day), strength="indirect")
    assert decide([indirect], TH, MAY_2025).strength["SUPPORTS"] == pytest.approx(0.85 * 0.75)
    assert decide([indirect], TH, MAY_2025).status == UNSETTLED  # it counts, and moves nothing alone
    weak = [replace(item("RELAXES", 0.9, day), strength="weak") for _ in range(8)]
    alone = decide(weak, TH, MAY_2025)
    assert alone.status == UNSETTLED and alone.strength["AGAINST"] == pytest.approx(WEAK_SIDE_CAP)
    with_one = decide([*weak, replace(item("RELAXES", 0.7, day), strength="indirect")], TH, MAY_2025)
    assert with_one.status == PERISHABLE and with_one.strength["AGAINST"] > 0.9
    # Unsure labels do not add up to a verdict either: eight indirect RELAXES at 0.6 stay below it.
    unsure = [replace(item("RELAXES", 0.6, day), strength="indirect") for _ in range(8)]
    assert decide(unsure, TH, MAY_2025).strength["AGAINST"] == pytest.approx(WEAK_SIDE_CAP)


def test_a_second_reading_pending_withholds_and_a_disagreement_waits_for_a_curator() -> None:
    day = dt.date(2025, 8, 1)
    pending = replace(item("OVERTURNS", 0.99, day), strength="direct", second_look="pending")
    out = decide([pending], TH, MAY_2025)
    assert out.status == UNTESTED and out.summary.withheld == {"awaiting a second reading": 1}
    disagreed = replace(pending, second_look="disagreed", second_label="UNRELATED")
    out = decide([disagreed, replace(disagreed, arxiv_id="2601.99999", assessment_id=99_999)], TH, MAY_2025)
    assert out.status == UNTESTED and out.summary.waiting == 2 and len(out.held) == 2
    agreed = replace(pending, second_look="agreed")
    assert decide([agreed, replace(agreed, arxiv_id="2601.99998")], TH, MAY_2025).status == OVERTURNED


def test_evidence_that_counts_but_moves_nothing_is_unsettled_never_untested() -> None:
    """Issue 31: "UNTESTED" beside "2 papers count" read as a contradiction; UNTESTED now means no
    paper counts, UNSETTLED that some do but no side is strong enough."""
    from monitor.verdicts.rules import MEANINGS, STATUSES

    weak = item("RELAXES", 0.5, dt.date(2025, 8, 1))
    out = decide([weak, item("SUPPORTS", 0.5, dt.date(2025, 8, 3))], TH, MAY_2025)
    assert out.status == UNSETTLED and out.movers == []
    assert out.summary.sentence() == "2 papers count (1 SUPPORTS, 1 RELAXES)"
    assert out.last_changed == dt.date(2025, 8, 1)  # the day the first paper counted
    # Papers that wait for a curator, withheld ones and the claim's own source count for nothing.
    waiting = item("SUPPORTS", 0.9, dt.date(2025, 8, 1), judge="local")
    unclear = replace(item("RELAXES", 0.4, dt.date(2025, 8, 2), judge="local"), abstained=True)
    own = replace(item("SUPPORTS", 0.95, dt.date(2025, 8, 3)), source="an anchor of its line")
    out = decide([waiting, unclear, own], TH, MAY_2025)
    assert out.status == UNTESTED and out.last_changed is None
    assert decide([], TH, MAY_2025).status == UNTESTED
    assert STATUSES.index(UNSETTLED) == STATUSES.index(UNTESTED) - 1
    assert set(MEANINGS) == set(STATUSES)


def test_the_strength_scale_sentence_names_the_thresholds_in_force() -> None:
    from monitor.verdicts.rules import strength_scale

    shipped = strength_scale(Thresholds())
    assert "(0.70 or more, not weak): many unsure labels never add up to one" in shipped
    assert "A side at 0.80 moves a verdict" in shipped
    assert "OVERTURNS at 0.90 makes it OVERTURNED" in shipped and "UNSETTLED" in shipped
    assert "A side at 0.70" in strength_scale(Thresholds(move=0.7))
