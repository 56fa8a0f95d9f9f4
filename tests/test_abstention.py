"""'Related, stance unclear': stored, never counted toward a verdict, shown for review, scored apart."""

from __future__ import annotations

import datetime as dt

from schema_fixtures import load_schema
from sqlalchemy import inspect, text

from monitor.judge.evaluate import LabelledPair, Prediction, operating_point
from monitor.store import SCHEMA_VERSION, open_store
from monitor.verdicts.rules import UNTESTED, ClaimDate, EvidenceItem, Thresholds, decide

TH = Thresholds(move=0.8, overturn=0.9, min_confidence=0.3, min_confidence_against=0.3, recent_months=6)
MAY_2025 = ClaimDate(dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month", False)


def item(
    n: int, label: str, conf: float, abstained: bool, published: dt.date = dt.date(2025, 9, 1)
) -> EvidenceItem:
    return EvidenceItem(
        assessment_id=n, arxiv_id=f"2509.{n:05d}", version=1, title=f"paper {n}", published=published,
        appeared=published, label=label, confidence=conf, grounded=True, judge="local", abstained=abstained,
    )  # fmt: skip


def test_an_unclear_stance_moves_no_verdict_and_is_listed_for_review() -> None:
    unclear = item(1, "OVERTURNS", 0.6, abstained=True)
    outcome = decide([unclear], TH, MAY_2025)
    assert outcome.status == UNTESTED and outcome.counted == []
    assert outcome.unclear == [unclear]


def test_unclear_pairs_older_than_the_claim_are_not_listed() -> None:
    old = item(2, "RELAXES", 0.6, abstained=True, published=dt.date(2025, 1, 1))
    stated = item(3, "SUPPORTS", 0.9, abstained=False)
    outcome = decide([old, stated], TH, MAY_2025)
    assert outcome.counted == [stated] and outcome.unclear == []


def test_eval_scores_stated_labels_apart_from_abstentions() -> None:
    def pred(gold: str, label: str, abstained: bool) -> Prediction:
        return Prediction(LabelledPair("c", "t", "a", gold, 1), label, 0.6, "", abstained=abstained)  # type: ignore[arg-type]

    preds = [
        pred("SUPPORTS", "SUPPORTS", False),
        pred("UNRELATED", "SUPPORTS", False),
        pred("SUPPORTS", "SUPPORTS", True),  # a right guess, withheld: costs recall, not precision
        pred("OVERTURNS", "RELAXES", True),  # a wrong guess, withheld: costs nothing in precision
    ]
    point = operating_point(preds)
    assert point.abstain_share == 0.5
    assert point.per_label["SUPPORTS"].precision == 0.5 and point.per_label["SUPPORTS"].recall == 0.5
    assert point.per_label["RELAXES"].precision == 0.0 and point.per_label["OVERTURNS"].recall == 0.0


def test_a_v2_store_gains_the_abstained_column(db_url: str) -> None:
    load_schema(db_url, 2)
    store = open_store(db_url)  # migrates
    with store.engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("assessments")}
        version = conn.execute(text("SELECT version FROM schema_version")).scalar()
    assert "abstained" in columns and version == SCHEMA_VERSION
    store.close()


def test_monitor_show_says_why_an_unclear_pair_does_not_count() -> None:
    from monitor.verdicts.rules import WITHHELD, standing

    unclear = item(4, "RELAXES", 0.9, abstained=True)
    assert standing(unclear, None, None, TH) == (WITHHELD, "related, stance unclear: for review")
    weak = standing(item(5, "RELAXES", 0.1, abstained=False), None, None, TH)
    assert weak[0] == WITHHELD and weak[1].startswith("below min_confidence")
