"""The embedded judge's triage cut (`judge.embedded_top_k`), on SQLite and PostgreSQL.

For a library above `judge.embedded_cut_above_claims` claims the embedded judge reads only each claim's
top candidates of a week by relevance score: it only ranks papers for triage, so the rest is work no
digest shows. Those pairs are not failed and not pending (a rerun does not pick them up), the digest
and `monitor judge --dry-run` count them as below the cut, and an LLM judge reads them as usual.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from digest_world import World, settled_digest
from llm_server import ScriptedLLM, answering
from ops_helpers import cli
from sqlalchemy import Date, literal, select
from test_judge_runner import settings_for

from monitor.config import Settings, load_settings
from monitor.judge.runner import judge_pending
from monitor.judge.work import triage_cut
from monitor.report.period import resolve_period
from monitor.report.render import render
from monitor.store.candidates import SCREEN_DROPPED, week_index
from monitor.store.db import Store
from monitor.store.models import Assessment, Candidate
from monitor.store.pairs import PairScope, count_judge_work, pair_tally

WEEK = resolve_period("2026-W11")  # Monday 9 to Sunday 15 March 2026
ABSTRACT = "We show that RL fine-tuning updates only a small subnetwork. The sparsity holds across scales."
CLAIMS = ("c_a", "c_b")
# Per week, each claim's candidates with their relevance scores; the top two of each week are read.
WEEK_11 = {"2603.00001": 0.9, "2603.00002": 0.5, "2603.00003": 0.8, "2603.00004": 0.1, "2603.00005": 0.3}
WEEK_12 = {"2603.00011": 0.2, "2603.00012": 0.7, "2603.00013": 0.4}
READ = {"2603.00001", "2603.00003", "2603.00012", "2603.00013"}
ALL_PAPERS = {**WEEK_11, **WEEK_12}


def world(store: Store) -> None:
    w = World(store)
    w.line("rl", "What does RL change?")
    w.claim("c_a", "Reinforcement learning fine-tuning updates a sparse subnetwork of parameters", ("rl",))
    w.claim("c_b", "The sparsity of RL updates holds across model scales", ("rl",))
    days = {**dict.fromkeys(WEEK_11, dt.date(2026, 3, 10)), **dict.fromkeys(WEEK_12, dt.date(2026, 3, 17))}
    for arxiv_id, day in days.items():
        w.paper(arxiv_id, f"Sparse RL updates {arxiv_id}", day, abstract=ABSTRACT)
    w.paper("2603.00099", "Dropped", dt.date(2026, 3, 11), abstract=ABSTRACT)
    with store.session() as s:
        for arxiv_id, score in ALL_PAPERS.items():
            for claim_id in CLAIMS:
                s.add(Candidate(arxiv_id=arxiv_id, version=1, claim_id=claim_id, score=score, method="test"))
        # A higher score the LLM screen dropped takes no place in the cut: it is no judge's work.
        s.add(
            Candidate(
                arxiv_id="2603.00099",
                version=1,
                claim_id="c_a",
                score=0.99,
                method="t",
                screen=SCREEN_DROPPED,
            )
        )


def embedded_settings(top_k: int | None = 2, above: int = 0) -> Settings:
    cut = {"embedded_top_k": top_k, "embedded_cut_above_claims": above}
    return Settings(judge={"provider": "embedded", **cut})


def judged(store: Store) -> set[tuple[str, str, str]]:
    with store.session() as s:
        rows = s.execute(select(Assessment.arxiv_id, Assessment.claim_id, Assessment.judge)).all()
    return {(a, c, j) for a, c, j in rows}


def test_the_embedded_judge_reads_each_claims_top_k_of_a_week_and_the_rest_are_not_pending(
    store: Store,
) -> None:
    world(store)
    settings = embedded_settings()
    first = judge_pending(store, settings)
    assert first.triage_cut == 2
    assert judged(store) == {(a, c, "local") for a in READ for c in CLAIMS}
    assert (first.judged, first.errors, first.below_cut) == (8, 0, 8)
    # Below the cut is not pending: a rerun has nothing to do and still says what it leaves unread.
    again = judge_pending(store, settings)
    assert (again.pending, again.judged, again.below_cut) == (0, 0, 8)
    with store.session() as s:
        cut = PairScope(until=dt.date(2026, 3, 31), top_k=2)
        assert count_judge_work(s, cut) == (0, 0)
        assert pair_tally(s, cut).below_cut == 8
        # An LLM judge's view (no cut): all pending, 8 pairs of 4 papers.
        assert count_judge_work(s, PairScope(until=dt.date(2026, 3, 31))) == (8, 4)
    # `claim_ids` and `since` narrow the cut's count as they narrow the work.
    narrowed = judge_pending(store, settings, claim_ids=["c_a"], since=dt.date(2026, 3, 16), dry_run=True)
    assert (narrowed.pending, narrowed.below_cut) == (0, 1)


def test_the_cut_is_by_week_monday_to_sunday(store: Store) -> None:
    days = [dt.date(2026, 3, 8), dt.date(2026, 3, 9), dt.date(2026, 3, 15), dt.date(2026, 3, 16)]
    with store.session() as s:
        weeks = [s.scalar(select(week_index(literal(day, Date)))) for day in days]
    assert weeks[1] == weeks[2] and weeks[0] == weeks[1] - 1 and weeks[3] == weeks[1] + 1


def test_the_digest_counts_pairs_below_the_cut_apart_and_never_as_nothing_bearing(store: Store) -> None:
    world(store)
    settings = embedded_settings()
    judge_pending(store, settings)
    digest = settled_digest(store, settings, WEEK)
    s = digest.summary
    assert (s.triage_cut, s.below_cut, s.unjudged_pairs, s.waiting) == (2, 6, 0, 0)
    assert s.judging.pairs == 10 and s.judging.judged == 4 and s.final
    for form in ("md", "html", "txt"):
        text = render(digest, form, settings)
        assert "Below the embedded model's triage cut: 6 candidate pairs of the period, not read" in text
        assert "each claim's 2 candidates a week with the highest relevance score" in text
        assert "An LLM judge" in text and "these included" in text
        assert "Not judged yet" not in text and "not judged yet" not in text, form
        assert "none bears on a claim" not in text


def test_an_llm_judge_afterwards_reads_the_pairs_below_the_cut(store: Store) -> None:
    world(store)
    judge_pending(store, embedded_settings())
    with ScriptedLLM() as llm:
        llm.default = answering("UNRELATED")
        settings = settings_for(llm)
        summary = judge_pending(store, settings)
    # It reads every candidate (its own cache key: the embedded model's pairs too), the 8 below the cut
    # among them.
    assert summary.triage_cut is None and (summary.pending, summary.judged, summary.below_cut) == (16, 16, 0)
    every = {(a, c) for a in ALL_PAPERS for c in CLAIMS}
    assert {(a, c) for a, c, j in judged(store) if j == "openai"} == every
    digest = settled_digest(store, settings, WEEK)
    assert (digest.summary.below_cut, digest.summary.judging.judged) == (0, 10)
    assert "triage cut" not in render(digest, "md", settings)


def test_dry_run_counts_the_pairs_below_the_cut(
    store: Store,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    world(store)
    for name, value in {
        "MONITOR_JUDGE__PROVIDER": "embedded",
        "MONITOR_JUDGE__EMBEDDED_TOP_K": "2",
        "MONITOR_JUDGE__EMBEDDED_CUT_ABOVE_CLAIMS": "0",
        "COLUMNS": "200",
    }.items():
        monkeypatch.setenv(name, value)
    # In tmp_path: no stray monitor.toml.
    done = cli("--db", db_url, "judge", "--skip-relevance", "--dry-run", cwd=tmp_path)
    code, out = done.returncode, done.stdout
    assert code == 0, out + done.stderr
    assert re.search(r"│ pending pairs +│ +8 │", out), out
    cut = re.escape("below the embedded triage cut (2 a claim a week; an LLM judge reads them)")
    assert re.search(rf"│ {cut} +│ +8 │", out), out
    assert judged(store) == set()


def test_the_cut_applies_by_default_only_above_the_library_size(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no stray monitor.toml
    settings = Settings()
    assert triage_cut(settings, True, 35) is None and triage_cut(settings, True, 150) is None
    assert triage_cut(settings, True, 151) == settings.judge.embedded_top_k == 10
    assert triage_cut(settings, False, 1000) is None  # an LLM judge reads every candidate
    monkeypatch.setenv("MONITOR_JUDGE__EMBEDDED_TOP_K", "25")
    monkeypatch.setenv("MONITOR_JUDGE__EMBEDDED_CUT_ABOVE_CLAIMS", "30")
    from_env = load_settings()
    assert triage_cut(from_env, True, 35) == 25 and triage_cut(from_env, True, 30) is None
