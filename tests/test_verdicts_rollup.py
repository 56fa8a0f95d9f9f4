"""compute_verdicts against a real store (SQLite and PostgreSQL): history rows, v2 relabels, anchors."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from digest_world import World, trusted_settings
from sqlalchemy import select

from monitor.errors import NotFound
from monitor.store.models import Verdict
from monitor.verdicts.rollup import compute_verdicts, current_verdicts


def rows(store, claim_id: str) -> list[Verdict]:
    with store.session() as s:
        return list(s.scalars(select(Verdict).where(Verdict.claim_id == claim_id).order_by(Verdict.id)))


def make(store) -> World:
    w = World(store)
    w.line("rl", "What breaks?")
    w.claim(
        "c1",
        "RL updates few parameters",
        ("rl",),
        date_text="2025-05",
        start=dt.date(2025, 5, 1),
        end=dt.date(2025, 5, 31),
        precision="month",
    )
    return w


def test_history_rows_only_when_something_changed(store) -> None:
    settings = trusted_settings()
    w = make(store)
    first = compute_verdicts(store, settings, as_of=dt.date(2025, 6, 30))
    assert [(c.claim_id, c.status, c.status_changed) for c in first] == [("c1", "UNTESTED", False)]
    assert compute_verdicts(store, settings, as_of=dt.date(2025, 7, 6)) == []  # nothing new: no row
    w.paper("2507.00001", "Replication", dt.date(2025, 7, 10))
    sup = w.assess("2507.00001", "c1", "SUPPORTS", 0.8)
    [change] = compute_verdicts(store, settings, as_of=dt.date(2025, 7, 13))
    assert (change.previous_status, change.status, change.status_changed) == ("UNTESTED", "DURABLE", True)
    assert change.assessment_ids == [sup]
    # A second SUPPORTS: same status, different papers -> a row, but not a status change.
    w.paper("2507.00002", "Another replication", dt.date(2025, 7, 15))
    sup2 = w.assess("2507.00002", "c1", "SUPPORTS", 0.7)
    [change] = compute_verdicts(store, settings, as_of=dt.date(2025, 7, 20))
    assert change.status_changed is False
    assert sorted(change.assessment_ids) == sorted([sup, sup2])
    assert compute_verdicts(store, settings, as_of=dt.date(2025, 7, 27)) == []
    history = rows(store, "c1")
    assert [(v.status, v.changed, v.as_of) for v in history] == [
        ("UNTESTED", False, dt.date(2025, 6, 30)),
        ("DURABLE", True, dt.date(2025, 7, 13)),
        ("DURABLE", False, dt.date(2025, 7, 20)),
    ]
    [current] = current_verdicts(store)
    assert current.status == "DURABLE"
    assert current.changed_at == dt.date(2025, 7, 13)
    assert "2507.00001v1 SUPPORTS 0.80" in current.summary
    json.dumps(current.as_dict())  # the --json output is serialisable
    # From the same stored row: since when the status holds (the paper that moved it), and its papers.
    [current] = current_verdicts(store)
    assert current.status_since == dt.date(2025, 7, 10)
    assert current.as_dict()["evidence"] == ["2507.00001v1", "2507.00002v1"]
    assert current.as_dict()["assessment_ids"] == sorted([sup, sup2])


def test_replay_as_of_ignores_papers_published_later(store) -> None:
    settings = trusted_settings()
    w = make(store)
    w.paper("2508.00001", "Dense RL", dt.date(2025, 8, 20))
    w.assess("2508.00001", "c1", "OVERTURNS", 0.9)
    [early] = compute_verdicts(store, settings, as_of=dt.date(2025, 8, 17))
    assert early.status == "UNTESTED"
    [late] = compute_verdicts(store, settings, as_of=dt.date(2025, 8, 24))
    assert (late.previous_status, late.status) == ("UNTESTED", "OVERTURNED")


def test_a_v2_that_changes_its_label_replaces_the_v1_assessment(store) -> None:
    settings = trusted_settings()
    w = make(store)
    w.paper("2509.00001", "Dense RL", dt.date(2025, 9, 1))
    w.assess("2509.00001", "c1", "OVERTURNS", 0.9, version=1)
    assert compute_verdicts(store, settings)[0].status == "OVERTURNED"
    w.paper(
        "2509.00001",
        "Dense RL (revised)",
        dt.date(2025, 9, 1),
        version=2,
        updated=dt.datetime(2025, 10, 1, 9),
    )
    v2 = w.assess("2509.00001", "c1", "SUPPORTS", 0.8, version=2)  # v1's row stops being current
    [change] = compute_verdicts(store, settings)
    assert (change.previous_status, change.status, change.assessment_ids) == ("OVERTURNED", "DURABLE", [v2])


def test_ungrounded_and_older_papers_in_the_store(store) -> None:
    settings = trusted_settings()
    w = make(store)
    w.paper("2504.00001", "Older", dt.date(2025, 4, 1))
    w.assess("2504.00001", "c1", "OVERTURNS", 0.99)  # older than the claim
    w.paper("2510.00001", "Newer", dt.date(2025, 10, 1))
    w.assess("2510.00001", "c1", "OVERTURNS", 0.99, grounded=False)  # its quote is no real span
    [change] = compute_verdicts(store, settings)
    assert change.status == "UNTESTED"
    [current] = current_verdicts(store, line_id="rl")
    assert current.summary == "no paper counts yet; 1 paper withheld (1 ungrounded)"
    # An unknown line is an error, not an empty table that reads as "no claims".
    with pytest.raises(NotFound, match="no line with id 'nope'"):
        current_verdicts(store, line_id="nope")


def test_a_lines_own_anchor_is_not_new_evidence(store) -> None:
    settings = trusted_settings()
    w = make(store)
    w.anchor("rl", "2506.00001v2")
    w.paper("2506.00001", "The anchor itself", dt.date(2025, 6, 2))
    w.assess("2506.00001", "c1", "SUPPORTS", 0.9)
    assert compute_verdicts(store, settings)[0].status == "UNTESTED"
    settings.verdicts.exclude_anchors = False
    assert compute_verdicts(store, settings)[0].status == "DURABLE"


def test_retired_claims_get_no_verdict_and_run_counts_are_recorded(store) -> None:
    from monitor.store.models import Claim, utcnow
    from monitor.store.records import Run
    from monitor.store.runs import recorded_run

    w = make(store)
    w.claim("c_old", "retired claim", ("rl",))
    with store.session() as s:
        s.get(Claim, "c_old").retired_at = utcnow()
    with recorded_run(store, "verdicts") as run:
        changes = compute_verdicts(store, trusted_settings(), run_id=run.id)
        run.record(changes)  # the stage returns its counts; the caller records them
    assert [c.claim_id for c in changes] == ["c1"]
    with store.session() as s:
        counts = s.get(Run, run.id).counts
    assert counts["verdicts"]["claims"] == 1
    assert counts["verdicts"]["untested"] == 1


def test_show_explains_what_does_not_count(store) -> None:
    from monitor.verdicts.detail import claim_detail

    w = make(store)
    w.paper("2504.00001", "Older", dt.date(2025, 4, 1))
    w.assess("2504.00001", "c1", "OVERTURNS", 0.99)
    w.paper("2510.00001", "Unrelated", dt.date(2025, 10, 1))
    w.assess("2510.00001", "c1", "UNRELATED", 0.9)
    w.paper("2511.00001", "Weak", dt.date(2025, 11, 1))
    w.assess("2511.00001", "c1", "RELAXES", 0.1)
    w.paper("2511.00002", "Weak support", dt.date(2025, 11, 2))
    w.assess("2511.00002", "c1", "SUPPORTS", 0.1)
    w.paper("2512.00001", "Local flag", dt.date(2025, 12, 1))
    w.assess("2512.00001", "c1", "OVERTURNS", 0.8, judge="local")
    w.paper("2512.00002", "Ungrounded", dt.date(2025, 12, 2))
    w.assess("2512.00002", "c1", "SUPPORTS", 0.9, grounded=False)
    compute_verdicts(store, trusted_settings())
    detail = claim_detail(store, trusted_settings(), "c1")
    notes = {e.item.arxiv_id: (e.counted, e.note) for e in detail.evidence}
    assert notes["2504.00001"] == (
        False,
        "not newer than the claim (published 2025-04-01, cutoff 2025-05-31)",
    )
    assert notes["2510.00001"] == (False, "unrelated")
    # Each names the setting that holds it back: RELAXES and OVERTURNS need min_confidence_against.
    assert notes["2511.00001"] == (False, "below min_confidence_against 0.6")
    assert notes["2511.00002"] == (False, "below min_confidence 0.5")
    # A local label waits for a curator: it does not count yet (issue 21: one truth with the table).
    assert notes["2512.00001"] == (False, "for review: waits for a curator's confirmation (`monitor review`)")
    assert notes["2512.00002"] == (False, "ungrounded: its quote is not a real span of the abstract")
    # One local OVERTURNS (weight 0.75, its measured precision) is too weak to move the verdict.
    assert detail.status == "UNTESTED" and [h.status for h in detail.history] == ["UNTESTED"]
    assert claim_detail(store, trusted_settings(), "c").id == "c1"  # a unique prefix will do


def test_an_undated_note_takes_its_lines_findings_span(store) -> None:
    w = World(store)
    w.line("div", "Is diversity traded for ceiling?", span=(2025, 2026))
    w.claim("note1", "Diversity falls as pass@1 rises", ("div",), kind="note")
    w.line("bare", "A line without a span")
    w.claim("note2", "Another undated note", ("bare",), kind="note")
    for claim in ("note1", "note2"):
        w.paper(f"2412.0000{claim[-1]}", "Older than the span", dt.date(2024, 12, 1))
        w.assess(f"2412.0000{claim[-1]}", claim, "SUPPORTS", 0.9)
    settings = trusted_settings()
    statuses = {c.claim_id: c.status for c in compute_verdicts(store, settings)}
    # The 2024 paper predates its line's findings (2025-2026): not news for note1; note2 has no date.
    assert statuses == {"note1": "UNTESTED", "note2": "DURABLE"}
    w.paper("2503.00001", "Inside the span", dt.date(2025, 3, 1))
    w.assess("2503.00001", "note1", "SUPPORTS", 0.9)
    assert {c.claim_id: c.status for c in compute_verdicts(store, settings)}["note1"] == "DURABLE"


def test_show_lists_an_ambiguous_prefix_and_prints_whole_quotes(store) -> None:
    from rich.console import Console

    from monitor.cli.show.verdicts import print_claim
    from monitor.errors import UsageError
    from monitor.verdicts.detail import claim_detail

    w = make(store)
    w.claim("c2", "Another claim", ("rl",))
    with pytest.raises(UsageError, match="'c' is ambiguous: c1, c2"):
        claim_detail(store, trusted_settings(), "c")
    quote = "a long verbatim quote " * 12 + "that ends here"
    w.paper("2510.00001", "Long quote", dt.date(2025, 10, 1))
    w.assess("2510.00001", "c1", "OVERTURNS", 0.6, judge="local", evidence=quote)  # waits for review
    console = Console(record=True, width=500)  # wide: the table does not fold the quote
    print_claim(console, claim_detail(store, trusted_settings(), "c1"))
    out = " ".join(console.export_text().split())
    assert "that ends here" in out and "waits for a curator's confirmation" in out
