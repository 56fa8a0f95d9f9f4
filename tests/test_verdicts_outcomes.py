"""Outcomes computed once by the verdicts stage and stored (`claim_outcomes`); the digest reads them.

Against a real store (SQLite and PostgreSQL): the stored form round-trips, a rerun computes and writes
nothing, a digest reads what is stored (never computing its own), a missing or stale outcome is an error,
and evidence judged after a digest was written shows once the digest is written again.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from digest_world import World, sample, settled_digest, settled_write, trusted_settings
from sqlalchemy import func, select

from monitor.report.digest import write_digest
from monitor.report.gather import gather_digest, settle_period
from monitor.report.period import resolve_period
from monitor.store.models import ClaimOutcome
from monitor.store.records import Digest
from monitor.verdicts.rollup import (
    OutcomesNotStored,
    compute_verdicts,
    settle_outcomes,
    stored_outcome,
)
from monitor.verdicts.rules import (
    RELABELLED,
    ClaimDate,
    EvidenceItem,
    Outcome,
    Thresholds,
    decide,
)

WEEK = resolve_period("2026-W11")


def _item(n: int, label: str, confidence: float, published: dt.date | None, **kw: object) -> EvidenceItem:
    fields: dict = {
        "assessment_id": n,
        "arxiv_id": f"2601.{n:05d}",
        "version": 1,
        "title": f"Paper {n} — “quoted” <b>",
        "published": published,
        "appeared": published,
        "label": label,
        "confidence": confidence,
        "grounded": True,
        "judge": "openai",
        "model": "m",
        "evidence": "a quote",
        "rationale": "because",
    }
    return EvidenceItem(**{**fields, **kw})  # type: ignore[arg-type]


def test_an_outcome_round_trips_through_its_stored_form() -> None:
    """Every list, the strongest recent item, strengths, dates and the summary come back equal, through
    JSON, as a reader needs them (`in outcome.held` compares items by value)."""
    day = dt.date(2026, 3, 1)
    items = [
        _item(1, "SUPPORTS", 0.95, dt.date(2025, 7, 1)),
        _item(2, "OVERTURNS", 0.93, dt.date(2026, 1, 5), version=2, appeared=dt.date(2026, 2, 1)),
        _item(3, "OVERTURNS", 0.6, dt.date(2026, 2, 9), judge="local"),  # waits for a curator
        _item(4, "RELAXES", 0.7, dt.date(2026, 2, 10), abstained=True),  # stance unclear
        _item(5, "SUPPORTS", 0.9, dt.date(2025, 8, 1), grounded=False),  # withheld
        _item(6, "SUPPORTS", 0.9, dt.date(2025, 9, 1), source="an anchor of line rl"),
        _item(7, "RELAXES", 0.8, None),  # no publication date known
        _item(8, "OVERTURNS", 0.5, dt.date(2026, 2, 20), review=RELABELLED, model_label="RELAXES"),
        _item(9, "SUPPORTS", 0.9, dt.date(2026, 4, 1)),  # after `as_of`: out
    ]
    date = ClaimDate(dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month")
    outcome = decide(items, Thresholds(), date, day)
    assert outcome.held and outcome.unclear and outcome.sources and outcome.withheld and outcome.movers
    assert outcome.strongest_recent is not None and outcome.last_changed is not None
    stored = json.loads(json.dumps(outcome.to_dict()))
    back = Outcome.from_dict(stored)
    assert back == outcome
    assert back.to_dict() == outcome.to_dict()
    assert back.summary.sentence() == outcome.summary.sentence()
    assert [i.appeared for i in back.counted] == [i.appeared for i in outcome.counted]
    empty = decide([], Thresholds(), ClaimDate(), day)
    assert Outcome.from_dict(json.loads(json.dumps(empty.to_dict()))) == empty


def _rows(store) -> int:
    with store.session() as s:
        return s.scalar(select(func.count()).select_from(ClaimOutcome)) or 0


def test_a_rerun_on_the_same_evidence_computes_and_writes_nothing(store) -> None:
    settings = trusted_settings()
    sample(World(store))
    first = settle_outcomes(store, settings, WEEK.verdict_days)
    assert (first.claims, first.computed) == (4, 8)
    assert _rows(store) == 8
    again = settle_outcomes(store, settings, WEEK.verdict_days)
    assert again.computed == 0 and _rows(store) == 8
    # Daily verdict runs keep per claim today's outcome and its current verdict's, no more.
    for day in range(16, 22):
        compute_verdicts(store, settings, as_of=dt.date(2026, 3, day))
    with store.session() as s:
        kept = s.execute(select(ClaimOutcome.claim_id, ClaimOutcome.as_of)).all()
    assert {d for _, d in kept} <= {dt.date(2026, 3, 16), dt.date(2026, 3, 21)}
    assert len(kept) <= 2 * 4


def test_the_digest_reads_the_stored_outcome(store) -> None:
    """What the digest prints is the stored row: altered in place (its fingerprint kept), it shows."""
    settings = trusted_settings()
    sample(World(store))
    assert settled_digest(store, settings, WEEK).lines  # settled once
    end = WEEK.end
    with store.session() as s:
        row = s.scalars(
            select(ClaimOutcome).where(ClaimOutcome.claim_id == "c_quiet", ClaimOutcome.as_of == end)
        ).one()
        assert row.outcome["status"] == "PERISHABLE"
        row.outcome = {**row.outcome, "status": "OVERTURNED"}
    digest = gather_digest(store, settings, WEEK)
    [quiet] = [c for line in digest.lines for c in line.claims if c.id == "c_quiet"]
    assert quiet.status == "OVERTURNED" and quiet.previous_status == "PERISHABLE"
    # Settling again finds the inputs unchanged, so nothing is recomputed over the altered row.
    assert settle_period(store, settings, WEEK).computed == 0


def test_a_missing_or_stale_outcome_is_an_error_not_a_recomputation(store) -> None:
    settings = trusted_settings()
    w = World(store)
    sample(w)
    with pytest.raises(OutcomesNotStored, match="none is stored"):
        gather_digest(store, settings, WEEK)
    settle_period(store, settings, WEEK)
    gather_digest(store, settings, WEEK)
    w.paper("2603.09999", "Calibration holds", dt.date(2026, 3, 14))
    w.assess("2603.09999", "c_calib", "SUPPORTS", 0.95, evidence="calibration holds")
    with pytest.raises(OutcomesNotStored, match=r"claim c_calib: .*2026-03-15.*evidence changed"):
        gather_digest(store, settings, WEEK)
    # Only c_calib's outcome at the period's end changed: its day before the week did not.
    assert settle_period(store, settings, WEEK).computed == 1
    gather_digest(store, settings, WEEK)


def test_evidence_judged_after_a_digest_shows_when_it_is_written_again(store, tmp_path) -> None:
    """A replay or a retest judges a past week later: writing its digest again settles the outcomes on
    the evidence as it is now."""
    settings = trusted_settings()
    settings.paths.reports = tmp_path / "reports"
    w = World(store)
    sample(w)
    before = settled_write(store, settings, WEEK, formats=["md"]).paths["md"].read_text()
    assert "Calibration breaks under scale" not in before
    w.paper("2603.08888", "Calibration breaks under scale", dt.date(2026, 3, 13))
    w.assess("2603.08888", "c_calib", "OVERTURNS", 0.97, evidence="calibration breaks")
    after = settled_write(store, settings, WEEK, formats=["md"]).paths["md"].read_text()
    assert "Calibration breaks under scale" in after
    with store.session() as s:
        now = stored_outcome(s, "c_calib", WEEK.end)
    assert now is not None and "2603.08888" in {i.arxiv_id for i in now.counted}


def test_write_digest_reads_the_outcomes_and_never_settles_them(store, tmp_path) -> None:
    """The digest is a reader: unsettled, it raises naming what to run first and writes nothing; once
    the period is settled it is written; evidence judged since makes it raise again, not recompute."""
    settings = trusted_settings()
    settings.paths.reports = tmp_path / "reports"
    w = World(store)
    sample(w)
    with pytest.raises(OutcomesNotStored, match=r"none is stored.*settle_period.*outcomes step"):
        write_digest(store, settings, WEEK)
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(Digest)) == 0
    assert not (tmp_path / "reports" / "digest-2026-W11.md").exists()
    settle_period(store, settings, WEEK)
    assert write_digest(store, settings, WEEK).paths["md"].exists()
    w.paper("2603.09999", "Calibration holds", dt.date(2026, 3, 14))
    w.assess("2603.09999", "c_calib", "SUPPORTS", 0.95, evidence="calibration holds")
    with pytest.raises(OutcomesNotStored, match="c_calib.*evidence changed.*settle_period"):
        write_digest(store, settings, WEEK)
    assert _rows(store) == 8 and settle_period(store, settings, WEEK).computed == 1
