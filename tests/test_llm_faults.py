"""LLM-side faults end to end: a server that keeps failing, replies cut off, an oversized abstract.

The judge is the OpenAI client talking to tests/llm_server.py, a real local HTTP server that scripts
the faults; `monitor run` runs as a real process where the exit code is the point.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from llm_server import Reply, ScriptedLLM, answer, answering, completion, error_body
from ops_helpers import make_settings, monitor, write_config, write_snapshot
from pydantic import SecretStr
from sqlalchemy import func, select

from monitor.config import Settings
from monitor.judge.openai_judge import OpenAIJudge
from monitor.judge.runner import judge_pending
from monitor.llm.answers import AnswerRejected
from monitor.llm.cost import estimate_tokens
from monitor.llm.texts import MAX_ABSTRACT_CHARS, ClaimText, Exchange, PaperText
from monitor.store import open_store
from monitor.store.models import Assessment, Candidate, Claim, Paper, PaperVersion
from monitor.store.records import Run
from monitor.store.runs import recorded_run

CLAIMS = [ClaimText("c1", "RL updates only 5-30% of parameters")]
PAPER = PaperText("2501.00001", 1, "Sparse updates", "RL fine-tuning updates a small share of parameters.")


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.default = answering("SUPPORTS")
        yield server


def judge_options(llm: ScriptedLLM, **extra: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": llm.url,
        "api_key": "sk-faults",
        "key_base_url": llm.url,  # the key is for this server (it goes to no other)
        "model": "scripted-model",
        "timeout_seconds": 10,
        # These faults are the judge's; the second look's have their own tests (test_second_look.py).
        "second_look": "none",
        **extra,
    }


class ListRecorder:
    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []

    def __call__(self, exchange: Exchange) -> int:
        self.exchanges.append(exchange)
        return len(self.exchanges)


def direct_judge(llm: ScriptedLLM, **extra: Any) -> OpenAIJudge:
    options = judge_options(llm, **{"backoff_seconds": 0.01, "max_retries": 2, **extra})
    options.pop("provider")
    options["api_key"] = SecretStr(options["api_key"])
    return OpenAIJudge(Settings(judge=options))


# --- a server that keeps failing: the failure breaker ---------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [Reply(500, error_body("internal error")), Reply(429, error_body("rate limited", "rate_limit_error"))],
    ids=["http-500", "http-429-without-retry-after"],
)
def test_a_server_that_keeps_failing_stops_the_run_within_the_window(tmp_path, llm, failure) -> None:
    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot, limit=30)
    llm.default = lambda _req: failure
    # The defaults that made a run spend an hour: every form probed, four retries, four workers.
    options = judge_options(llm, backoff_seconds=0.2, server_failure_seconds=2)
    config = write_config(
        tmp_path, f"sqlite:///{tmp_path / 'monitor.db'}", judge=options, relevance={"screen": "llm"}
    )
    started = time.monotonic()
    done = monitor(config, "run", "--source", str(snapshot), "--no-email")
    # The screen of every claim is the run's first LLM call: it meets the failing server first.
    took = time.monotonic() - started
    assert done.returncode == 6, done.stderr
    assert "failed" in done.stderr and "requests in a row" in done.stderr
    assert "cannot reach" not in done.stderr  # the server answered: it is failing, not unreachable
    sent = len(llm.chat_requests())
    assert 3 <= sent <= 40  # a window of 2 s, not 8 requests for each of dozens of pairs
    assert took < 60
    store = open_store(f"sqlite:///{tmp_path / 'monitor.db'}")
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(Assessment)) == 0
        assert s.scalars(select(Run.status)).one() == "failed"
    # The server is back: the rerun screens and judges every pending pair.
    llm.default = screening_then(answering("SUPPORTS"))
    again = monitor(config, "run", "--source", str(snapshot), "--no-email")
    assert again.returncode == 0, again.stderr
    with store.session() as s:
        kept = s.scalar(select(func.count()).select_from(Candidate).where(Candidate.screen == "kept"))
        assert s.scalar(select(func.count()).select_from(Candidate).where(Candidate.screen == "pending")) == 0
        assert s.scalar(select(func.count()).select_from(Assessment)) == kept > 0
    store.close()


def screening_then(judging: Any) -> Any:
    """A responder keeping every claim of every paper at the LLM screen, and answering the rest with
    `judging`."""

    def respond(request: Any) -> Reply:
        if request["response_format"]["json_schema"]["name"] != "screened_papers":
            return judging(request)
        user = request["messages"][1]["content"]
        claims = re.findall(r'<claim id="(C\d+)">', request["messages"][0]["content"])
        papers = [{"paper": p, "claims": claims} for p in re.findall(r'<paper id="(P\d+)">', user)]
        return Reply(body=completion(json.dumps({"papers": papers})))

    return respond


def test_a_500_is_an_unsupported_form_only_when_it_names_the_form(llm: ScriptedLLM) -> None:
    llm.push(Reply(500, error_body("worker crashed")))  # a failure: retried in the same form
    llm.default = lambda req: Reply(body=completion(answer(req)))
    judge = direct_judge(llm)
    judge.judge(PAPER, CLAIMS, ListRecorder())
    formats = [r.body.get("response_format", {}).get("type") for r in llm.chat_requests()]
    assert formats == ["json_schema", "json_schema"]
    assert judge.mode == "json_schema"


def test_an_answer_in_between_resets_the_failure_streak(llm: ScriptedLLM) -> None:
    llm.default = lambda req: Reply(body=completion(answer(req)))
    judge = direct_judge(llm, response_format="json_schema", server_failure_seconds=0.3, max_retries=1)
    for _ in range(4):  # a failure, then an answer, well past the window: never a streak
        llm.push(Reply(503, error_body("overloaded")))
        judge.judge(PAPER, CLAIMS, ListRecorder())
        time.sleep(0.15)
    assert len(llm.chat_requests()) == 8


# --- replies cut off -------------------------------------------------------------------------------


def test_a_reply_cut_at_the_token_limit_is_a_truncated_answer(llm: ScriptedLLM) -> None:
    llm.default = lambda req: Reply(body=completion(answer(req)[:30], finish_reason="length"))
    judge, rec = direct_judge(llm, response_format="json_schema"), ListRecorder()
    with pytest.raises(AnswerRejected, match="truncated answer") as err:
        judge.judge(PAPER, CLAIMS, rec)
    assert "max_output_tokens" in str(err.value) and "cannot reach" not in str(err.value)
    assert len(llm.chat_requests()) == 1  # a corrective turn would be cut off at the same limit
    assert (rec.exchanges[0].error or "").startswith("truncated answer")


@pytest.mark.parametrize("how", ["connection-closed-mid-body", "json-ends-early"])
def test_a_reply_body_cut_mid_json_is_a_truncated_answer(llm: ScriptedLLM, how: str) -> None:
    def cut(req: Any) -> Reply:
        body = json.dumps(completion(answer(req)))
        if how == "json-ends-early":
            return Reply(body=body[: len(body) // 2])
        return Reply(body=body, cut_at=len(body) // 2)

    llm.default = cut
    judge = direct_judge(llm, response_format="json_schema")
    for _ in range(4):  # more than the unreachable breaker's calls in a row
        with pytest.raises(AnswerRejected, match="truncated answer") as err:
            judge.judge(PAPER, CLAIMS, ListRecorder())
        assert "cannot reach" not in str(err.value)
        assert getattr(err.value, "pair_fault", False)  # an answer failure: it counts toward parking
    assert len(llm.chat_requests()) == 4  # an answer, not a lost connection: not retried


# --- an oversized abstract -------------------------------------------------------------------------


def _store_one_pair(store, abstract: str) -> None:
    with store.session() as s:
        s.add(Claim(id="c1", text="RL updates only 5-30% of parameters", kind="user"))
        s.add(Paper(arxiv_id="2501.00009", title="A long abstract", abstract=abstract, source="file"))
        s.flush()  # parents first: the rows below reference them
        s.add(
            PaperVersion(
                arxiv_id="2501.00009", version=1, title="A long abstract", abstract=abstract, source="file"
            )
        )
        s.add(Candidate(arxiv_id="2501.00009", version=1, claim_id="c1", score=1.0, method="test"))


def test_a_huge_abstract_is_capped_and_the_budget_counts_the_local_estimate(
    tmp_path, sqlite_url, llm
) -> None:
    huge = "We measure parameter updates during fine-tuning. " + "x" * 1_000_000
    store = open_store(sqlite_url)
    _store_one_pair(store, huge)

    def no_usage(req: Any) -> Reply:  # a server that reports no token usage at all
        body = completion(answer(req, evidence="We measure parameter updates during fine-tuning."))
        del body["usage"]
        return Reply(body=body)

    llm.default = no_usage
    settings = make_settings(
        tmp_path, sqlite_url, judge=judge_options(llm, response_format="json_schema", token_budget=20_000)
    )
    with recorded_run(store, "judge") as run:
        summary = judge_pending(store, settings, run_id=run.id)
        run.record(summary)
    assert summary.judged == 1 and not summary.budget_exhausted
    (request,) = llm.chat_requests()
    user = request.body["messages"][1]["content"]
    assert len(json.dumps(request.body)) < 20_000  # not the megabyte
    assert "[abstract truncated" in user and len(user) < MAX_ABSTRACT_CHARS + 3000
    # The server said nothing about tokens; the budget counted the local estimate of what was sent.
    sent = sum(estimate_tokens(m["content"]) for m in request.body["messages"])
    assert sent <= run.tokens <= sent + 500
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(Assessment)) == 1
    store.close()
