"""`monitor judge --batch`: submit, poll and collect via the Batch API endpoints of the scripted server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from llm_server import Reply, ScriptedLLM, answer, answering, completion
from sqlalchemy import select
from test_judge_runner import assessments, seed, settings_for, wordings_kept

from monitor.judge.batch import run_batch
from monitor.judge.factory import make_judge
from monitor.store.db import Store
from monitor.store.records import JudgeBatch, LLMExchange
from monitor.store.runs import recorded_run


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def test_submit_poll_collect(store: Store, llm: ScriptedLLM) -> None:
    seed(store, papers=2, claims=2)
    llm.default = answering("RELAXES")
    settings = settings_for(llm)
    judge = make_judge(settings)
    first = run_batch(store, settings, judge)
    assert (first.batches_submitted, first.batches_waiting, first.pending) == (1, 1, 4)
    assert assessments(store) == [] and llm.chat_requests() == []
    uploaded = [json.loads(line) for line in llm.batches.files["file-1"].decode().splitlines()]
    assert len(uploaded) == 2 and {u["url"] for u in uploaded} == {"/v1/chat/completions"}
    assert uploaded[0]["body"]["response_format"]["type"] == "json_schema"

    waiting = run_batch(store, settings, judge)  # not finished yet: nothing collected, nothing resubmitted
    assert (waiting.batches_submitted, waiting.batches_waiting, waiting.judged) == (0, 1, 0)
    assert len(llm.batches.batches) == 1

    llm.batches.ready = True
    with recorded_run(store, "judge") as run:
        done = run_batch(store, settings, judge, run_id=run.id)
        run.record(done)
    assert (done.batches_collected, done.judged, done.labels["RELAXES"], done.errors) == (1, 4, 4, 0)
    assert done.calls == 2 and done.prompt_tokens == 200
    assert done.cost_estimate == pytest.approx((200 * 0.15 + 40 * 0.60) / 1e6 / 2)
    rows = assessments(store)
    assert len(rows) == 4 and all(r.exchange_id and r.grounded and r.run_id == run.id for r in rows)
    assert wordings_kept(store)  # the claim's hash came back with the batch's units
    with store.session() as s:
        assert {e.response_format for e in s.scalars(select(LLMExchange))} == {"batch"}
        assert s.scalars(select(JudgeBatch)).one().status == "collected"
    after = run_batch(store, settings, judge)
    assert (after.pending, after.batches_submitted) == (0, 0)


def half_bad(request: Any) -> Reply:
    """A label outside the schema for paper 2501.00001, a right answer for the others."""
    if "2501.00001" in request["messages"][1]["content"]:
        return Reply(body=completion('{"assessments": [{"claim_id": "c0", "label": "PERHAPS"}]}'))
    return Reply(body=completion(answer(request)))


def test_invalid_lines_stay_pending_and_are_resubmitted(store: Store, llm: ScriptedLLM) -> None:
    seed(store, papers=2, claims=1)

    llm.default = half_bad
    llm.batches.ready = True
    settings = settings_for(llm, batch_poll_seconds=0.01)
    judge = make_judge(settings)
    summary = run_batch(store, settings, judge, wait=True)
    assert (summary.judged, summary.errors, summary.batches_collected) == (1, 1, 1)
    assert "invalid answer" in summary.error_messages[0]
    llm.default = answering()
    again = run_batch(store, settings, judge, wait=True)
    assert (again.pending, again.judged) == (1, 1)
    assert len(assessments(store)) == 2


def test_expired_batch_leaves_pairs_pending(store: Store, llm: ScriptedLLM) -> None:
    seed(store, papers=1, claims=2)
    llm.batches.ready, llm.batches.final_status = True, "expired"
    settings = settings_for(llm, batch_poll_seconds=0.01)
    summary = run_batch(store, settings, make_judge(settings), wait=True)
    assert (summary.judged, summary.errors) == (0, 2) and "expired" in summary.error_messages[0]
    llm.batches.final_status = "completed"
    llm.default = answering()
    assert run_batch(store, settings, make_judge(settings), wait=True).judged == 2


def test_a_pair_whose_batch_answers_keep_failing_is_parked_as_a_live_one_would_be(
    store: Store, llm: ScriptedLLM
) -> None:
    """An invalid batch answer counts towards parking its pairs (`judge.park_after_failures`, the live
    runs' rule): after that many, the pair is parked, said so, and submitted no more."""
    seed(store, papers=2, claims=1)

    llm.default = half_bad
    llm.batches.ready = True
    settings = settings_for(llm, batch_poll_seconds=0.01, park_after_failures=2)
    judge = make_judge(settings)
    first = run_batch(store, settings, judge, wait=True)
    assert (first.judged, first.errors, first.newly_parked) == (1, 1, 0) and first.warnings == []
    second = run_batch(store, settings, judge, wait=True)  # the failed pair, submitted again
    assert (second.pending, second.errors, second.newly_parked) == (1, 1, 1)
    assert "1 pair(s) parked after failing 2 run(s)" in second.warnings[0]
    third = run_batch(store, settings, judge, wait=True)
    assert (third.pending, third.parked, third.batches_submitted) == (0, 1, 0)
    assert len(llm.batches.batches) == 2 and len(assessments(store)) == 1
