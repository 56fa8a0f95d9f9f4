"""Proposed wordings: an LLM narrows a claim that confirmed RELAXES evidence bounds; a curator decides.

The LLM is a real HTTP server (tests/llm_server.py) speaking the OpenAI protocol; the store is real.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from digest_world import TRUSTED_ENV, World, settled_ask, settled_digest, trusted_settings
from llm_server import Reply, ScriptedLLM, completion
from ops_helpers import cli
from sqlalchemy import select

from monitor.claims.importer import import_claims
from monitor.config import Settings
from monitor.errors import UsageError
from monitor.llm.answers import InvalidAnswer
from monitor.report.period import resolve_period
from monitor.report.render import render
from monitor.review.queue import record
from monitor.review.rewording import accept, open_views, parse_proposal, propose_rewordings, reject
from monitor.store import open_store
from monitor.store.models import Claim, ClaimRewording, LineClaim
from monitor.store.records import LLMExchange

CLAIM = "RL updates only a small fraction of parameters"
ABSTRACT = (
    "We study RL fine-tuning at scale. For models under 7B parameters, RL updates only a small "
    "fraction of weights, but above 30B parameters the updates become dense across layers."
)
QUOTE = "above 30B parameters the updates become dense across layers"
WORDING = "RL updates only a small fraction of parameters in models under 30B parameters"


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def llm_settings(llm: ScriptedLLM, **judge: Any) -> Settings:
    base = trusted_settings()
    options = {"base_url": llm.url, "model": "scripted-model", "max_retries": 0, "timeout_seconds": 5.0}
    return base.model_copy(update={"llm": base.llm.model_copy(update={**options, **judge})})


def reply(
    wording: str = WORDING, cited: list[str] | None = None, condition: str = "models under 30B"
) -> Reply:
    body = {
        "wording": wording,
        "condition": condition,
        "cited": cited if cited is not None else ["2603.00001"],
    }
    return Reply(body=completion(json.dumps(body)))


def relaxed_world(store) -> tuple[World, str]:
    """A claim in two lines with one RELAXES a curator confirmed; returns the claim id."""
    w = World(store)
    w.line("l1", "Where does RL act?")
    w.line("l2", "How sparse is RL?")
    cid = "c-000000000001"
    w.claim(cid, CLAIM, ("l1", "l2"), "2025-05", dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month")
    w.paper("2603.00001", "Dense RL at scale", dt.date(2026, 3, 10), abstract=ABSTRACT)
    aid = w.assess("2603.00001", cid, "RELAXES", 0.7, evidence=QUOTE)
    record(store, aid, label="R", note="only above 30B")
    return w, cid


def test_the_model_sees_the_confirmed_quote_and_its_proposal_is_stored(store, llm) -> None:
    _, cid = relaxed_world(store)
    llm.push(reply())
    done = propose_rewordings(store, llm_settings(llm))
    assert len(done.proposed) == 1 and not done.failed
    [request] = llm.chat_requests()
    user = request.body["messages"][1]["content"]
    assert QUOTE in user and CLAIM in user and "only above 30B" in user and 'id="2603.00001"' in user
    assert request.body["response_format"]["json_schema"]["schema"]["properties"]["cited"]["items"][
        "enum"
    ] == ["2603.00001"]
    [view] = open_views(store)
    assert (view.claim_id, view.wording, view.cited) == (cid, WORDING, [("2603.00001", "Dense RL at scale")])
    with store.session() as s:
        exchange = s.scalar(select(LLMExchange))
        assert exchange is not None and exchange.prompt_version.startswith("rw-") and exchange.error is None
    # Nothing new confirmed: no second call.
    again = propose_rewordings(store, llm_settings(llm))
    assert (again.proposed, again.unchanged, len(llm.chat_requests())) == ([], 1, 1)


def test_a_paper_confirmed_after_the_proposal_gets_the_claim_asked_again(store, llm) -> None:
    w, cid = relaxed_world(store)
    llm.push(reply())
    [first] = propose_rewordings(store, llm_settings(llm)).proposed
    w.paper("2604.00002", "Dense RL in small models too", dt.date(2026, 4, 2), abstract=ABSTRACT)
    record(store, w.assess("2604.00002", cid, "RELAXES", 0.7, evidence=QUOTE), label="R")
    llm.push(reply(cited=["2603.00001", "2604.00002"]))
    again = propose_rewordings(store, llm_settings(llm))
    assert len(again.proposed) == 1 and again.unchanged == 0 and len(llm.chat_requests()) == 2
    assert 'id="2604.00002"' in llm.chat_requests()[1].body["messages"][1]["content"]
    [view] = open_views(store)  # the newest proposal is the one shown
    assert view.id == again.proposed[0] != first
    assert [a for a, _ in view.cited] == ["2603.00001", "2604.00002"]


def test_a_bad_answer_gets_one_corrective_turn_then_counts_as_failed(store, llm) -> None:
    relaxed_world(store)
    llm.push(reply(cited=["2601.99999"]), reply(wording=CLAIM + "."))
    done = propose_rewordings(store, llm_settings(llm, response_format="json_object"))
    assert done.proposed == [] and len(done.failed) == 1 and "invalid answer" in done.failed[0]
    second = llm.chat_requests()[1].body["messages"][-1]["content"]
    assert "only ids from ['2603.00001']" in second
    assert open_views(store) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ('{"wording": "x"}', "condition"),
        (json.dumps({"wording": CLAIM.upper(), "condition": "c", "cited": ["a"]}), "unchanged"),
        (json.dumps({"wording": WORDING, "condition": "c", "cited": []}), "at least one"),
        (json.dumps({"wording": "word " * 90, "condition": "c", "cited": ["a"]}), "at most 60"),
    ],
)
def test_parse_rejects_what_a_curator_could_not_use(text: str, problem: str) -> None:
    with pytest.raises(InvalidAnswer, match=problem):
        parse_proposal(text, CLAIM, ["a"])


def test_accepting_moves_the_claim_into_its_lines_and_a_reimport_keeps_it(tmp_path: Path, llm) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'monitor.db'}")
    seeds = tmp_path / "claims.yaml"
    seeds.write_text(f"question: Where does RL act?\nclaims:\n  - text: {CLAIM}\n    date: 2025-05\n")
    settings = llm_settings(llm)
    settings.paths.seeds = tmp_path
    import_claims(store, settings, [seeds])
    with store.session() as s:
        [old] = s.scalars(select(Claim)).all()
        old_id, line_id = old.id, s.scalar(select(LineClaim.line_id))
    w = World(store)
    w.paper("2603.00001", "Dense RL at scale", dt.date(2026, 3, 10), abstract=ABSTRACT)
    record(store, w.assess("2603.00001", old_id, "RELAXES", 0.7, evidence=QUOTE), label="R")
    llm.push(reply())
    [pid] = propose_rewordings(store, settings).proposed
    done = accept(store, pid, note="fair")
    with store.session() as s:
        old, new = s.get(Claim, old_id), s.get(Claim, done.new_claim_id)
        assert old.retired_at is not None and old.replaced_by == new.id
        assert new.retired_at is None and new.text == WORDING and new.date_text == "2025-05"
        links = {(r.claim_id, r.retired_at is None) for r in s.scalars(select(LineClaim))}
        assert links == {(old_id, False), (new.id, True)}
        row = s.get(ClaimRewording, pid)
        assert (row.status, row.note, row.new_claim_id) == ("accepted", "fair", new.id)
    # The library's file still says the old text: the accepted wording stays in force.
    again = import_claims(store, settings, [seeds])
    assert again.claims_retired == [] and again.claims_reactivated == [] and again.claims_added == []
    with store.session() as s:
        active = [c.id for c in s.scalars(select(Claim).where(Claim.retired_at.is_(None)))]
        assert (
            active == [done.new_claim_id]
            and s.get(LineClaim, (line_id, done.new_claim_id)).retired_at is None
        )
    # The library rewrites the claim its own way: that text wins and replaces the reworded claim.
    seeds.write_text(
        "question: Where does RL act?\nclaims:\n  - text: RL is sparse below 30B\n    date: 2025-05\n"
    )
    third = import_claims(store, settings, [seeds])
    assert third.claims_retired == [done.new_claim_id] and len(third.claims_added) == 1
    with pytest.raises(UsageError, match="already accepted"):
        accept(store, pid)
    store.close()


def test_rejecting_keeps_the_claim_and_the_digest_shows_open_proposals(store, llm) -> None:
    _, cid = relaxed_world(store)
    settings = llm_settings(llm)
    settings.report.research_questions = False  # only the proposal's call reaches the server
    llm.push(reply())
    week = resolve_period("2026-W11")
    digest = settled_digest(store, settings, week, settled_ask(store, settings, week))
    text = render(digest, "md", settings)
    [view] = open_views(store)
    assert f"**Proposed wording** (scripted-model, citing 2603.00001): {WORDING}" in text
    assert f"`monitor review reword accept {view.id}`" in text and "1 proposed wording** to accept" in text
    assert "<strong>Proposed wording</strong>" in render(digest, "html", settings)
    reject(store, view.id, note="too narrow")
    assert open_views(store) == []
    after = render(settled_digest(store, settings, resolve_period("2026-W11")), "md", settings)
    assert "Proposed wording" not in after and "Narrower than stated?" in after  # the condition, quoted
    with store.session() as s:
        assert s.get(Claim, cid).retired_at is None


def test_the_walk_and_the_commands(tmp_path: Path, llm) -> None:
    url = f"sqlite:///{tmp_path / 'monitor.db'}"
    store = open_store(url)
    _, cid = relaxed_world(store)
    store.close()
    env = dict(os.environ, MONITOR_DATABASE__URL=url, MONITOR_JUDGE__BASE_URL=llm.url, **TRUSTED_ENV)
    env.pop("MONITOR_CONFIG", None)

    def monitor(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return cli(*args, environ=env, cwd=tmp_path, stdin=stdin)

    llm.push(reply())
    proposed = monitor("review", "reword", "propose")
    assert proposed.returncode == 0 and "proposed 1 narrowed wording" in proposed.stdout, proposed.stderr
    [row] = json.loads(monitor("review", "reword", "list", "--json").stdout)
    assert row["claim_id"] == cid and row["wording"] == WORDING
    walked = monitor("review", stdin="k\n")  # nothing else to review: the proposal is shown; skip it
    assert "Proposed: " + WORDING in walked.stdout and "skipped 1" in walked.stdout, walked.stderr
    walked = monitor("review", stdin="a\n")
    assert f"accepted: {cid} -> " in walked.stdout and "wordings accepted 1" in walked.stdout, walked.stderr
    assert "Nothing needs review." in monitor("review").stdout
    bad = monitor("review", "reword", "accept", str(row["id"]))
    assert bad.returncode == 64 and "already accepted" in bad.stderr
    unknown = monitor("review", "reword", "reject", "99")
    assert unknown.returncode == 64 and "no proposed wording with id 99" in unknown.stderr


def test_propose_waits_for_the_run_lock_and_asks_nothing_meanwhile(tmp_path: Path, llm) -> None:
    from monitor.schedule.lock import RunLock

    url = f"sqlite:///{tmp_path / 'monitor.db'}"
    store = open_store(url)
    relaxed_world(store)
    env = dict(os.environ, MONITOR_DATABASE__URL=url, MONITOR_JUDGE__BASE_URL=llm.url, **TRUSTED_ENV)
    env.pop("MONITOR_CONFIG", None)
    command = [sys.executable, "-c", "from monitor.cli import main; main()", "review", "reword", "propose"]
    held = RunLock(store)  # a run is judging: proposing now would pay beside it
    held.acquire()
    try:
        busy = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    finally:
        held.release()
    assert busy.returncode == 75 and "run lock" in busy.stderr, busy.stderr
    assert llm.chat_requests() == []
    llm.push(reply())
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0 and len(llm.chat_requests()) == 1, done.stderr
    store.close()


def test_the_walk_asks_for_wordings_only_under_the_run_lock(tmp_path: Path, llm) -> None:
    """`monitor review` confirms a RELAXES, then asks the LLM for a wording: a paid call, so under the
    run lock like every command that calls an LLM (issue 33, item 2); a run holding it: asked later."""
    from monitor.schedule.lock import RunLock

    url = f"sqlite:///{tmp_path / 'monitor.db'}"
    store = open_store(url)
    w = World(store)
    w.line("l1", "Where does RL act?")
    cid = "c-000000000001"
    w.claim(cid, CLAIM, ("l1",), "2025-05", dt.date(2025, 5, 1), dt.date(2025, 5, 31), "month")
    w.paper("2603.00001", "Dense RL at scale", dt.date(2026, 3, 10), abstract=ABSTRACT)
    w.assess("2603.00001", cid, "RELAXES", 0.7, evidence=QUOTE)  # waits for a curator
    env = dict(os.environ, MONITOR_DATABASE__URL=url, MONITOR_JUDGE__BASE_URL=llm.url, **TRUSTED_ENV)
    env.pop("MONITOR_CONFIG", None)
    held = RunLock(store)  # a run is judging: proposing now would pay beside it
    held.acquire()
    try:
        walked = cli("review", environ=env, cwd=tmp_path, stdin="y\n")
    finally:
        held.release()
    assert walked.returncode == 0, walked.stderr
    assert "confirmed 1" in walked.stdout and "wordings not proposed now" in walked.stdout, walked.stdout
    assert "run lock" in walked.stdout and llm.chat_requests() == []
    llm.push(reply())
    proposed = cli("review", "reword", "propose", environ=env, cwd=tmp_path)
    assert proposed.returncode == 0 and len(llm.chat_requests()) == 1, proposed.stderr
    store.close()
