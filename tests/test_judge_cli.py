"""`monitor judge` end to end: the console entry point, a real database and the scripted OpenAI server."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import Reply, ScriptedLLM, answer, answering, asked_claim_ids, completion, error_body
from ops_helpers import MONITOR, cli
from sqlalchemy import select
from test_judge_runner import assessments, seed

from monitor.store.db import Store
from monitor.store.records import Run

SECRET = "sk-cli-test-do-not-print"


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def monitor(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, llm: ScriptedLLM
) -> Callable[..., Result]:
    """Run the console entry point in-process (as `monitor --db URL judge ...`) and capture its exit."""
    monkeypatch.chdir(tmp_path)  # no stray monitor.toml
    for name, value in {
        "MONITOR_JUDGE__BASE_URL": llm.url,
        "OPENAI_API_KEY": SECRET,
        "MONITOR_JUDGE__MODEL": "scripted-model",
        "MONITOR_JUDGE__BACKOFF_SECONDS": "0.01",
        "MONITOR_JUDGE__MAX_RETRIES": "0",
        # These tests price and run the judge; the screen of every claim has its own CLI test
        # (test_relevance_screen.py: the dry run's screen estimate).
        "MONITOR_RELEVANCE__SCREEN": "none",
        "MONITOR_JUDGE__SECOND_LOOK": "none",
        "COLUMNS": "200",
    }.items():
        monkeypatch.setenv(name, value)

    def run(db_url: str, *args: str, **env: str | None) -> Result:
        for name, value in env.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        done = cli("--db", db_url, "judge", *args)  # in this process, started as a new one would be
        return Result(done.returncode, done.stdout, done.stderr)

    return run


def test_dry_run_then_run(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    seed(store, papers=2, claims=3)
    dry = monitor(db_url, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run" in dry.stdout and "LLM calls" in dry.stdout
    # The cost of each relevance setting over the last week's papers, the one in force marked.
    assert "relevance settings over the last week" in dry.stdout and "(in force)" in dry.stdout
    assert re.search(r"bm25 10% \(in force\)", dry.stdout), dry.stdout  # an LLM judge's default
    assert llm.requests == []
    llm.default = answering("SUPPORTS")
    real = monitor(db_url, "--claim", "c0", "--claim", "c1")
    assert real.returncode == 0, real.stderr
    assert "SUPPORTS" in real.stdout and SECRET not in real.stdout + real.stderr
    assert len(assessments(store)) == 4
    with store.session() as s:
        run = s.scalars(select(Run).where(Run.command == "judge")).one()
        assert run.status == "ok" and run.tokens == 240 and run.counts["judge"]["judged"] == 4


def test_a_dry_run_of_the_openai_judge_needs_no_key_and_no_server(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    """It prices the calls and makes none, so neither an API key nor a base URL is asked for."""
    seed(store, papers=2, claims=3)
    unset = {"OPENAI_API_KEY": None, "MONITOR_JUDGE__BASE_URL": None, "OPENAI_BASE_URL": None}
    dry = monitor(db_url, "--dry-run", "--provider", "openai", **unset)
    assert dry.returncode == 0, dry.stderr
    calls = re.search(r"LLM calls\s*│\s*(\d+)", dry.stdout)
    prompt = re.search(r"prompt tokens\s*│\s*(\d+)", dry.stdout)
    price = re.search(r"cost estimate \(USD\)\s*│\s*([\d.]+)", dry.stdout)
    assert calls and prompt and price, dry.stdout
    assert int(calls.group(1)) > 0 and int(prompt.group(1)) > 0 and float(price.group(1)) > 0
    assert llm.requests == []
    # A real run still says at once what is missing.
    real = monitor(db_url, "--provider", "openai", "--skip-relevance", **unset)
    assert real.returncode == 2 and "needs an API key" in real.stderr


def test_the_dry_run_table_prints_the_expected_second_looks_on_their_own_line(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    """With second looks on, the table says how many the pending pairs are expected to need and what
    they cost, and its cost estimate includes them (the figures of `--json`)."""
    import json

    seed(store, papers=2, claims=3)
    dry = monitor(db_url, "--dry-run", "--skip-relevance", "--json", MONITOR_JUDGE__SECOND_LOOK="all")
    assert dry.returncode == 0, dry.stderr
    estimate = json.loads(dry.stdout)["judge"]
    looks = estimate["second_look_estimate"]
    assert looks["looks"] > 0 and 0 < looks["cost"] < estimate["cost_estimate"]
    table = monitor(db_url, "--dry-run", "--skip-relevance")
    shown = r"second looks \(expected, live\)\s*│\s*(\d+) pairs, (\d+) calls, .*\$([\d.]+)"
    line = re.search(shown, table.stdout)
    total = re.search(r"cost estimate \(USD, with second looks\)\s*│\s*([\d.]+)", table.stdout)
    assert line and total, table.stdout
    assert (int(line.group(1)), int(line.group(2))) == (looks["looks"], looks["calls"])
    assert looks["calls"] <= looks["looks"]
    assert float(line.group(3)) == pytest.approx(looks["cost"], abs=1e-4)
    assert float(total.group(1)) == pytest.approx(estimate["cost_estimate"], abs=1e-4)
    assert llm.requests == []


def test_the_dry_run_prices_the_second_looks_already_waiting(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    """A first reading whose second look failed waits for it; a run asks it, so the dry run counts it and
    its price (live rates) with nothing else pending, in the table, `--json` and the budget warning."""
    from test_second_look import scripted, world

    world(store)
    llm.default = scripted(("SUPPORTS", "direct", 0.95), None)  # every second look fails (503)
    on = {"MONITOR_JUDGE__SECOND_LOOK": "all"}
    first = monitor(db_url, "--skip-relevance", **on)
    assert [a.second_look for a in assessments(store)] == ["pending"], first.stdout + first.stderr
    asked = len(llm.requests)
    dry = monitor(db_url, "--dry-run", "--skip-relevance", "--json", **on)
    assert dry.returncode == 0, dry.stderr
    estimate = json.loads(dry.stdout)["judge"]
    waiting = estimate["second_looks_waiting"]
    assert estimate["pending"] == 0 and waiting["looks"] == 1 and waiting["cost"] > 0
    assert estimate["cost_estimate"] == pytest.approx(waiting["cost"])
    assert "nothing_pending" not in json.loads(dry.stdout)
    tokens = waiting["prompt_tokens"] + waiting["completion_tokens"]
    table = monitor(db_url, "--dry-run", "--skip-relevance", MONITOR_LLM__TOKEN_BUDGET=str(tokens - 1), **on)
    shown = r"second looks \(waiting, live\)\s*│\s*(\d+) pairs, (\d+) calls, .*\$([\d.]+)"
    line = re.search(shown, table.stdout)
    assert line and (int(line.group(1)), int(line.group(2))) == (1, 1), table.stdout
    assert float(line.group(3)) == pytest.approx(waiting["cost"], abs=1e-4)
    assert "Nothing pending" not in table.stdout and "would exceed llm.token_budget" in table.stderr
    within = monitor(db_url, "--dry-run", "--skip-relevance", MONITOR_LLM__TOKEN_BUDGET=str(tokens), **on)
    assert "would exceed" not in within.stderr
    assert len(llm.requests) == asked  # a dry run calls nothing


def test_budget_and_failures_exit_non_zero(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    seed(store, papers=3, claims=1)
    # A budget one call's estimate fits once: what the server reports spent (600) leaves too little.
    budget = str(int(one_call_budget(store)) + 500)
    llm.default = lambda req: Reply(body=completion(answer(req), prompt_tokens=500, completion_tokens=100))
    spent = monitor(
        db_url,
        "--provider",
        "openai",
        MONITOR_JUDGE__TOKEN_BUDGET=budget,
        MONITOR_JUDGE__CONCURRENCY="1",
    )
    assert spent.returncode == 7, spent.stderr
    assert f"token budget {budget} reached" in spent.stderr and len(assessments(store)) == 1
    llm.default = lambda _req: Reply(body=completion(None, refusal="I can't help with that."))
    refused = monitor(db_url, MONITOR_JUDGE__TOKEN_BUDGET=None)
    assert refused.returncode == 6 and "refused" in refused.stderr
    assert len(assessments(store)) == 1  # the two refused pairs stay pending


def test_batch_submit_then_collect(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    seed(store, papers=2, claims=1)
    llm.default = answering("UNRELATED", evidence="")
    submitted = monitor(db_url, "--batch")
    assert submitted.returncode == 0, submitted.stderr
    assert "batches submitted" in submitted.stdout and assessments(store) == []
    llm.batches.ready = True
    collected = monitor(db_url, "--batch", "--wait", MONITOR_JUDGE__BATCH_POLL_SECONDS="0.01")
    assert collected.returncode == 0, collected.stderr
    assert "batches collected" in collected.stdout and len(assessments(store)) == 2
    assert len(llm.batches.batches) == 1  # nothing was submitted twice


def test_a_batch_still_running_exits_0_and_says_so_one_partly_invalid_too(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    """Batch semantics, not failures: submitted and not yet done (twice), then collected with one answer
    invalid and the other judged (as live: only a judge that answered none fails; the invalid one's pair
    is submitted again)."""
    from test_judge_batch import half_bad

    seed(store, papers=2, claims=1)
    for _ in range(2):
        waiting = monitor(db_url, "--batch")
        assert waiting.returncode == 0, waiting.stderr
        assert "1 batch(es) still running at the Batch API" in " ".join(waiting.stdout.split())
    assert len(llm.batches.batches) == 1
    llm.default, llm.batches.ready = half_bad, True
    collected = monitor(db_url, "--batch")
    assert collected.returncode == 0, collected.stderr
    assert len(assessments(store)) == 1 and "batches collected" in collected.stdout
    assert len(llm.batches.batches) == 2  # the pair whose answer was invalid went into a new batch
    with store.session() as s:
        statuses = [r.status for r in s.scalars(select(Run).where(Run.command == "judge").order_by(Run.id))]
    assert statuses == ["ok", "ok", "partial"]  # finished, an error recorded: as a live run with one


def invalid(request: Any) -> Reply:
    """A label outside the schema for every claim asked (and still after a corrective turn)."""
    claims = asked_claim_ids(request)
    return Reply(
        body=completion(json.dumps({"assessments": [{"claim_id": c, "label": "PERHAPS"} for c in claims]}))
    )


def second_look_refused(request: Any) -> Reply:
    """First readings answered; every second look refused as a rejected key is (401)."""
    if "second, closer reading" in request["messages"][0]["content"]:
        return Reply(401, error_body("Incorrect API key provided", "invalid_request_error"))
    return Reply(body=completion(answer(request)))


def one_call_budget(store: Store) -> str:
    """A token budget of one judge call's estimate: its first call fits, and nothing after it."""
    from monitor.judge.prompts import load_prompts
    from monitor.judge.work import estimate_judge_units, pending_units

    class Judge:
        name, model, prompt_version, claims_per_call = "openai", "scripted-model", load_prompts().version, 4

    return str(sum(estimate_judge_units(pending_units(store, Judge())[:1], load_prompts())))  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["live", "batch"])
