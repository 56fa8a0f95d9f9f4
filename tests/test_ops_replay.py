"""`monitor replay`: one digest per period, verdicts as of each period's end, resumable after a kill."""

from __future__ import annotations

import datetime as dt
import json
import signal
from pathlib import Path

import pytest
from ops_helpers import make_settings, monitor, start_paused, write_config, write_snapshot
from sqlalchemy import func, select

from monitor.schedule.replay import replay, replay_periods
from monitor.store import open_store
from monitor.store.models import Assessment, Paper, Verdict
from monitor.store.records import Digest, Run

FROM, TO = "2025-03-03", "2025-03-16"  # two ISO weeks: 2025-W10 and 2025-W11
HAND_CLAIMS = """\
lines:
  - question: How much of a language model does reinforcement learning fine-tuning change?
    claims:
      - text: Reinforcement learning fine-tuning of language models updates only a small subset of parameters
        date: 2024
"""


def test_periods_are_whole_weeks_or_months() -> None:
    weeks = replay_periods(dt.date(2025, 3, 5), dt.date(2025, 3, 17), "week")
    assert [p.key for p in weeks] == ["2025-W10", "2025-W11", "2025-W12"]
    assert weeks[0].start == dt.date(2025, 3, 3) and weeks[-1].end == dt.date(2025, 3, 23)
    months = replay_periods(dt.date(2024, 11, 20), dt.date(2025, 2, 1), "month")
    assert [p.key for p in months] == ["2024-11", "2024-12", "2025-01", "2025-02"]


def _papers_by_week(snapshot: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in snapshot.read_text().splitlines():
        day = dt.date.fromisoformat(json.loads(line)["published"][:10])
        year, week, _ = day.isocalendar()
        key = f"{year}-W{week:02d}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_replay_writes_a_digest_per_week_with_verdicts_as_they_were(tmp_path: Path, db_url: str) -> None:
    snapshot = tmp_path / "snapshot.jsonl"
    total = write_snapshot(snapshot, limit=1000)
    store = open_store(db_url)
    settings = make_settings(tmp_path, db_url)
    summary = replay(
        store, settings, str(snapshot), dt.date.fromisoformat(FROM), dt.date.fromisoformat(TO), "week"
    )
    by_week = _papers_by_week(snapshot)
    assert [p.key for p in summary.periods] == ["2025-W10", "2025-W11"]
    assert [p.papers_new for p in summary.periods] == [by_week["2025-W10"], by_week["2025-W11"]]
    assert summary.papers == total and summary.digests_written == 2 and summary.pairs_judged > 0
    for period in summary.periods:
        assert period.digest and Path(period.digest).exists()
    with store.session() as s:
        digests = s.execute(select(Digest.period_key, Digest.period_end)).all()
        as_of = set(s.scalars(select(Verdict.as_of)))
    assert sorted(digests) == [("2025-W10", dt.date(2025, 3, 9)), ("2025-W11", dt.date(2025, 3, 16))]
    assert dt.date(2025, 3, 9) in as_of  # the first week's verdicts are dated as of its Sunday
    assert as_of <= {dt.date(2025, 3, 9), dt.date(2025, 3, 16)}

    again = replay(store, settings, str(snapshot), dt.date.fromisoformat(FROM), dt.date.fromisoformat(TO))
    assert all(p.skipped for p in again.periods) and again.pairs_judged == 0


def test_replay_loads_each_weeks_evidence_once_to_settle_and_once_to_read(
    tmp_path: Path, sqlite_url: str, monkeypatch
) -> None:
    """Per week, the verdicts step settles the verdicts' and the digest's outcomes on one load of the
    evidence; the outcomes step records that without loading it again, and the digest reads (one load to
    check the stored outcomes are current). Nothing else settles."""
    from digest_world import count_calls

    from monitor.report import gather
    from monitor.verdicts import rollup

    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot)
    store = open_store(sqlite_url)
    settings = make_settings(tmp_path, sqlite_url)
    settles = count_calls(monkeypatch, gather, "settle_outcomes")
    loads = count_calls(monkeypatch, rollup, "load_evidence")
    summary = replay(store, settings, str(snapshot), dt.date.fromisoformat(FROM), dt.date.fromisoformat(TO))
    assert summary.digests_written == 2
    assert settles == [] and len(loads) == 2 * 2
    with store.session() as s:
        counts = s.scalars(select(Run.counts).where(Run.command == "replay")).one()
    # The last week's outcomes, as the verdicts step settled them: its Sunday and the Sunday before.
    assert counts["outcomes"]["as_of"] == ["2025-03-09", "2025-03-16"] and counts["outcomes"]["claims"] > 0


def test_killed_replay_resumes_where_it_stopped(tmp_path: Path, sqlite_url: str) -> None:
    db_url = sqlite_url
    snapshot = tmp_path / "snapshot.jsonl"
    total = write_snapshot(snapshot, limit=1000)
    config = write_config(tmp_path, db_url)
    args = ("replay", "--source", str(snapshot), "--from", FROM, "--to", TO, "--every", "week")
    victim = start_paused(config, "replay:2025-W11:before_digest", tmp_path / "pause.txt", *args)
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    store = open_store(db_url)
    with store.session() as s:
        assert s.scalars(select(Digest.period_key)).all() == ["2025-W10"]
    done = monitor(config, *args, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [(p["key"], p["skipped"]) for p in result["period_results"]] == [
        ("2025-W10", True),
        ("2025-W11", False),
    ]
    assert result["digests_written"] == 1
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(Paper)) == total
        keys = s.execute(select(Assessment.cache_key, Assessment.generation)).all()
        assert keys and len(keys) == len(set(keys))
        assert sorted(s.scalars(select(Digest.period_key))) == ["2025-W10", "2025-W11"]
        assert [r.status for r in s.scalars(select(Run).order_by(Run.id))] == ["abandoned", "ok"]


