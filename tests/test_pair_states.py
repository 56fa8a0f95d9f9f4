"""One record of each pair's state (store/pairs.py, issue 32), on SQLite and PostgreSQL.

The judge, its dry run, the digest and the board count the same pairs pending: on one store holding a
pair in every state (judged, failed, parked, awaiting the LLM screen, screened out, pending above and
below the embedded judge's triage cut), each of them is asked through its own entry point. The digest
and the board read the cut of the judge that ran, not the one the config names; the judge says what it
is (`Judge.triage_only`) and the one function for stored names agrees with it.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from digest_world import World, settled_digest
from starlette.testclient import TestClient
from test_judge_triage_cut import WEEK, embedded_settings
from test_judge_triage_cut import world as triage_world

from monitor.config import Settings
from monitor.judge.base import Judge
from monitor.judge.factory import PROVIDERS, make_judge
from monitor.judge.runner import judge_pending
from monitor.judge_names import shown_judge, stored_judge_name, triage_only_judge
from monitor.schedule.judging import JudgeRequest, judge_once
from monitor.schedule.signals import StopFlag
from monitor.store.candidates import SCREEN_DROPPED, SCREEN_KEPT, SCREEN_PENDING
from monitor.store.db import Store
from monitor.store.failures import FailedPair, record_failure
from monitor.store.models import Candidate
from monitor.store.pairs import PairScope, PairState, cache_key, count_pairs
from monitor.web.app import create_app

CLAIMS = {
    "c_a": "Reinforcement learning fine-tuning updates a sparse subnetwork of parameters",
    "c_b": "The sparsity of RL updates holds across model scales",
}
ABSTRACT = "We show that RL fine-tuning updates only a small subnetwork. The sparsity holds across scales."
W10, W11 = dt.date(2026, 3, 4), dt.date(2026, 3, 11)  # WEEK is 2026-W11
# (paper, claim): (published, relevance score, screen). The embedded judge's cut is each claim's top 3 of
# a week among the pairs the screen does not hold back.
PAIRS: dict[tuple[str, str], tuple[dt.date, float, str | None]] = {
    ("2603.00001", "c_a"): (W11, 0.9, None),  # judged by the first run (the top 3 of c_a)
    ("2603.00002", "c_a"): (W11, 0.8, SCREEN_KEPT),  # judged by the first run
    ("2603.00003", "c_a"): (W11, 0.7, None),  # judged by the first run
    ("2603.00004", "c_a"): (W11, 0.6, None),  # below the cut
    ("2603.00001", "c_b"): (W11, 0.9, None),  # failed once: the judge asks again
    ("2603.00002", "c_b"): (W11, 0.8, None),  # pending, above the cut
    ("2603.00003", "c_b"): (W11, 0.7, None),  # parked
    ("2603.00004", "c_b"): (W11, 0.6, None),  # below the cut
    ("2603.00005", "c_b"): (W11, 0.99, SCREEN_PENDING),  # awaiting the LLM screen: in no cut
    ("2603.00006", "c_b"): (W11, 0.98, SCREEN_DROPPED),  # screened out
    ("2603.00010", "c_b"): (W10, 0.5, None),  # an earlier week's, pending: to date, not in the period
}
WORK = {("2603.00001", "c_b"), ("2603.00002", "c_b"), ("2603.00010", "c_b")}  # the judge's, by hand


def settings_for(db_url: str, top_k: int = 3, **more: Any) -> Settings:
    settings = embedded_settings(top_k=top_k, above=0)
    for section, values in more.items():
        setattr(settings, section, getattr(settings, section).model_copy(update=values))
    settings.database.url = db_url
    return settings


def world(store: Store, judge: Judge) -> None:
    w = World(store)
    w.line("rl", "What does RL change?")
    for claim_id, text in CLAIMS.items():
        w.claim(claim_id, text, ("rl",))
    for arxiv_id, day in sorted({(a, d) for (a, _), (d, _, _) in PAIRS.items()}):
        w.paper(arxiv_id, f"Sparse RL updates {arxiv_id}", day, abstract=ABSTRACT)
    with store.session() as s:
        for (arxiv_id, claim_id), (_, score, screen) in PAIRS.items():
            s.add(
                Candidate(
                    arxiv_id=arxiv_id, version=1, claim_id=claim_id, score=score, method="t", screen=screen
                )
            )
    for arxiv_id, park in (("2603.00001", 0), ("2603.00003", 1)):
        mine = (judge.name, judge.model, judge.prompt_version)
        key = cache_key(arxiv_id, 1, CLAIMS["c_b"], *mine)
        record_failure(store, FailedPair(key, arxiv_id, 1, "c_b", *mine), "not JSON", None, park_after=park)


def board_line(store: Store, settings: Settings) -> str:
    page = TestClient(create_app(store, settings)).get("/")
    assert page.status_code == 200
    found = re.search(r'<p class="muted" id="pairs">(.*?)</p>', page.text, re.S)
    assert found, page.text
    return re.sub(r"<[^>]+>|\s+", " ", found[1]).strip()


def dry_run(store: Store, settings: Settings, provider: str | None = None) -> Any:
    shown: dict[str, Any] = {}
    request = JudgeRequest(dry_run=True, relevance=False, alternatives=False, provider=provider)
    judge_once(store, settings, request, StopFlag(), lambda step, result: shown.__setitem__(step, result))
    return shown["judge"]


def states(store: Store, until: dt.date, since: dt.date | None = None) -> dict[PairState, int]:
    with store.session() as s:
        counts = count_pairs(s, PairScope(until=until, since=since, top_k=3))
    found: dict[PairState, int] = {}
    for c in counts:
        found[c.state] = found.get(c.state, 0) + c.pairs
    return found


def test_the_judge_its_dry_run_the_digest_and_the_board_count_the_same_pairs_pending(
    store: Store, db_url: str
) -> None:
    settings = settings_for(db_url)
    judge = make_judge(settings)
    world(store, judge)
    judge_once(store, settings, JudgeRequest(claim_ids=["c_a"], relevance=False), StopFlag(), lambda *_: None)

    # Every state once, by the one definition (counted in SQL).
    assert states(store, WEEK.end) == {
        PairState.JUDGED: 3,
        PairState.FAILED: 1,
        PairState.PARKED: 1,
        PairState.AWAITING_SCREEN: 1,
        PairState.SCREENED_OUT: 1,
        PairState.PENDING: 4,  # two above the cut (one of them the earlier week's), two below
    }
    # The dry run (the judge's own reading, by cache key, in Python) prices exactly the pairs by hand.
    estimate = dry_run(store, settings)
    assert (estimate.pending, estimate.parked, estimate.below_cut, estimate.triage_cut) == (
        len(WORK),
        1,
        2,
        3,
    )

    digest = settled_digest(store, settings, WEEK).summary
    assert (digest.unjudged_pairs, digest.unjudged_papers) == (len(WORK), len({a for a, _ in WORK}))
    j = digest.judging  # the period's: the earlier week's pair is not in it
    assert (j.pairs, j.judged, j.failed, j.parked, j.awaiting_screen, j.screened_out) == (9, 3, 1, 1, 1, 1)
    assert (digest.below_cut, digest.waiting, j.judge_work) == (2, 2, 2)

    line = board_line(store, settings)
    assert line.startswith(
        "Candidate pairs: 3 judged · 3 waiting for the judge ( monitor judge ; 1 of them"
    ), line
    assert "· 1 parked" in line and "· 1 awaiting the LLM screen" in line and "· 2 below the embedded" in line
    assert "· 1 screened out" in line

    # The judge judges exactly those, and then every reader says nothing is pending.
    ran = judge_pending(store, settings, judge=judge)
    assert (ran.pending, ran.judged, ran.parked, ran.below_cut) == (len(WORK), len(WORK), 1, 2)
    assert dry_run(store, settings).pending == 0
    after = settled_digest(store, settings, WEEK).summary
    assert (after.unjudged_pairs, after.judging.failed, after.judging.judge_work) == (0, 0, 0)
    assert "· 0 waiting for the judge ( monitor judge )" in board_line(store, settings)


def test_a_new_prompt_makes_the_judges_pairs_its_work_again_while_the_counts_see_them_judged(
    store: Store, db_url: str
) -> None:
    """The one difference between the readers, pinned: the judge reads its own cache keys (a new
    model, prompt or wording is its work again), a count reads any judge's current answer."""
    settings = settings_for(db_url)
    judge = make_judge(settings)
    world(store, judge)
    judge_pending(store, settings, judge=judge)
    assert dry_run(store, settings).pending == 0
    judge.prompt_version = "student-v2"  # as a new model release would
    again = judge_pending(store, settings, judge=judge, dry_run=True)
    # Every pair above the cut: 3 of c_a, 4 of c_b (the one parked under the old key among them).
    assert (again.pending, again.parked) == (7, 0)
    assert states(store, WEEK.end)[PairState.JUDGED] == 6


