"""Words that mean one thing (issue 31): UNSETTLED (papers count, none strong enough yet) apart from
UNTESTED (no paper counts), what each verdict and number means wherever one is printed, and stored rows
of the older vocabulary renamed by schema step 12."""

from __future__ import annotations

import datetime as dt
import json

from digest_world import World, settled_digest, trusted_settings
from rich.console import Console
from schema_fixtures import load_schema
from sqlalchemy import create_engine

from monitor.cli.show.verdicts import print_claim, print_verdicts
from monitor.report.period import resolve_period
from monitor.report.render import render
from monitor.store import open_store
from monitor.store.verdicts import verdict_history
from monitor.verdicts.detail import claim_detail
from monitor.verdicts.rollup import compute_verdicts, current_verdicts
from monitor.verdicts.rules import MEANINGS, Thresholds, strength_scale

WEEK = resolve_period("2026-W11")


def _evidence(counted: dict[str, int], sentence: str) -> str:
    return json.dumps(
        {
            "status_since": None,
            "papers": [],
            "evidence": {
                "counted": counted, "waiting": 0, "withheld": {}, "sources": 0, "sentence": sentence
            },
        }
    )


def test_step_12_renames_stored_verdicts_and_outcomes_of_the_old_vocabulary(db_url: str) -> None:
    """A store of version 11 holds "UNTESTED" for claims whose papers count: upgraded, those rows read
    UNSETTLED, the history's `previous_status` and `changed` follow, and the evidence sentence no longer
    says "no relevant paper found"; rows that cannot be told apart stay as they were."""
    load_schema(db_url, 11)
    engine = create_engine(db_url)
    old = "no relevant paper found yet"
    rows = [
        # (id, claim, as_of, status, previous, changed, summary, details)
        (1, "c1", "2026-03-01", "UNTESTED", None, False, old, _evidence({}, old)),
        (2, "c1", "2026-03-08", "UNTESTED", "UNTESTED", False, "1 paper counts (1 RELAXES)",
         _evidence({"RELAXES": 1}, "1 paper counts (1 RELAXES)")),
        (3, "c1", "2026-03-15", "PERISHABLE", "UNTESTED", True, "2603.1v1 RELAXES 0.90; 2 papers count",
         _evidence({"RELAXES": 2}, "2 papers count (2 RELAXES)")),
        (4, "c2", "2026-03-15", "UNTESTED", None, False, "no paper counts yet", "NULL"),
    ]  # fmt: skip
    with engine.begin() as conn:
        for claim in ("c1", "c2"):
            conn.exec_driver_sql(
                "INSERT INTO claims (id, text, kind, date_approximate, topics, created_at) "
                f"VALUES ('{claim}', 'a claim', 'dated', FALSE, '[]', '2026-11-20 00:00:00')"
            )
        for vid, claim, day, status, previous, changed, summary, details in rows:
            prev = f"'{previous}'" if previous else "NULL"
            detail = f"'{details}'" if details != "NULL" else "NULL"
            conn.exec_driver_sql(
                "INSERT INTO verdicts (id, claim_id, status, previous_status, changed, as_of, evidence, "
                f"summary, computed_at, details) VALUES ({vid}, '{claim}', '{status}', {prev}, "
                f"{'TRUE' if changed else 'FALSE'}, '{day}', '[]', '{summary}', "
                f"'2026-11-20 00:00:00', {detail})"
            )
        outcomes = [
            (1, "c1", "2026-03-08",
             {"status": "UNTESTED", "counted": [5], "held": [], "summary": {"sentence": old}}),
            (2, "c2", "2026-03-15", {"status": "UNTESTED", "counted": [7], "held": [7], "summary": {}}),
        ]  # fmt: skip
        for oid, claim, day, outcome in outcomes:
            conn.exec_driver_sql(
                "INSERT INTO claim_outcomes (id, claim_id, as_of, fingerprint, outcome, computed_at) VALUES "
                f"({oid}, '{claim}', '{day}', 'f', '{json.dumps(outcome)}', '2026-11-20 00:00:00')"
            )
    engine.dispose()

    store = open_store(db_url)
    try:
        with store.session() as s:
            history = [(v.status, v.previous_status, bool(v.changed)) for v in verdict_history(s, "c1")]
            assert history == [
                ("UNTESTED", None, False),
                ("UNSETTLED", "UNTESTED", True),  # its first paper counted: a change of verdict now
                ("PERISHABLE", "UNSETTLED", True),
            ]
            first, *_ = verdict_history(s, "c1")
            assert first.summary == "no paper judged relevant yet"
            assert first.details["evidence"]["sentence"] == "no paper judged relevant yet"
            [c2] = verdict_history(s, "c2")
            assert (c2.status, c2.details) == ("UNTESTED", None)  # no summary kept: cannot be told
        with store.engine.connect() as conn:
            raw = dict(conn.exec_driver_sql("SELECT claim_id, outcome FROM claim_outcomes").all())
        loaded = {k: json.loads(v) if isinstance(v, str) else v for k, v in raw.items()}
        assert loaded["c1"]["status"] == "UNSETTLED"
        assert loaded["c1"]["summary"]["sentence"] == "no paper judged relevant yet"
        assert loaded["c2"]["status"] == "UNTESTED"  # its one counted paper waits for a curator
    finally:
        store.close()