def test_replay_of_the_shipped_sample_on_a_fresh_machine(tmp_path: Path, sqlite_url: str) -> None:
    config = write_config(tmp_path, sqlite_url)
    done = monitor(
        config,
        "replay",
        "--source",
        "sample",
        "--from",
        "2024-03-01",
        "--to",
        "2024-04-30",
        "--every",
        "month",
    )
    assert done.returncode == 0, done.stderr
    assert "2024-03:" in done.stdout and "2024-04:" in done.stdout
    assert sorted(p.name for p in (tmp_path / "reports").glob("*.md")) == [
        "digest-2024-03.md",
        "digest-2024-04.md",
    ]


def test_replay_out_of_budget_writes_no_digest_and_the_rerun_resumes_there(
    tmp_path: Path, sqlite_url: str
) -> None:
    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot, limit=1000)
    args = ("replay", "--source", str(snapshot), "--from", FROM, "--to", TO, "--every", "week")
    tight = write_config(tmp_path, sqlite_url, judge={"provider": "local", "token_budget": 1})
    spent = monitor(tight, *args)
    assert spent.returncode == 7, spent.stderr
    assert "token budget 1 reached" in spent.stderr and "monitor replay" in spent.stderr
    store = open_store(sqlite_url)
    with store.session() as s:
        assert s.scalars(select(Digest.period_key)).all() == []  # the first week waits for its judging
        [run] = s.scalars(select(Run)).all()
        assert run.status == "partial" and "verdicts" not in run.counts

    roomy = write_config(tmp_path, sqlite_url)
    done = monitor(roomy, *args, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [(p["key"], p["skipped"]) for p in result["period_results"]] == [
        ("2025-W10", False),
        ("2025-W11", False),
    ]
    assert result["digests_written"] == 2 and result["pairs_judged"] > 0
    with store.session() as s:
        assert sorted(s.scalars(select(Digest.period_key))) == ["2025-W10", "2025-W11"]
        keys = s.execute(select(Assessment.cache_key, Assessment.generation)).all()
        assert keys and len(keys) == len(set(keys))
    assert sorted(p.name for p in (tmp_path / "reports").glob("*.md")) == [
        "digest-2025-W10.md",
        "digest-2025-W11.md",
    ]


def test_replay_after_claims_were_imported_by_hand(tmp_path: Path, sqlite_url: str) -> None:
    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot, limit=200)
    claims = tmp_path / "mine.yaml"
    claims.write_text(HAND_CLAIMS, encoding="utf-8")
    # No seeds directory and no claims file configured: the claims come from `seeds import FILE`.
    config = write_config(tmp_path, sqlite_url, paths={"seeds": str(tmp_path / "no-seeds")})
    imported = monitor(config, "seeds", "import", str(claims))
    assert imported.returncode == 0, imported.stderr
    args = ("replay", "--source", str(snapshot), "--from", FROM, "--to", TO, "--json")
    done = monitor(config, *args)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["digests_written"] == 2
    store = open_store(sqlite_url)
    with store.session() as s:
        assert sorted(s.scalars(select(Digest.period_key))) == ["2025-W10", "2025-W11"]
        [run] = s.scalars(select(Run).where(Run.command == "replay")).all()
        assert run.status == "ok" and any("claims already stored" in w for w in run.warnings)


def test_the_judge_step_keeps_to_what_the_run_has_left_of_its_budget(sqlite_url: str) -> None:
    """Replay judges once per period; the budget is the replay's, so a later period gets what is left."""
    from llm_server import ScriptedLLM, answering
    from test_judge_runner import seed, settings_for

    from monitor.errors import BudgetExhausted
    from monitor.judge.factory import make_judge
    from monitor.llm.engine import TokenBudget
    from monitor.schedule.flow import Flow, Steps, make_job
    from monitor.schedule.signals import StopFlag
    from monitor.store.runs import recorded_run

    store = open_store(sqlite_url)
    seed(store, papers=2, claims=1)

    def judge_stage(settings, spent: int):
        """The flow's judge stage in a replay whose earlier periods spent `spent`; with what is left after."""
        stop = StopFlag(again="monitor replay")
        with recorded_run(store, "replay") as run:
            job = make_job(store, settings, run, stop, "monitor replay", judge=make_judge(settings))
            job.budget = TokenBudget.of(settings.llm).after(spent)
            return Flow(job, Steps(store, run, stop)).run("judge")["judge"], job.budget

    with ScriptedLLM() as llm:
        llm.default = answering("SUPPORTS")
        settings = settings_for(llm, token_budget=5000, concurrency=1)
        with pytest.raises(BudgetExhausted, match="token budget 5000 reached") as spent:
            judge_stage(settings, 4990)
        assert "monitor replay" in str(spent.value) and llm.chat_requests() == []
        done, left = judge_stage(settings, 100)
    assert done.judged == 2 and not done.budget_exhausted
    assert done.tokens > 0 and left.spent == 100 + done.tokens  # the next period's budget counts it
