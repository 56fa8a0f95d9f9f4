"""Issue 21 items 3-5: a claim's own sources are never evidence about it; every reader (verdict table,
its JSON, `monitor show`, the digest, the feed) says the same about a claim's evidence; a curator's one
keypress settles nothing unless marked decisive."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

import pytest
from digest_world import TRUSTED_ENV, World, trusted_settings
from ops_helpers import cli
from rich.console import Console

from monitor.review.queue import decisions, review_queue
from monitor.review.terminal import walk
from monitor.store import open_store
from monitor.store.models import Assessment
from monitor.verdicts.rollup import compute_verdicts, current_verdicts, load_evidence

DARLING_NOTE = (
    "DARLING jointly optimizes for quality and semantic diversity using a learned classifier, finding that "
    "diversity rewards catalyze exploration."
)
DARLING_ABSTRACT = (
    "We address this challenge with Diversity-Aware Reinforcement Learning (DARLING), a framework that "
    "jointly optimizes for response quality and semantic diversity."
)
QUOTE = "a framework that jointly optimizes for response quality and semantic diversity"
DAY = dt.date(2026, 3, 10)  # in week 2026-W11


def abstain(store, assessment_id: int) -> None:
    """The embedded judge withheld its stance on this pair ("related, stance unclear")."""
    with store.session() as s:
        s.get(Assessment, assessment_id).abstained = True


def world(store) -> World:
    """One line, three claims: a note with its own paper, one with local labels only, one that counts."""
    w = World(store)
    w.line("div", "Is diversity traded for quality?")
    w.claim("c_note", DARLING_NOTE, ("div",), kind="note")
    for claim in ("c_held", "c_counted"):
        text = "Preference tuning lowers diversity" if claim == "c_held" else "RL narrows answers"
        w.claim(claim, text, ("div",), "2025-05", dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month")
    w.paper("2603.10001", "Jointly Reinforcing Diversity and Quality", DAY, abstract=DARLING_ABSTRACT)
    w.assess("2603.10001", "c_note", "SUPPORTS", 0.95, evidence=QUOTE)  # the note's own paper
    w.assess("2603.10001", "c_counted", "SUPPORTS", 0.95, evidence=QUOTE)  # a source of its line too
    for n in (2, 3, 4):
        w.paper(f"2603.1000{n}", f"Local paper {n}", DAY)
        aid = w.assess(f"2603.1000{n}", "c_held", "SUPPORTS", 0.9, judge="local")
        if n == 4:
            abstain(store, aid)
    w.paper("2603.10005", "Replication", DAY)
    w.assess("2603.10005", "c_counted", "SUPPORTS", 0.9)
    w.paper("2603.10006", "Unquoted", DAY)
    w.assess("2603.10006", "c_counted", "OVERTURNS", 0.9, grounded=False)
    return w


SENTENCES = {
    "c_note": "no paper counts yet; 1 paper is the claim's own source",
    "c_held": "no paper counts yet; 2 papers wait for a curator; 1 paper withheld (1 stance unclear)",
    "c_counted": (
        "1 paper counts (1 SUPPORTS); 1 paper withheld (1 ungrounded); 1 paper is the claim's own source"
    ),
}
TOTALS = (
    "Claim-paper pairs to date: 1 count; 2 wait for a curator; 2 withheld (1 stance unclear, 1 ungrounded); "
    "2 are a claim's own source"
)


def test_a_notes_own_paper_is_its_source_and_its_lines_never_evidence(store) -> None:
    settings = trusted_settings()
    world(store)
    statuses = {c.claim_id: c.status for c in compute_verdicts(store, settings)}
    # A SUPPORTS 0.95 from a perfectly precise judge would make c_note DURABLE were it new evidence.
    assert statuses["c_note"] == "UNTESTED"
    assert statuses["c_counted"] == "DURABLE"  # on the replication alone
    [row] = [r for r in current_verdicts(store) if r.claim_id == "c_counted"]
    assert row.papers == ["2603.10005v1"]
    with store.session() as s:
        evidence = load_evidence(s, settings)
    [note_paper] = evidence["c_note"]
    assert note_paper.source == "this note's paper: the note names it, DARLING"
    sources = {i.arxiv_id: i.source for i in evidence["c_counted"] if i.source}
    assert sources == {"2603.10001": "the paper of note c_note: the note names it, DARLING"}
    settings.verdicts.exclude_anchors = False  # sources count again, as before
    assert {c.claim_id: c.status for c in compute_verdicts(store, settings)}["c_note"] == "DURABLE"


def test_how_a_note_names_or_paraphrases_its_paper() -> None:
    from monitor.verdicts.sources import names_paper

    title = "RL Squeezes, SFT Expands: A Comparative Study of Reasoning LLMs"
    quoted = 'The "RL Squeezes, SFT Expands" paper studies search agents trained with RL versus SFT.'
    assert (
        names_paper(quoted, title, "An abstract.") == "the note quotes its title “RL Squeezes, SFT Expands”"
    )
    assert names_paper(DARLING_NOTE, "Jointly Reinforcing", DARLING_ABSTRACT).endswith("names it, DARLING")
    named = "Critique-GRPO shows that models stuck on plateaus can improve."
    assert names_paper(named, "Critique-GRPO: Advancing LLM Reasoning", "x").endswith("Critique-GRPO")
    note = "Only 20% of tokens exhibit high entropy as forking points; RLVR adjusts these forking tokens."
    abstract = "Few tokens exhibit high entropy; these forking points matter. RLVR adjusts forking tokens."
    assert names_paper(note, "Beyond the 80/20 Rule", abstract).startswith(
        "the note paraphrases its abstract"
    )
    # Common terms are no names (RLVR is short), and sharing the topic is no paraphrase.
    rlvr = "Reinforcement Learning with Verifiable Rewards (RLVR) improves reasoning of language models."
    assert (
        names_paper("RLVR improves sampling efficiency within existing capability boundaries.", "T", rlvr)
        == ""
    )
    assert names_paper(note, "Entropy in RL", "We study token entropy during RL training of LLMs.") == ""


def _monitor(db_url: str, cwd: Path, *args: str) -> str:
    env = dict(os.environ, MONITOR_DATABASE__URL=db_url, COLUMNS="400", **TRUSTED_ENV)
    env.pop("MONITOR_CONFIG", None)
    done = cli(*args, environ=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _plain(text: str) -> str:
    """Markdown escapes and runs of whitespace undone, so a sentence reads the same in every format."""
    return re.sub(r"\s+", " ", text.replace("\\", ""))


def test_every_reader_says_the_same_about_a_claims_evidence(db_url: str, tmp_path: Path) -> None:
    store = open_store(db_url)
    w = world(store)
    store.close()
    table = _plain(_monitor(db_url, tmp_path, "verdicts"))
    rows = {r["claim_id"]: r for r in json.loads(_monitor(db_url, tmp_path, "verdicts", "--json"))}
    _monitor(db_url, tmp_path, "report", "--period", "2026-W11")
    digest = _plain((tmp_path / "reports" / "digest-2026-W11.md").read_text())
    feed = _plain((tmp_path / "reports" / "feed.xml").read_text())
    for claim_id, sentence in SENTENCES.items():
        assert sentence in table, claim_id
        assert rows[claim_id]["summary"].endswith(sentence)
        assert rows[claim_id]["evidence_summary"]["sentence"] == sentence
        shown = _plain(_monitor(db_url, tmp_path, "show", claim_id))
        assert f"evidence: {sentence}" in shown
        assert sentence in digest, claim_id
    assert rows["c_held"]["evidence_summary"] == {
        "counted": {},
        "waiting": 2,
        "withheld": {"stance unclear": 1},
        "sources": 0,
        "sentence": SENTENCES["c_held"],
    }
    held = _monitor(db_url, tmp_path, "show", "c_held")
    assert "waits" in held and "│ yes" not in held  # not "counts: yes" while the table says none counts
    assert "source" in _monitor(db_url, tmp_path, "show", "c_note")
    assert f"- {TOTALS}" in digest and f"{TOTALS}." in feed
    # The table reads the stored computation only: a paper judged since shows after the next refresh,
    # status and papers together (issue 23 item 3).
    store = open_store(db_url)
    w.paper("2603.10007", "Contradiction", DAY)
    w.assess("2603.10007", "c_counted", "OVERTURNS", 0.95)
    store.close()
    stale = {
        r["claim_id"]: r for r in json.loads(_monitor(db_url, tmp_path, "verdicts", "--json", "--no-refresh"))
    }
    assert (stale["c_counted"]["status"], stale["c_counted"]["evidence"]) == ("DURABLE", ["2603.10005v1"])
    fresh = {r["claim_id"]: r for r in json.loads(_monitor(db_url, tmp_path, "verdicts", "--json"))}
    assert fresh["c_counted"]["status"] == "CONTESTED"
    assert sorted(fresh["c_counted"]["evidence"]) == ["2603.10005v1", "2603.10007v1"]


def test_the_walk_marks_a_decision_decisive_with_a_bang(store) -> None:
    settings = trusted_settings()
    world(store)
    queue = review_queue(store, settings)
    assert [i.claim_id for i in queue[:2]] == ["c_held", "c_held"]  # the local labels wait first
    keys = iter(["!", "d", "!", "y", "q"])  # "!" then d: a dismissal is never decisive
    walk(Console(record=True, width=120), store, queue, key=lambda: next(keys), line=lambda _: "")
    assert [(d["action"], d["decisive"]) for d in decisions(store)] == [("dismiss", False), ("confirm", True)]
    statuses = {c.claim_id: c.status for c in compute_verdicts(store, settings)}
    assert statuses["c_held"] == "DURABLE"  # one decisive confirmation settles it


@pytest.mark.parametrize("decisive", [False, True])
def test_one_confirmed_local_label_moves_a_verdict_only_when_decisive(store, decisive: bool) -> None:
    from monitor.review.queue import record

    settings = trusted_settings()
    world(store)
    first = review_queue(store, settings)[0]
    if decisive:
        record(store, first.assessment_id, label="S", decisive=True)
    else:
        record(store, first.assessment_id, label="S")  # one `y`
    w = World(store)
    w.assess(first.arxiv_id, "c_held", "UNRELATED", 0.9, judge="local")  # a retest: the decision holds
    statuses = {c.claim_id: c.status for c in compute_verdicts(store, settings)}
    # One plain confirmation counts but moves nothing: UNSETTLED, not UNTESTED (issue 31).
    assert statuses["c_held"] == ("DURABLE" if decisive else "UNSETTLED")