@pytest.mark.parametrize(
    ("situation", "code", "said"),
    [
        ("every answer invalid", 6, "the judge answered none of 2 pair(s); first error:"),
        ("second looks refused", 6, "second look: "),
        ("budget spent before the second looks", 7, "token budget {budget} reached: 1 pair(s) judged"),
        (
            "budget spent before every pair",
            7,
            "token budget {budget} reached: 1 pair(s) judged and kept, 1 left",
        ),
    ],
)
def test_a_batch_that_failed_exits_as_the_live_judge_does(
    store: Store,
    db_url: str,
    llm: ScriptedLLM,
    monitor: Callable[..., Result],
    how: str,
    situation: str,
    code: int,
    said: str,
) -> None:
    """`monitor judge --batch` checks what it collected and the second looks it asked live with the live
    path's rule (schedule/flow.py `check_judged`): the same exit code and one-line error, the run row
    ended as `monitor judge` ends it; a failed judge never reads as "nothing bears". A second look that
    could not be asked leaves its label withheld, awaiting a second reading, and exits as live does."""
    papers = 2 if situation in ("every answer invalid", "budget spent before every pair") else 1
    seed(store, papers=papers, claims=1)
    env = {"MONITOR_JUDGE__SECOND_LOOK": "all" if "second looks" in situation else "none"}
    if situation.startswith("budget"):
        env["MONITOR_LLM__TOKEN_BUDGET"] = budget = one_call_budget(store)
        said = said.format(budget=budget)
    llm.default = invalid if situation == "every answer invalid" else second_look_refused
    llm.batches.ready = True  # answered as soon as polled: `--wait` collects in the same invocation
    args = ["--batch", "--wait"] if how == "batch" else []
    done = monitor(db_url, *args, MONITOR_LLM__BATCH_POLL_SECONDS="0.01", **env)
    assert done.returncode == code, done.stdout + done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and said in error[0], done.stderr
    with store.session() as s:
        run = s.scalars(select(Run).where(Run.command == "judge")).one()
    assert run.status == ("partial" if code == 7 else "failed")
    if "second looks" in situation:  # nothing lost: the label waits for the next run's second look
        assert [a.second_look for a in assessments(store)] == ["pending"]


