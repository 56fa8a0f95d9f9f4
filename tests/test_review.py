"""`monitor review`: curators' decisions override the judge's, survive re-judging, and keep history."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from digest_world import TRUSTED_ENV, World, settled_digest, trusted_settings
from ops_helpers import cli
from schema_fixtures import load_schema
from sqlalchemy import text

from monitor.errors import UsageError
from monitor.judge.evaluate import read_pairs
from monitor.report.period import resolve_period
from monitor.report.render import render
from monitor.review.queue import REASONS, decisions, export_pairs, record, review_queue
from monitor.review.terminal import highlighted, walk
from monitor.store import SCHEMA_VERSION, open_store
from monitor.verdicts.detail import claim_detail
from monitor.verdicts.rollup import compute_verdicts, current_verdicts

ABSTRACT = "We train with RL. Contrary to prior work, RL updates most parameters densely across layers."
QUOTE = "RL updates most parameters densely across layers"


def world(store) -> World:
    w = World(store)
    w.line("rl", "What breaks?")
    w.claim(
        "c1",
        "RL updates few parameters",
        ("rl",),
        "2025-05",
        dt.date(2025, 5, 1),
        dt.date(2025, 5, 31),
        "month",
    )
    return w


def status(store, settings) -> str:
    compute_verdicts(store, settings)
    [row] = current_verdicts(store)
    return row.status


def test_a_decisive_confirmation_moves_the_verdict_and_survives_rejudging(store) -> None:
    settings = trusted_settings()
    w = world(store)
    w.paper("2509.00001", "Dense RL", dt.date(2025, 9, 1), abstract=ABSTRACT)
    weak = w.assess("2509.00001", "c1", "OVERTURNS", 0.6, evidence=QUOTE)
    assert status(store, settings) == "UNSETTLED"  # one weak label counts, moves nothing
    [item] = review_queue(store, settings)
    assert item.assessment_id == weak and item.reason == REASONS[1] and item.abstract == ABSTRACT
    done = record(store, weak, label="O", note="read the paper: dense")
    assert (done.action, done.from_label, done.label) == ("confirm", "OVERTURNS", "OVERTURNS")
    # One confirmation weighs CURATOR_WEIGHT (0.7): one keypress never overturns a claim (issue 21).
    assert status(store, settings) == "UNSETTLED"
    assert review_queue(store, settings) == []
    done = record(store, weak, label="O", decisive=True, note="read it: this settles it")
    assert done.decisive
    assert status(store, settings) == "OVERTURNED"  # a decisive curator's label weighs 1
    # A retest with a new model relabels the pair SUPPORTS: the curator's OVERTURNS stays in force.
    w.assess("2509.00001", "c1", "SUPPORTS", 0.95, evidence=QUOTE, judge="openai")
    assert status(store, settings) == "OVERTURNED"
    shown = {e.item.arxiv_id: e.note for e in claim_detail(store, settings, "c1").evidence}
    assert shown["2509.00001"] == "relabelled by a curator, decisive (the judge said SUPPORTS)"


def test_relabel_dismiss_and_history(store) -> None:
    settings = trusted_settings()
    w = world(store)
    w.paper("2509.00001", "Replication", dt.date(2025, 9, 1), abstract=ABSTRACT)
    support = w.assess("2509.00001", "c1", "SUPPORTS", 0.9, evidence=QUOTE)
    w.paper("2509.00002", "Off topic", dt.date(2025, 9, 2), abstract=ABSTRACT)
    unrelated = w.assess("2509.00002", "c1", "UNRELATED", 0.9, evidence="")
    assert status(store, settings) == "DURABLE"
    record(store, support, label="U")  # not support after all
    assert status(store, settings) == "UNTESTED"
    record(store, unrelated, label="SUPPORTS", decisive=True)  # the judge missed this one
    assert status(store, settings) == "DURABLE"
    record(store, unrelated, dismiss=True, note="a survey, no finding")
    assert status(store, settings) == "UNTESTED"
    record(store, unrelated, note="checked again")  # a note changes nothing
    assert status(store, settings) == "UNTESTED"
    [_, dismissed] = decisions(store)
    assert dismissed["action"] == "dismiss" and dismissed["label"] is None
    steps = [(h["action"], h["from"], h["to"], h["note"]) for h in dismissed["history"]]
    assert steps == [
        ("relabel", "UNRELATED", "SUPPORTS", ""),
        ("dismiss", "SUPPORTS", None, "a survey, no finding"),
        ("note", "DISMISSED", None, "checked again"),
    ]
    notes = {e.item.arxiv_id: (e.counted, e.note) for e in claim_detail(store, settings, "c1").evidence}
    assert notes["2509.00002"] == (False, "dismissed by a curator")


def test_bad_decisions_name_what_is_wrong(store) -> None:
    w = world(store)
    w.paper("2509.00001", "P", dt.date(2025, 9, 1))
    aid = w.assess("2509.00001", "c1", "SUPPORTS", 0.9)
    with pytest.raises(UsageError, match="no assessment with id 999"):
        record(store, 999, label="S")
    with pytest.raises(UsageError, match="--label 'X'"):
        record(store, aid, label="X")
    with pytest.raises(UsageError, match="either --label or --dismiss"):
        record(store, aid, label="S", dismiss=True)
    with pytest.raises(UsageError, match="nothing to record"):
        record(store, aid)


def test_embedded_judges_relaxes_waits_for_confirmation(store) -> None:
    settings = trusted_settings()  # confirm_judges defaults to the embedded judge
    w = world(store)
    ids = []
    for n in (1, 2):
        w.paper(f"2509.0000{n}", f"Relaxing {n}", dt.date(2025, 9, n), abstract=ABSTRACT)
        ids.append(w.assess(f"2509.0000{n}", "c1", "RELAXES", 0.9, evidence=QUOTE, judge="local"))
    assert status(store, settings) == "UNTESTED"  # two strong local RELAXES, unconfirmed
    queue = review_queue(store, settings)
    assert [i.reason for i in queue] == [REASONS[0], REASONS[0]]
    record(store, ids[0], label="R")
    assert status(store, settings) == "UNSETTLED"  # one confirmed paper (0.7) counts, moves nothing
    record(store, ids[1], label="R")
    assert status(store, settings) == "PERISHABLE"  # two: 1 - 0.3 * 0.3 = 0.91
    settings.verdicts.confirm_judges = []
    record(store, ids[0], dismiss=True)
    assert status(store, settings) == "UNSETTLED"  # one RELAXES (confirmed: 0.7) is too weak
    w.paper("2509.00003", "Relaxing 3", dt.date(2025, 9, 3), abstract=ABSTRACT)
    w.assess("2509.00003", "c1", "RELAXES", 0.9, evidence=QUOTE, judge="local")
    assert status(store, settings) == "PERISHABLE"  # published unreviewed when nobody must confirm


def test_the_embedded_judge_is_named_embedded_in_the_queue_and_in_monitor_show(store) -> None:
    """Its assessments are stored under its old name "local" (their cache keys); output says "embedded"."""
    from rich.console import Console

    from monitor.cli.show.verdicts import print_claim

    settings = trusted_settings()
    w = world(store)
    w.paper("2509.00001", "Relaxing", dt.date(2025, 9, 1), abstract=ABSTRACT)
    w.assess("2509.00001", "c1", "RELAXES", 0.9, evidence=QUOTE, judge="local")
    [item] = review_queue(store, settings)
    assert item.judge == "embedded" and item.as_dict()["judge"] == "embedded"
    console = Console(record=True, width=300, no_color=True)
    print_claim(console, claim_detail(store, settings, "c1"))
    shown = console.export_text()
    assert " embedded " in shown and " local " not in shown


def test_export_writes_pairs_monitor_eval_reads(store, tmp_path: Path) -> None:
    w = world(store)
    w.paper("2509.00001", "Dense RL", dt.date(2025, 9, 1), abstract=ABSTRACT)
    aid = w.assess("2509.00001", "c1", "SUPPORTS", 0.7, evidence=QUOTE)
    w.paper("2509.00002", "Survey", dt.date(2025, 9, 2), abstract=ABSTRACT)
    other = w.assess("2509.00002", "c1", "RELAXES", 0.7, evidence=QUOTE)
    record(store, aid, label="O", note="contradicts")
    record(store, other, dismiss=True)
    path = tmp_path / "reviewed.jsonl"
    assert export_pairs(store, path) == 2
    pairs = read_pairs(path)
    assert [(p.label, p.title) for p in pairs] == [("OVERTURNS", "Dense RL"), ("UNRELATED", "Survey")]
    assert pairs[0].extra["model_label"] == "SUPPORTS" and pairs[0].extra["note"] == "contradicts"


def test_a_label_too_unsure_to_count_is_in_the_queue_with_its_reason(store) -> None:
    """A grounded label below verdicts.min_confidence counts for nothing and the digest lists its paper
    as possibly relevant: the queue holds it last, saying why (it raised an IndexError before)."""
    settings = trusted_settings()
    w = world(store)
    w.paper("2603.10001", "Paper 1", dt.date(2026, 3, 10), abstract=ABSTRACT)
    w.assess("2603.10001", "c1", "RELAXES", 0.5, evidence=QUOTE)
    w.paper("2603.10002", "Paper 2", dt.date(2026, 3, 10), abstract=ABSTRACT)
    w.assess("2603.10002", "c1", "SUPPORTS", 0.6, evidence=QUOTE)
    queue = review_queue(store, settings)
    assert [(i.arxiv_id, i.label) for i in queue][-1] == ("2603.10001", "RELAXES")
    assert queue[-1].reason.startswith("too unsure to count (below verdicts.min_confidence")


def test_walk_records_each_key_and_the_digest_marks_confirmed_evidence(store) -> None:
    from rich.console import Console

    settings = trusted_settings()
    w = world(store)
    for n, label in ((1, "OVERTURNS"), (2, "SUPPORTS"), (3, "RELAXES"), (4, "SUPPORTS")):
        w.paper(f"2603.1000{n}", f"Paper {n}", dt.date(2026, 3, 10), abstract=ABSTRACT)
        w.assess(f"2603.1000{n}", "c1", label, 0.6, evidence=QUOTE)
    queue = review_queue(store, settings)
    assert [i.label for i in queue][0] == "OVERTURNS"  # too weak to overturn: first
    keys = iter(["x", "y", "u", "n", "d", "q"])  # x is not a key: asked again
    console = Console(record=True, width=120)
    summary = walk(console, store, queue, key=lambda: next(keys), line=lambda _: "see fig. 3")
    assert (summary.confirmed, summary.relabelled, summary.notes, summary.dismissed) == (1, 1, 1, 1)
    assert summary.left == 0
    out = console.export_text()
    assert (
        "RL updates few parameters" in out
        and "2025-05" in out
        and "https://arxiv.org/abs/2603.10001v1" in out
    )
    digest = settled_digest(store, settings, resolve_period("2026-W11"))
    text_md = render(digest, "md", settings)
    assert "· ✓ **confirmed by a curator**" in text_md


def test_quote_is_highlighted_inside_the_abstract() -> None:
    shown = highlighted(ABSTRACT, "rl updates most   parameters densely")
    [span] = shown.spans
    assert ABSTRACT[span.start : span.end] == "RL updates most parameters densely" and "reverse" in str(
        span.style
    )
    assert highlighted(ABSTRACT, "not in it at all").spans == []


def test_a_v3_store_gains_the_reviews_table(db_url: str) -> None:
    load_schema(db_url, 3)
    store = open_store(db_url)  # migrates
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM reviews")).scalar() == 0
        assert conn.execute(text("SELECT version FROM schema_version")).scalar() == SCHEMA_VERSION
    store.close()


def test_cli_set_list_and_the_interactive_walk(db_url: str, tmp_path: Path) -> None:
    store = open_store(db_url)
    w = world(store)
    w.paper("2509.00001", "Dense RL", dt.date(2025, 9, 1), abstract=ABSTRACT)
    first = w.assess("2509.00001", "c1", "OVERTURNS", 0.6, evidence=QUOTE)
    w.paper("2509.00002", "Sparse RL", dt.date(2025, 9, 2), abstract=ABSTRACT)
    w.assess("2509.00002", "c1", "SUPPORTS", 0.6, evidence=QUOTE)
    store.close()
    env = dict(os.environ, MONITOR_DATABASE__URL=db_url, **TRUSTED_ENV)
    env.pop("MONITOR_CONFIG", None)

    def monitor(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return cli(*args, environ=env, cwd=tmp_path, stdin=stdin)

    assert monitor("verdicts").returncode == 0  # the verdicts before any decision: UNSETTLED
    listed = monitor("review", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [row["assessment_id"] for row in json.loads(listed.stdout)][0] == first
    done = monitor("review", "set", str(first), "--label", "O", "--note", "checked")
    assert done.returncode == 0, done.stderr
    assert "confirm c1 × 2509.00001: OVERTURNS -> OVERTURNS; verdicts changed 0" in done.stdout
    done = monitor("review", "set", str(first), "--label", "O", "--decisive", "--note", "settles it")
    assert done.returncode == 0, done.stderr
    assert "confirm (decisive) c1 × 2509.00001: OVERTURNS -> OVERTURNS; verdicts changed 1" in done.stdout
    bad = monitor("review", "set", str(first), "--dismiss", "--decisive")
    assert bad.returncode == 64 and "--decisive" in bad.stderr
    walked = monitor("review", stdin="s\n")  # the one left: confirm it as SUPPORTS
    assert walked.returncode == 0, walked.stderr
    assert "confirmed 1, relabelled 0, dismissed 0, notes 0, skipped 0, left 0" in walked.stdout
    assert "Nothing needs review." in monitor("review").stdout
    reviewed = json.loads(monitor("review", "list", "--reviewed", "--json").stdout)
    assert [r["history"][0]["note"] for r in reviewed] == ["checked", ""]
    assert [r["decisive"] for r in reviewed] == [True, False]  # stored with the decision
    bad = monitor("review", "set", "12345", "--label", "S")
    assert bad.returncode == 64 and "no assessment with id 12345" in bad.stderr


def test_a_note_alone_is_listed_among_the_reviewed_pairs(
    store, db_url, tmp_path, monkeypatch, capsys
) -> None:
    """`review set ID --note T` records a note, and `review list --reviewed` shows it."""
    from test_report_digest import main_in_process

    w = world(store)
    w.paper("2509.00001", "Dense RL", dt.date(2025, 9, 1), abstract=ABSTRACT)
    noted = w.assess("2509.00001", "c1", "OVERTURNS", 0.6, evidence=QUOTE)
    w.paper("2509.00002", "Sparse RL", dt.date(2025, 9, 2), abstract=ABSTRACT)
    decided = w.assess("2509.00002", "c1", "SUPPORTS", 0.6, evidence=QUOTE)
    record(store, noted, note="read the full paper: dense only above 7B")
    record(store, decided, label="S")
    rows = {r["arxiv_id"]: r for r in decisions(store)}
    assert set(rows) == {"2509.00001", "2509.00002"}
    assert (rows["2509.00001"]["action"], rows["2509.00001"]["label"]) == ("note", None)
    assert rows["2509.00001"]["history"][0]["note"] == "read the full paper: dense only above 7B"
    assert (rows["2509.00002"]["action"], rows["2509.00002"]["label"]) == ("confirm", "SUPPORTS")
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = main_in_process(["review", "list", "--reviewed"], db_url, tmp_path, monkeypatch, capsys)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "2 reviewed pairs" in flat and "dense only above 7B" in flat


def test_the_walk_on_a_real_terminal_takes_single_key_presses(sqlite_url: str, tmp_path: Path) -> None:
    import pty
    import select as select_module
    import termios

    store = open_store(sqlite_url)
    w = world(store)
    for n in (1, 2):
        w.paper(f"2509.0000{n}", f"Paper {n}", dt.date(2025, 9, n), abstract=ABSTRACT)
        w.assess(f"2509.0000{n}", "c1", "OVERTURNS", 0.6, evidence=QUOTE)
    store.close()
    env = dict(os.environ, MONITOR_DATABASE__URL=sqlite_url, COLUMNS="100", **TRUSTED_ENV)
    env.pop("MONITOR_CONFIG", None)
    main_fd, child_fd = pty.openpty()
    command = [sys.executable, "-c", "from monitor.cli import main; main()", "review"]
    proc = subprocess.Popen(command, stdin=child_fd, stdout=child_fd, stderr=child_fd, cwd=tmp_path, env=env)
    os.close(child_fd)
    seen = b""

    def plain() -> bytes:  # without colours, styles and links
        return re.sub(rb"\x1b\[[0-9;]*[A-Za-z]|\x1b\]8;[^\x1b]*\x1b\\", b"", seen)

    def read_until(marker: bytes, timeout: float = 60.0) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in plain() and time.monotonic() < deadline:
            ready, _, _ = select_module.select([main_fd], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(main_fd, 65536)
                except OSError:
                    break
        assert marker in plain(), plain().decode(errors="replace")[-2000:]

    def wait_raw(timeout: float = 60.0) -> None:
        """Until the prompt has put the terminal in raw mode (a key typed before it would be flushed)."""
        deadline = time.monotonic() + timeout
        while termios.tcgetattr(main_fd)[3] & termios.ICANON and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not termios.tcgetattr(main_fd)[3] & termios.ICANON, "the prompt never read a single key"

    # Each key once the prompt is up and the terminal is in raw mode: one key, no Enter.
    read_until(b"k skip")
    wait_raw()
    os.write(main_fd, b"y")
    read_until(b"[2/2]")
    wait_raw()
    os.write(main_fd, b"q")
    read_until(b"confirmed 1, relabelled 0, dismissed 0, notes 0, skipped 0, left 1")
    assert proc.wait(timeout=60) == 0
    os.close(main_fd)
    store = open_store(sqlite_url)
    assert [d["action"] for d in decisions(store)] == ["confirm"]
    store.close()


def test_a_confirmed_relaxes_names_its_condition_in_the_digest(store) -> None:
    settings = trusted_settings()
    w = world(store)
    w.paper("2603.20001", "Only at small scale", dt.date(2026, 3, 10), abstract=ABSTRACT)
    aid = w.assess("2603.20001", "c1", "RELAXES", 0.7, evidence=QUOTE)
    text_before = render(settled_digest(store, settings, resolve_period("2026-W11")), "md", settings)
    assert "Narrower than stated?" not in text_before  # not confirmed yet
    record(store, aid, label="R")
    text_md = render(settled_digest(store, settings, resolve_period("2026-W11")), "md", settings)
    assert "**Narrower than stated?** Confirmed RELAXES evidence names the condition:" in text_md
    # The paper is listed once, with its quote, below the claim: the condition names it by number.
    assert "- paper 1 below" in text_md and text_md.count(f"> {QUOTE}") == 1
