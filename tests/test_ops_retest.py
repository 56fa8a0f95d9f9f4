"""`monitor retest`: after a claim edit and a prompt change, the verdicts that moved are reported and
the old assessments stay as history. The judge is the OpenAI client talking to a local scripted server
whose answer depends on the prompt it is sent."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from digest_world import TRUSTED_PRECISION
from llm_server import (
    Reply,
    ScriptedLLM,
    answer,
    asked_abstract,
    completion,
    error_body,
    research_questions,
)
from ops_helpers import REPO, make_settings, monitor, write_config, write_snapshot
from sqlalchemy import func, select

from monitor.schedule.pipeline import RunOptions, run_once
from monitor.store import open_store
from monitor.store.models import Assessment, Claim, Verdict
from monitor.store.records import Run

STRICT = "STRICT-REVIEW"  # the edited prompt carries this; the scripted model then overturns

CLAIMS = """\
lines:
  - question: How much of a language model does reinforcement learning fine-tuning change?
    claims:
      - text: Reinforcement learning fine-tuning of language models updates only a small subset of parameters
        date: 2024
      - text: Large language models reason better when trained with reinforcement learning
        date: 2024
"""


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    def respond(request: Any) -> Reply:
        if questions := research_questions(request):  # the digest asks these of the judge's model
            return Reply(body=completion(questions))
        system = next(m["content"] for m in request["messages"] if m["role"] == "system")
        label = "OVERTURNS" if STRICT in system else "SUPPORTS"
        # The abstract's last words: its opening often repeats the claim's, which is no evidence.
        quote = asked_abstract(request)[-60:]
        return Reply(body=completion(answer(request, label, quote, confidence=0.95)))

    with ScriptedLLM() as server:
        server.default = respond
        yield server


def _judge_options(llm: ScriptedLLM, prompts: Path | None = None) -> dict[str, Any]:
    options: dict[str, Any] = {
        "provider": "openai",
        "base_url": llm.url,
        "api_key": "sk-retest",
        "key_base_url": llm.url,  # the key is for this server (it goes to no other)
        "model": "scripted-model",
        "response_format": "json_schema",
        "max_retries": 1,
        "timeout_seconds": 10,
        "second_look": "none",  # the scripted model reads only the judge's prompt; retest is what is tested
    }
    if prompts is not None:
        options["prompts_dir"] = str(prompts)
    return options


def test_retest_reports_changed_verdicts_and_keeps_history(
    tmp_path: Path, db_url: str, llm: ScriptedLLM
) -> None:
    claims_dir = tmp_path / "claims"
    claims_dir.mkdir()
    claims_file = claims_dir / "mine.yaml"
    claims_file.write_text(CLAIMS, encoding="utf-8")
    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot, limit=30)
    paths = {"seeds": str(claims_dir)}
    store = open_store(db_url)
    # The scripted model is measured perfectly precise: one confident label moves a verdict.
    verdicts = {"precision": TRUSTED_PRECISION}
    settings = make_settings(tmp_path, db_url, judge=_judge_options(llm), paths=paths, verdicts=verdicts)
    first = run_once(store, settings, RunOptions(source=str(snapshot), email=False))
    assert first.status == "ok" and first.counts["judge"]["judged"] > 0
    with store.session() as s:
        old_ids = set(s.scalars(select(Claim.id).where(Claim.retired_at.is_(None))))
        judged_before = s.scalar(select(func.count()).select_from(Assessment))
    assert len(old_ids) == 2

    # The curator edits one claim and tightens the prompt.
    claims_file.write_text(CLAIMS.replace("updates only a small subset", "updates only a sparse subset"))
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    system = prompts / "judge_system.j2"
    system.write_text(system.read_text() + f"\n{STRICT}: be sceptical.\n")
    options = _judge_options(llm, prompts)
    config = write_config(tmp_path, db_url, judge=options, paths=paths, verdicts=verdicts)
    done = monitor(config, "retest", "--json", "--all")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)

    rows = {r["claim_id"]: r for r in result["rows"]}
    assert len(rows) == 2
    edited = next(r for r in rows.values() if r["previous_claim_id"])
    assert edited["previous_claim_id"] in old_ids and edited["claim_id"] not in old_ids
    assert "sparse subset" in edited["text"]
    # Every verdict moved (the stricter prompt overturns), and the report says so, before -> after.
    assert {r["claim_id"] for r in result["changed"]} == set(rows)
    for row in rows.values():
        assert row["before"] != row["after"]
        assert row["after"] in ("OVERTURNED", "PERISHABLE")

    with store.session() as s:
        total = s.scalar(select(func.count()).select_from(Assessment))
        current = s.scalars(
            select(Assessment).where(Assessment.is_current.is_(True), Assessment.claim_id.in_(list(rows)))
        ).all()
        old = s.scalars(select(Assessment).where(Assessment.is_current.is_(False))).all()
        retired = s.get(Claim, edited["previous_claim_id"])
    assert total > judged_before  # added, not overwritten
    assert all(a.label == "SUPPORTS" for a in old) and old
    assert current and {a.label for a in current} == {"OVERTURNS"}
    assert (
        retired is not None and retired.retired_at is not None and retired.replaced_by == edited["claim_id"]
    )

    # Nothing changed since: a second retest judges nothing and moves nothing.
    again = monitor(config, "retest", "--json")
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)
    assert second["judged"] == 0 and second["changed"] == []


def test_retest_with_an_unknown_claim_is_a_usage_error(tmp_path: Path, sqlite_url: str) -> None:
    config = write_config(tmp_path, sqlite_url)
    done = monitor(config, "retest", "--claim", "nope")
    assert done.returncode == 64
    assert "no active claim 'nope'" in done.stderr


def test_retest_after_a_hand_import_waits_for_a_judge_that_answers(
    tmp_path: Path, sqlite_url: str, llm: ScriptedLLM
) -> None:
    """No seeds directory: the claims were imported by hand. A judge that answers nothing fails the
    retest with 6 and moves no verdict; the rerun with a working judge finishes it."""
    claims = tmp_path / "mine.yaml"
    claims.write_text(CLAIMS, encoding="utf-8")
    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot, limit=30)
    paths = {"seeds": str(tmp_path / "no-seeds")}
    config = write_config(tmp_path, sqlite_url, judge=_judge_options(llm), paths=paths)
    for step in (("seeds", "import", str(claims)), ("fetch", "--source", str(snapshot))):
        done = monitor(config, *step)
        assert done.returncode == 0, done.stderr
    answers = llm.default
    llm.default = lambda _req: Reply(500, error_body("model overloaded"))
    failed = monitor(config, "retest", "--json")
    assert failed.returncode == 6, failed.stderr
    assert "answered none" in failed.stderr
    store = open_store(sqlite_url)
    with store.session() as s:
        [run] = s.scalars(select(Run).where(Run.command == "retest")).all()
        assert run.status == "failed" and "verdicts" not in run.counts
        assert s.scalar(select(func.count()).select_from(Verdict)) == 0
        assert s.scalar(select(func.count()).select_from(Assessment)) == 0

    llm.default = answers
    done = monitor(config, "retest", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["judged"] > 0 and {r["before"] for r in result["rows"]} == {"UNTESTED"}
    with store.session() as s:
        keys = s.execute(select(Assessment.cache_key, Assessment.generation)).all()
        assert len(keys) == len(set(keys)) == result["judged"]
        assert s.scalar(select(func.count()).select_from(Verdict)) > 0