def test_a_batch_the_budget_cut_short_says_its_pairs_were_submitted(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    """Without `--wait`, the pairs a budget-cut batch carries are at the Batch API, not lost: the exit-7
    message counts them as submitted (not "0 judged"), and the next `--batch` collects them."""
    seed(store, papers=2, claims=1)
    budget = one_call_budget(store)
    llm.default = answering("SUPPORTS")
    cut = monitor(db_url, "--batch", MONITOR_LLM__TOKEN_BUDGET=budget)
    assert cut.returncode == 7, cut.stdout + cut.stderr
    error = [line for line in cut.stderr.splitlines() if line.startswith("error:")]
    said = (
        f"token budget {budget} reached: 1 pair(s) submitted in a batch (`monitor judge --batch` collects "
        "it once done), 1 left pending"
    )
    assert len(error) == 1 and said in " ".join(cut.stderr.split()), cut.stderr
    assert "judged and kept" not in cut.stderr and assessments(store) == []
    llm.batches.ready = True
    collected = monitor(db_url, "--batch", MONITOR_LLM__TOKEN_BUDGET=budget)
    assert len(assessments(store)) == 1, collected.stdout + collected.stderr


def test_an_unreachable_server_exits_6_naming_the_url_and_a_rerun_finishes(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    from test_judge_runner import closed_port_url

    from monitor.store.records import LLMExchange

    seed(store, papers=12, claims=1)
    dead = closed_port_url()
    down = monitor(db_url, MONITOR_JUDGE__BASE_URL=dead, MONITOR_JUDGE__MAX_RETRIES="4")
    assert down.returncode == 6, down.stderr
    assert f"cannot reach the judge server at {dead}" in down.stderr and SECRET not in down.stderr
    with store.session() as s:
        attempts = len(s.scalars(select(LLMExchange)).all())
    assert attempts <= 8  # at most the calls already in flight (concurrency 4) x 2 attempts, not 12 x 5
    llm.default = answering()
    up = monitor(db_url, MONITOR_JUDGE__BASE_URL=llm.url)
    assert up.returncode == 0, up.stderr
    assert len(assessments(store)) == 12


def test_sigterm_stops_judging_gracefully_and_a_rerun_finishes(
    store: Store, db_url: str, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """A real `monitor judge` process: SIGTERM mid-run keeps what finished, records its tokens, ends the
    run row `interrupted` with exit 130; the rerun judges only the rest."""
    seed(store, papers=12, claims=1)
    llm.default = answering("SUPPORTS", delay=0.4)  # slow enough to signal mid-run
    env = {
        **os.environ,
        "MONITOR_JUDGE__BASE_URL": llm.url,
        "OPENAI_API_KEY": SECRET,
        "MONITOR_JUDGE__MODEL": "scripted-model",
        "MONITOR_JUDGE__MAX_RETRIES": "0",
        "MONITOR_JUDGE__CONCURRENCY": "1",
        "MONITOR_JUDGE__SECOND_LOOK": "none",  # the first readings' calls are counted here
    }
    command = [MONITOR, "--db", db_url, "judge", "--provider", "openai", "--skip-relevance"]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while len(llm.chat_requests()) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "monitor judge" in err  # says how to go on
    first = assessments(store)
    with store.session() as s:
        run = s.scalars(select(Run).where(Run.command == "judge")).one()
        assert run.status == "interrupted" and run.finished_at is not None
        assert run.tokens == 120 * len(llm.chat_requests()) > 0  # every answered call is counted
        assert run.counts["judge"]["judged"] == len(first)
    assert 0 < len(first) < 12

    llm.default = answering("SUPPORTS")
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = assessments(store)
    assert len(rows) == 12 and len({r.cache_key for r in rows}) == 12  # the rest, nothing twice
    assert len(llm.chat_requests()) == 12


def test_a_batch_dry_run_is_priced_at_batch_rates_and_leaves_the_callers_settings_as_configured(
    store: Store,
) -> None:
    """The first readings at batch prices (half), computed on a copy: the shared settings keep llm.batch
    off. Their expected second looks go by batch too, at half price (live with `judge.second_look_batch`
    off), priced by the same rule as those of the pairs the screen would keep (estimate.py's `price_kept`)."""
    from monitor.config import Settings
    from monitor.judge.estimate import price_kept, shipped_keep
    from monitor.judge.factory import make_judge
    from monitor.judge.second_look import JUDGED_LOOKS
    from monitor.judge.work import pending_units
    from monitor.schedule.judging import JudgeRequest, judge_once
    from monitor.schedule.signals import StopFlag

    seed(store, papers=2, claims=3)
    settings = Settings()
    settings.llm.base_url = "http://127.0.0.1:9/v1"  # never called: a dry run calls nothing

    def dry_runs(settings: Settings) -> dict[bool, Any]:
        shown: dict[tuple[bool, str], object] = {}
        for batch in (False, True):
            request = JudgeRequest(dry_run=True, batch=batch, relevance=False, alternatives=False)
            show = lambda name, got, b=batch: shown.setdefault((b, name), got)  # noqa: E731
            judge_once(store, settings, request, StopFlag(), show)
        return {b: shown[(b, "judge")] for b in (False, True)}

    live, batch = dry_runs(settings).values()
    looks, batched = live.second_look_estimate, batch.second_look_estimate
    assert looks is not None and batched is not None and looks.cost > 0
    assert (looks.batch, batched.batch, batched.looks) == (False, True, looks.looks)
    assert batched.cost == pytest.approx(looks.cost / 2)
    assert live.pending == 6 and looks.looks == round(6 * JUDGED_LOOKS.share)
    first = live.cost_estimate - looks.cost
    assert first > 0 and batch.cost_estimate == pytest.approx(live.cost_estimate / 2)
    # Every pending pair kept by a screen: at the same share of second looks, judging them would expect
    # the same second looks, priced alike; by default a screen's pairs expect the share measured on what
    # a screen keeps (its second reading's extra pairs are mostly plainly UNRELATED: fewer looks).
    judge = make_judge(settings, connect=False)
    pairs = [(u.paper, c) for u in pending_units(store, judge) for c in u.claims]
    kept = price_kept(settings, live.pending, 1.0, pairs, looks=JUDGED_LOOKS)
    assert (kept.second_looks, kept.second_look_cost) == (looks.looks, looks.cost)
    screened = price_kept(settings, live.pending, 1.0, pairs)
    assert screened.second_looks == round(6 * shipped_keep(settings).looks.share) < looks.looks
    assert settings.llm.batch is False

    settings.judge.second_look_batch = False  # asked live after the batch: at live prices
    live, batch = dry_runs(settings).values()
    assert batch.second_look_estimate == looks
    assert batch.cost_estimate - looks.cost == pytest.approx(first / 2)

    settings.judge.second_look = "none"
    live, batch = dry_runs(settings).values()
    assert live.second_look_estimate is None and batch.cost_estimate == pytest.approx(live.cost_estimate / 2)
    assert live.cost_estimate == pytest.approx(first)


def test_a_dry_run_with_nothing_pending_says_so_and_prices_no_alternatives(
    store: Store, db_url: str, llm: ScriptedLLM, monitor: Callable[..., Result]
) -> None:
    """Nothing pending: a rerun would call nothing, so the dry run says so and skips the table of relevance
    settings (tens of seconds of embedding a week's titles); `--alternatives` still prices it."""
    seed(store, papers=2, claims=3)
    llm.default = answering("SUPPORTS")
    assert monitor(db_url).returncode == 0  # every pair judged
    asked = len(llm.requests)
    dry = monitor(db_url, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    said = " ".join(dry.stdout.split())
    assert "Nothing pending for the openai judge: `monitor judge` would call nothing now" in said
    assert "`monitor judge --dry-run --alternatives` prices a week of new papers" in said
    assert "pending pairs" not in dry.stdout  # no table of zeros pricing nothing
    assert "relevance settings over the last week" not in dry.stdout
    asked_for = monitor(db_url, "--dry-run", "--alternatives")
    assert asked_for.returncode == 0, asked_for.stderr
    assert "relevance settings over the last week" in asked_for.stdout and "(in force)" in asked_for.stdout
    assert "Nothing pending" in asked_for.stdout
    assert len(llm.requests) == asked  # neither dry run called anything
    alone = monitor(db_url, "--alternatives")
    assert alone.returncode == 64 and "use it with --dry-run" in alone.stderr


def test_the_dry_run_prices_alternatives_only_while_pairs_are_pending(store: Store, llm: ScriptedLLM) -> None:
    """What `judge_once` computes, step by step: the alternatives only while something is pending."""
    from test_judge_runner import settings_for

    from monitor.judge.runner import judge_pending
    from monitor.schedule.judging import JudgeRequest, judge_once
    from monitor.schedule.signals import StopFlag

    seed(store, papers=2, claims=3)
    settings = settings_for(llm)
    settings.relevance.screen = "none"  # the judge's dry run and its alternatives, not the screen's

    def steps() -> list[str]:
        shown: list[str] = []
        request = JudgeRequest(dry_run=True, provider="openai", relevance=False)
        judge_once(store, settings, request, StopFlag(), lambda name, _: shown.append(name))
        return shown

    assert steps() == ["alternatives", "judge"]  # 6 pairs pending: priced, and each relevance setting too
    llm.default = answering("SUPPORTS")
    assert judge_pending(store, settings).judged == 6
    assert steps() == ["judge", "nothing pending"]  # no alternatives computed
