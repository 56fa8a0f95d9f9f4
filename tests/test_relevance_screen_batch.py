"""The LLM screen through the Batch API (relevance.screen_batch) against the scripted server's batch
endpoints: submit, nothing submitted twice, collect on a later run, failures stay pending, batch prices."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import pytest
from llm_server import Reply, ScriptedLLM, completion
from schema_fixtures import load_schema
from sqlalchemy import create_engine, select, text
from test_relevance import CALIBRATION, RELEVANT, SPARSITY, add_claim, add_papers
from test_relevance_screen import CALIBRATION_PAPER, SECRET, asked, keep_if, screen_settings, screen_states

from monitor.config import Settings
from monitor.judge.work import pending_units
from monitor.llm.batch import open_batches
from monitor.relevance import select_candidates
from monitor.relevance.screen import RECHECK_PAPER_SHARE, estimate_screen, load_screen_prompts
from monitor.store import SCHEMA_VERSION, open_store
from monitor.store.records import JudgeBatch, LLMExchange


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def batch_settings(llm: ScriptedLLM) -> Settings:
    settings = screen_settings(llm)
    settings.relevance.screen_batch = True
    return settings


class _Judge:
    name, model, prompt_version, claims_per_call = "local", "m", "v", 4


def judge_pairs(store) -> set[tuple[str, str]]:
    return {(u.paper.arxiv_id, p.claim.id) for u in pending_units(store, _Judge()) for p in u.pairs}  # type: ignore[arg-type]


def test_submit_wait_collect_on_a_later_run(store, llm: ScriptedLLM) -> None:
    sparsity = add_claim(store, SPARSITY)
    calibration = add_claim(store, CALIBRATION)
    relevant, calib_paper = add_papers(store, [RELEVANT, CALIBRATION_PAPER])
    llm.default = keep_if(
        lambda claim, abstract: (
            (claim == SPARSITY and "subnetwork" in abstract) or (claim == CALIBRATION and "Brier" in abstract)
        )
    )
    settings = batch_settings(llm)

    first = select_candidates(store, settings).screen
    assert first is not None and (first["batches_submitted"], first["batches_waiting"]) == (1, 1)
    assert first["pending_left"] == 4 and llm.chat_requests() == []  # nothing asked live
    uploaded = [json.loads(line) for line in llm.batches.files["file-1"].decode().splitlines()]
    # Two papers and two claims: one call (the claims as its prefix, both papers after them).
    assert len(uploaded) == 1 and {u["url"] for u in uploaded} == {"/v1/chat/completions"}
    assert uploaded[0]["body"]["response_format"]["json_schema"]["name"] == "screened_papers"
    assert judge_pairs(store) == set()  # pending pairs are not the judge's yet
    with store.session() as s:
        row = s.scalars(select(JudgeBatch)).one()
    assert (row.stage, row.prompt_version, row.pairs) == ("screen", load_screen_prompts().version, 4)
    assert open_batches(store, "judge") == []  # `monitor judge --batch` leaves it alone

    # A rerun before the batch finishes submits nothing again.
    waiting = select_candidates(store, settings).screen
    assert waiting is not None and (waiting["batches_submitted"], waiting["batches_waiting"]) == (0, 1)
    assert len(llm.batches.batches) == 1

    llm.batches.ready = True
    done = select_candidates(store, settings).screen
    assert done is not None and (done["batches_collected"], done["kept"], done["dropped"]) == (1, 2, 0)
    assert (done["pending_left"], done["papers"], done["calls"]) == (2, 2, 1)
    states = screen_states(store)
    assert states[(relevant, sparsity)] == "kept" and states[(calib_paper, calibration)] == "kept"
    # Each paper was kept for one claim: its other pair waits for the second reading, whose batch the
    # same run submits (a stage of its own).
    assert states[(relevant, calibration)] == states[(calib_paper, sparsity)] == "recheck"
    assert judge_pairs(store) == {(relevant, sparsity), (calib_paper, calibration)}
    assert done["batches_submitted"] == 1 and [b.stage for b in open_batches(store, "recheck")] == ["recheck"]
    rechecked = select_candidates(store, settings).screen
    assert rechecked is not None and (rechecked["rechecked"], rechecked["recovered"]) == (2, 0)
    assert (rechecked["dropped"], rechecked["pending_left"], rechecked["batches_submitted"]) == (2, 0, 0)
    assert screen_states(store)[(relevant, calibration)] == "dropped"
    with store.session() as s:
        exchanges = list(s.scalars(select(LLMExchange).order_by(LLMExchange.id)))
        assert {b.status for b in s.scalars(select(JudgeBatch))} == {"collected"}
    assert [(e.provider, e.response_format) for e in exchanges] == [
        ("openai-screen", "batch"),
        ("openai-screen-recheck", "batch"),
    ]
    assert [e.prompt_version for e in exchanges] == [
        load_screen_prompts().version,
        load_screen_prompts(again=True).version,
    ]
    assert all(SECRET not in json.dumps(e.request) for e in exchanges)
    assert llm.chat_requests() == []

    after = select_candidates(store, settings).screen
    assert after is not None and (after["batches_submitted"], after["batches_collected"]) == (0, 0)


def test_failed_answers_stay_pending_and_go_into_the_next_batch(store, llm: ScriptedLLM) -> None:
    sparsity = add_claim(store, SPARSITY)
    relevant, calib_paper = add_papers(store, [RELEVANT, CALIBRATION_PAPER])

    def half_bad(request: Any) -> Reply:
        claims, papers = asked(request)
        if any("Brier" in abstract for abstract in papers.values()):
            return Reply(body=completion(json.dumps({"papers": [{"paper": "P1", "claims": ["C9"]}]})))
        return Reply(body=completion(json.dumps({"papers": [{"paper": "P1", "claims": list(claims)}]})))

    llm.default, llm.batches.ready = half_bad, True
    settings = batch_settings(llm)
    settings.relevance.screen_papers_per_call = 1
    select_candidates(store, settings)  # submits
    collected = select_candidates(store, settings).screen  # collects one good, one invalid; resubmits it
    assert collected is not None and (collected["kept"], collected["failed_papers"]) == (1, 1)
    assert "invalid answer" in collected["errors"][0] and collected["batches_submitted"] == 1
    assert screen_states(store)[(calib_paper, sparsity)] == "pending"
    resubmitted = [json.loads(line) for line in llm.batches.files["file-3"].decode().splitlines()]
    assert len(resubmitted) == 1 and "Brier" in resubmitted[0]["body"]["messages"][1]["content"]

    llm.default = keep_if(lambda claim, abstract: False)
    last = select_candidates(store, settings).screen
    assert last is not None and (last["dropped"], last["pending_left"]) == (1, 0)
    assert screen_states(store)[(relevant, sparsity)] == "kept"


def test_an_expired_batch_leaves_its_pairs_pending(store, llm: ScriptedLLM) -> None:
    sparsity = add_claim(store, SPARSITY)
    (paper,) = add_papers(store, [RELEVANT])
    llm.batches.ready, llm.batches.final_status = True, "expired"
    settings = batch_settings(llm)
    select_candidates(store, settings)
    expired = select_candidates(store, settings).screen
    assert expired is not None and expired["failed_papers"] == 1 and "expired" in expired["errors"][0]
    assert screen_states(store)[(paper, sparsity)] == "pending"
    llm.batches.final_status, llm.default = "completed", keep_if(lambda claim, abstract: True)
    assert select_candidates(store, settings).screen["kept"] == 1  # type: ignore[index]


def test_dry_run_prices_the_screen_at_batch_rates(store, llm: ScriptedLLM) -> None:
    add_claim(store, SPARSITY)
    add_papers(store, [RELEVANT, CALIBRATION_PAPER])
    live = screen_settings(llm)
    select_candidates(store, live, screen=False)  # the first cut only: pairs pending, nothing called
    batch = batch_settings(llm)
    for settings in (live, batch):  # a dollar a token, so the rounded estimates compare exactly
        settings.llm.price_input_per_million = settings.llm.price_output_per_million = 1e6
    at_live, at_batch = estimate_screen(store, live), estimate_screen(store, batch)
    assert at_live["calls"] == at_batch["calls"] == 1 and llm.requests == []
    tokens = int(at_live["prompt_tokens"]) + int(at_live["completion_tokens"])  # type: ignore[call-overload]
    # Second readings of the papers a first reading will keep: their measured share of its cost.
    with_again = tokens * (1 + RECHECK_PAPER_SHARE)
    assert at_live["cost_estimate"] == pytest.approx(with_again)
    assert at_batch["cost_estimate"] == pytest.approx(with_again / 2)
    assert at_live["recheck"] == pytest.approx(
        {"waiting_pairs": 0, "calls": 0, "cost_estimate": tokens * RECHECK_PAPER_SHARE}, abs=1e-4
    )
    live.relevance.screen_recheck = False
    first_only = estimate_screen(store, live)
    assert first_only["cost_estimate"] == tokens and "recheck" not in first_only


def test_the_dry_run_prices_first_readings_of_what_the_screen_keeps_at_batch_rates_and_second_looks_live(
    store, llm: ScriptedLLM
) -> None:
    """Under batch (`--batch` or `llm.batch`) the judge's first readings of the pairs the screen is
    expected to keep cost half, and so do their second looks, which go by batch too; with
    `judge.second_look_batch` off they cost what they cost live (judge/batch.py asks them live)."""
    from monitor.schedule.judging import JudgeRequest, judge_once
    from monitor.schedule.signals import StopFlag

    add_claim(store, SPARSITY)
    add_claim(store, CALIBRATION)
    # 100 pairs: the shipped share (with the second reading, 1.74%) keeps two
    add_papers(store, [RELEVANT, CALIBRATION_PAPER] * 25)
    settings = screen_settings(llm)
    select_candidates(store, settings, screen=False)  # the first cut only: pairs pending, nothing called
    settings.llm.price_input_per_million = settings.llm.price_output_per_million = 1e6  # a dollar a token
    settings.llm.price_cached_input_per_million = 1e6

    def after_screen(batch: bool, configured: bool = False) -> dict[str, Any]:
        shown: dict[str, Any] = {}
        request = JudgeRequest(dry_run=True, batch=batch, relevance=False, alternatives=False)
        priced = settings.model_copy(update={"llm": settings.llm.model_copy(update={"batch": configured})})
        judge_once(store, priced, request, StopFlag(), shown.__setitem__)
        return shown["screen estimate"]["after_screen"]

    live, batch = after_screen(False), after_screen(True)
    assert after_screen(False, configured=True) == batch  # llm.batch prices as --batch does
    assert (live["pairs"], live["second_looks"], live["batch"], batch["batch"]) == (2, 1, False, True)
    assert (live["second_look_batch"], batch["second_look_batch"]) == (False, True)
    assert batch["judge_cost"] == pytest.approx(live["judge_cost"] / 2)
    assert batch["second_look_cost"] == pytest.approx(live["second_look_cost"] / 2) and batch["cost"] > 0
    assert batch["cost"] == pytest.approx(live["cost"] / 2)
    settings.judge.second_look_batch = False
    asked_live = after_screen(True)
    assert asked_live["second_look_batch"] is False and asked_live["judge_cost"] == batch["judge_cost"]
    assert asked_live["second_look_cost"] == live["second_look_cost"] > 0
    assert live["cost"] / 2 < asked_live["cost"] < live["cost"]  # only the first readings cost half
    settings.relevance.screen_recheck = False  # the first reading's shipped share alone (1.06%): one
    assert after_screen(False)["pairs"] == 1
    assert llm.requests == []


def test_a_screen_batch_of_a_v8_store_is_a_screen_batch_after_the_upgrade(db_url: str) -> None:
    load_schema(db_url, 8)  # the last version whose screen batches carried a "screen:" prefix
    engine = create_engine(db_url)
    with engine.begin() as conn:
        for batch_id, version in (("batch-s", "screen:abc123"), ("batch-j", "def456")):
            conn.execute(
                text(
                    "INSERT INTO judge_batches (batch_id, input_file_id, status, model, prompt_version, "
                    "requests, pairs, submitted_at) VALUES (:b, 'file-1', 'running', 'm', :v, '{}', 1, :t)"
                ),
                {"b": batch_id, "v": version, "t": dt.datetime(2026, 3, 2)},
            )
    engine.dispose()
    store = open_store(db_url)  # migrates
    try:
        screen, judge = open_batches(store, "screen"), open_batches(store, "judge")
        with store.engine.connect() as conn:
            version = conn.execute(text("SELECT version FROM schema_version")).scalar()
    finally:
        store.close()
    assert [(b.batch_id, b.stage, b.prompt_version) for b in screen] == [("batch-s", "screen", "abc123")]
    assert [(b.batch_id, b.stage, b.prompt_version) for b in judge] == [("batch-j", "judge", "def456")]
    assert version == SCHEMA_VERSION
