"""`monitor run` on the LLM path at its defaults, end to end: every paper screened against every claim,
the kept pairs judged, their labels read a second time before they count, verdicts and the digest. The
real client talks HTTP to the scriptable OpenAI-compatible server of tests/llm_server.py, on SQLite and
PostgreSQL, with a snapshot of the shipped sample's papers and the seeds' 35 claims."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import Reply, ScriptedLLM, asked_abstract, completion, error_body
from ops_helpers import make_settings, write_snapshot
from pydantic import SecretStr
from sqlalchemy import func, select

from monitor.errors import JudgeError
from monitor.schedule.pipeline import RunOptions, run_once
from monitor.store import open_store
from monitor.store.models import Assessment, Candidate, Claim, SecondLook
from monitor.store.records import Digest, LLMExchange
from monitor.verdicts.rollup import load_evidence

_PAPER = re.compile(r'<paper id="(P\d+)">(.*?)</paper>', re.S)
_CLAIM = re.compile(r'<claim id="(C\d+)">(.*?)</claim>', re.S)
WORD = "entropy"  # the screen keeps a paper for the claims that name this word, if its abstract does


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def responder(screen_up: bool = True) -> Any:
    """Screen: each paper whose abstract says WORD is kept for the claims that say it. Judge: SUPPORTS,
    direct, quoting the abstract's first sentence. Second look: the same label, indirect."""

    def respond(request: dict[str, Any]) -> Reply:
        schema = request["response_format"]["json_schema"]
        system, user = request["messages"][0]["content"], request["messages"][1]["content"]
        if schema["name"] == "screened_papers":
            if not screen_up:
                return Reply(503, error_body("overloaded"))
            claims = [c for c, text in _CLAIM.findall(system) if WORD in text.lower()]
            papers = [
                {"paper": p, "claims": claims if WORD in body.lower() else []}
                for p, body in _PAPER.findall(user)
            ]
            return Reply(body=completion(json.dumps({"papers": papers})))
        ids = schema["schema"]["properties"]["assessments"]["items"]["properties"]["claim_id"]["enum"]
        quote = asked_abstract(request).split(". ")[0]
        second = "second, closer reading" in system
        entries = [
            {
                "claim_id": cid,
                "evidence": quote,
                "rationale": "second reading" if second else "first reading",
                "label": "SUPPORTS",
                "strength": "indirect" if second else "direct",
                "confidence": 0.9,
            }
            for cid in ids
        ]
        return Reply(body=completion(json.dumps({"assessments": entries})))

    return respond


def llm_settings(tmp_path: Path, db_url: str, llm: ScriptedLLM) -> Any:
    settings = make_settings(tmp_path, db_url, judge={"provider": "auto"}, relevance={})
    settings.relevance = type(settings.relevance)()  # the defaults: the screen of every claim
    settings.llm.base_url, settings.llm.api_key = llm.url, SecretStr("sk-llm-path")
    settings.llm.max_retries, settings.llm.backoff_seconds, settings.llm.timeout_seconds = 1, 0.01, 5.0
    settings.report.research_questions = False
    return settings


def count(store: Any, what: Any, *where: Any) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(what).where(*where)) or 0)


def test_a_run_screens_every_pair_judges_what_it_keeps_and_reads_it_twice(
    tmp_path: Path, db_url: str, llm: ScriptedLLM
) -> None:
    snapshot = tmp_path / "snapshot.jsonl"
    papers = write_snapshot(snapshot, limit=30)
    llm.default = responder()
    store = open_store(db_url)
    settings = llm_settings(tmp_path, db_url, llm)
    outcome = run_once(store, settings, RunOptions(source=str(snapshot), email=False))
    assert outcome.status == "ok", outcome.counts

    claims = count(store, Claim)
    assert count(store, Candidate) == papers * claims  # no lexical cut: every pair reached the screen
    kept = count(store, Candidate, Candidate.screen == "kept")
    assert kept and count(store, Candidate, Candidate.screen == "dropped") == papers * claims - kept
    screen = outcome.counts["screen"]
    assert screen["kept"] == kept and screen["pending_left"] == 0
    assert outcome.counts["judge"]["judged"] == kept  # only what the screen kept was judged
    assert outcome.counts["second_look"]["agreed"] == kept  # and every SUPPORTS was read a second time
    with store.session() as s:
        rows = s.scalars(select(Assessment)).all()
        assert {(r.label, r.strength, r.second_look) for r in rows} == {("SUPPORTS", "direct", "agreed")}
        assert s.scalar(select(func.count()).select_from(SecondLook)) == kept
        providers = dict(
            s.execute(select(LLMExchange.provider, func.count()).group_by(LLMExchange.provider)).all()
        )
        digest = s.scalars(select(Digest)).one()
    # The screen's calls: one claim group (35 claims), four papers a call.
    assert providers["openai-screen"] == -(-papers // 4)
    # Every first reading waits for a second: a paper's share a call, as its first readings did.
    assert providers["openai"] < kept and providers["openai-second-look"] == providers["openai"]
    assert digest.stats["final"] and digest.stats["judging"]["screened_out"] > 0
    # What counts rests on the second reading: its strength (indirect) and its rationale.
    with store.session() as s:
        evidence = [i for items in load_evidence(s, settings).values() for i in items]
    assert len(evidence) == kept
    assert {(i.strength, i.rationale, i.second_look) for i in evidence} == {
        ("indirect", "second reading", "agreed")
    }

    calls = len(llm.chat_requests())
    again = run_once(store, settings, RunOptions(source=str(snapshot), email=False))
    assert again.status == "ok" and len(llm.chat_requests()) == calls  # nothing asked twice
    store.close()


def test_a_screen_that_answers_nothing_fails_the_run_and_a_rerun_finishes(
    tmp_path: Path, db_url: str, llm: ScriptedLLM
) -> None:
    snapshot = tmp_path / "snapshot.jsonl"
    papers = write_snapshot(snapshot, limit=8)
    llm.default = responder(screen_up=False)
    store = open_store(db_url)
    settings = llm_settings(tmp_path, db_url, llm)
    with pytest.raises(JudgeError, match="the LLM screen answered none"):
        run_once(store, settings, RunOptions(source=str(snapshot), email=False))
    claims = count(store, Claim)
    assert count(store, Candidate, Candidate.screen == "pending") == papers * claims
    assert count(store, Assessment) == 0 and count(store, Digest) == 0  # no digest on an unread week

    llm.default = responder()
    outcome = run_once(store, settings, RunOptions(source=str(snapshot), email=False))
    assert outcome.status == "ok" and count(store, Candidate, Candidate.screen == "pending") == 0
    store.close()