def _world(store) -> World:
    w = World(store)
    w.line("rl", "What breaks in RL?")
    w.claim("c_weak", "RL updates few parameters", ("rl",), date_text="2025")
    w.claim("c_none", "Binary rewards degrade calibration", ("rl",), date_text="2025")
    w.paper("2603.00001", "A weak relaxation", dt.date(2026, 3, 10))
    w.assess("2603.00001", "c_weak", "RELAXES", 0.6, evidence="only at small scale, we find")
    return w


def test_show_verdicts_and_the_digest_name_unsettled_apart_from_untested_and_explain_the_numbers(
    store, capsys
) -> None:
    _world(store)
    settings = trusted_settings()
    compute_verdicts(store, settings, as_of=dt.date(2026, 3, 31))
    statuses = {v.claim_id: v.status for v in current_verdicts(store)}
    assert statuses == {"c_weak": "UNSETTLED", "c_none": "UNTESTED"}

    console = Console(width=200, no_color=True)
    print_claim(console, claim_detail(store, settings, "c_weak"))
    shown = " ".join(capsys.readouterr().out.split())
    assert f"c_weak UNSETTLED: {MEANINGS['UNSETTLED']}" in shown
    assert "evidence: 1 paper counts (1 RELAXES)" in shown
    assert " ".join(strength_scale(Thresholds.from_settings(settings.verdicts)).split()) in shown

    print_verdicts(console, current_verdicts(store))
    table = " ".join(capsys.readouterr().out.split())
    assert f"UNSETTLED: {MEANINGS['UNSETTLED']}" in table and f"UNTESTED: {MEANINGS['UNTESTED']}" in table

    digest = settled_digest(store, settings, WEEK)
    text = render(digest, "md", settings)
    assert "| UNSETTLED | 1 | papers count toward it, none strong enough yet to move it |" in text
    assert "| UNTESTED | 1 | no paper counts toward it yet |" in text
    assert f"| UNTESTED | 1 | no paper counts toward it yet |\n\n{digest.scale}\n" in text
    assert "(0.70 or more, not weak): many unsure labels never add up to one" in digest.scale
    # The claim's heading is its whole text, not repeated on the next line.
    heading = "### UNSETTLED (was UNTESTED): RL updates few parameters\n\n"
    assert f"{heading}- `c_weak` · claim date: 2025 · " in text
    assert "UNSETTLED since 2026-03-10 (papers count toward it, none strong enough yet to move it)" in text
    assert text.count("RL updates few parameters") == 3  # heading, its paper's entry, the summary's change
    assert "UNTESTED beside" not in text and "- `c_none` Binary rewards degrade calibration (2025)" in text
    for fmt in ("html", "txt"):
        other = render(digest, fmt, settings)
        assert "UNSETTLED" in other and "never add up to one" in other, fmt



def test_a_side_held_at_the_cap_says_so_beside_its_number_in_every_format(store) -> None:
    """Two unsure RELAXES (0.6 each) would make 0.84; with no confident finding the side is held at 0.60,
    and the digest says so instead of leaving "0.60, a verdict needs 0.80" to read as one paper short."""
    w = World(store)
    w.line("rl", "What breaks in RL?")
    w.claim("c_held", "RL updates few parameters", ("rl",), date_text="2025")
    w.claim("c_free", "Binary rewards degrade calibration", ("rl",), date_text="2025")
    for n, claim in ((1, "c_held"), (2, "c_held"), (3, "c_free")):
        w.paper(f"2603.0000{n}", f"Paper {n}", dt.date(2026, 3, 10))
        w.assess(f"2603.0000{n}", claim, "RELAXES", 0.6, evidence="only at small scale, we find")
    settings = trusted_settings()
    week = resolve_period("2026-W11")
    digest = settled_digest(store, settings, week)
    held = "relaxes or overturns held at 0.60: no finding stated at 0.70 or more yet"
    for fmt in ("md", "txt", "html"):
        text = render(digest, fmt, settings)
        assert text.count(held) == 1, fmt  # c_held only: c_free's one paper is 0.60 of its own
    w.assess("2603.00001", "c_held", "RELAXES", 0.8, evidence="only at small scale, we find")
    digest = settled_digest(store, settings, week)
    assert held not in render(digest, "md", settings)  # a confident finding lifts the cap: PERISHABLE
    assert "### PERISHABLE (was UNTESTED): RL updates few parameters" in render(digest, "md", settings)