def test_the_digest_and_the_board_read_the_cut_of_the_judge_that_ran_not_the_configured_one(
    store: Store, db_url: str
) -> None:
    """`monitor judge --judge embedded` while the config names an LLM: the digest counts the pairs below
    the cut that run applied apart, never as "not judged yet" (before: the configured judge's view, no
    cut, the period's 6 pairs below it "not judged yet")."""
    triage_world(store)
    settings = settings_for(
        db_url, top_k=2, judge={"provider": "auto"}, llm={"base_url": "http://127.0.0.1:9/v1"}
    )
    assert settings.judge_provider() == "openai"
    judge_once(
        store, settings, JudgeRequest(provider="embedded", relevance=False), StopFlag(), lambda *_: None
    )
    s = settled_digest(store, settings, WEEK).summary
    assert (s.triage_cut, s.below_cut, s.unjudged_pairs, s.waiting) == (2, 6, 0, 0)
    assert "· 8 below the embedded model's triage cut" in board_line(store, settings)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_judge_says_whether_it_is_triage_only_and_its_stored_name_says_the_same(provider: str) -> None:
    judge = make_judge(Settings(), provider, connect=False)
    assert judge.triage_only is (provider == "embedded")
    assert triage_only_judge(judge.name) is judge.triage_only is triage_only_judge(provider)
    assert judge.name == stored_judge_name(provider) and shown_judge(judge.name) == provider
