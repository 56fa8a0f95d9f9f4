"""What the commands print fits the terminal: tables fit or stack at 80 columns with every column and
every word whole, key/value lines never split, `--json` wherever a table is printed, and a warning once
per cause (monitor/terminal.py, monitor/cli/).

The commands run through `monitor.cli.main` in this process (ops_helpers.cli), with COLUMNS set as a
terminal would, on a real SQLite store built row by row (digest_world.World).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import re
import textwrap
from pathlib import Path

import pytest
from digest_world import TRUSTED_ENV, World
from ops_helpers import cli, env
from rich.console import Console
from rich.table import Table

from monitor.markup import plain_text
from monitor.store import open_store
from monitor.terminal import WarningTally, cause, fitted_widths, print_pairs, print_table, tally

BOX = "│┃┏┓┗┛┣┫┳┻╋━─┡┩╇└┘├┤┬┴┼═╞╡╪"
LONG_CLAIM = (
    "Reinforcement learning with verifiable rewards counterintuitively narrows the reasoning boundary: "
    "pass@k at large k falls below the base model's on mathematics and programming benchmarks"
)
QUOTE = (
    "Across seventeen benchmarks, RLVR-trained models underperform their base models at pass@256, "
    "counterintuitively shrinking the solvable-problem coverage through overspecialization."
)
SECOND_QUOTE = "Entropy-regularised objectives preserve exploration and recover pass@k coverage."


def _words(text: str) -> set[str]:
    """The words of printed text: split on spaces and on the table's box drawing."""
    return set(re.split(r"[\s“”" + BOX + r"]+", text)) - {""}


def _joined(text: str) -> str:
    """Printed text as one line: what rich wrapped inside a cell reads contiguously again."""
    return " ".join(text.split())


@pytest.fixture
def world_url(sqlite_url: str) -> str:
    """Two lines, a long claim in both with two pieces of evidence, and a short second claim."""
    store = open_store(sqlite_url)
    try:
        w = World(store)
        w.line("l-rl-boundary", "Does RLVR expand what a base model can solve?")
        w.line("l-exploration", "Why does RL narrow exploration?")
        w.claim("c-boundary", LONG_CLAIM, ("l-rl-boundary", "l-exploration"), date_text="2025-04",
                start=dt.date(2025, 4, 1), end=dt.date(2025, 4, 30), precision="month")  # fmt: skip
        w.claim("c-short", "Spurious rewards help some model families", ("l-rl-boundary",), date_text="~2025")
        w.paper("2603.01234", "Where RLVR shrinks coverage", dt.date(2026, 3, 10))
        w.assess("2603.01234", "c-boundary", "SUPPORTS", 0.92, evidence=QUOTE, rationale="It replicates.")
        w.paper("2603.04321", "Entropy keeps exploring", dt.date(2026, 3, 12))
        w.assess("2603.04321", "c-boundary", "RELAXES", 0.88, evidence=SECOND_QUOTE, rationale="A method.")
    finally:
        store.close()
    return sqlite_url


def _monitor(url: str, *args: str, columns: int = 80) -> tuple[str, str]:
    done = cli("--db", url, *args, environ=env(COLUMNS=str(columns), NO_COLOR="1", **TRUSTED_ENV))
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_verdicts_at_80_columns_keep_every_column_and_cut_no_word(world_url: str) -> None:
    out, _ = _monitor(world_url, "verdicts")
    assert max(len(line) for line in out.splitlines()) <= 80, out
    rows = {r["claim_id"]: r for r in json.loads(_monitor(world_url, "verdicts", "--json")[0])}
    assert set(rows) == {"c-boundary", "c-short"}
    text = _joined(out)
    shown = textwrap.shorten(plain_text(LONG_CLAIM), 90, placeholder=" …")
    assert shown in text and shown.endswith(" …")  # shortened between words
    for row in rows.values():  # every column of every row: status, claim id, date, lines, papers
        for cell in (row["status"], row["claim_id"], row["date"], ", ".join(row["lines"]), row["summary"]):
            assert _joined(cell) in text, (cell, out)
    words = shown.removesuffix(" …").split()
    assert words == LONG_CLAIM.split()[: len(words)]  # whole words of the claim, the last one too


def test_show_at_80_columns_prints_each_quote_whole_and_in_few_lines(world_url: str) -> None:
    _monitor(world_url, "verdicts")  # a verdict to show
    narrow, _ = _monitor(world_url, "show", "c-boundary")
    wide, _ = _monitor(world_url, "show", "c-boundary", columns=250)
    assert max(len(line) for line in narrow.splitlines()) <= 80, narrow
    assert max(len(line) for line in wide.splitlines()) <= 250, wide
    for quote in (QUOTE, SECOND_QUOTE):  # each quote reads as written, in a column wide enough for it
        assert f"“{quote}”" in _joined(narrow)
        assert set(quote.split()) <= _words(narrow)
    for column in ("published", "label", "conf", "judge", "counts", "quote, and why"):
        assert column in narrow  # no column lost
    assert "2026-03-10" in narrow and "SUPPORTS" in narrow and "0.92" in narrow
    # A quote wrapped in a 10-character column took a line per word or two; whole, a few lines.
    assert len(narrow.splitlines()) <= 40, narrow
    assert len(wide.splitlines()) < len(narrow.splitlines())


def test_show_json_holds_the_claim_its_evidence_and_its_history(world_url: str) -> None:
    _monitor(world_url, "verdicts")
    data = json.loads(_monitor(world_url, "show", "c-boundary", "--json")[0])
    assert data["id"] == "c-boundary" and data["text"] == LONG_CLAIM and data["date"] == "2025-04"
    assert {line["id"] for line in data["lines"]} == {"l-rl-boundary", "l-exploration"}
    quotes = {e["arxiv_id"]: e["evidence"] for e in data["evidence"]}
    assert quotes == {"2603.01234": QUOTE, "2603.04321": SECOND_QUOTE}
    assert all(
        e["judge"] == "openai" and e["counts"] in ("yes", "no", "waits", "withheld") for e in data["evidence"]
    )
    assert data["history"] and data["history"][-1]["status"] == data["status"]


@pytest.mark.parametrize(
    ("args", "check"),
    [
        (("verdicts",), lambda d: {r["claim_id"] for r in d} == {"c-boundary", "c-short"}),
        (("claims",), lambda d: {c["id"] for c in d} == {"c-boundary", "c-short"}),
        (("lines",), lambda d: {line["id"] for line in d} == {"l-rl-boundary", "l-exploration"}),
        (("anchors",), lambda d: d == []),
        (("runs",), lambda d: [r["command"] for r in d] == ["verdicts"]),
        (("review", "list"), lambda d: isinstance(d, list)),
        (("doctor", "--port", "9"), lambda d: d["claims"] == 2 and d["judge"]["provider"] == "embedded"),
        (
            ("report", "--period", "2026-W11"),
            lambda d: d["period"] == "2026-W11" and d["papers_published"] == 2,
        ),
    ],
)
def test_every_table_has_a_json_form(world_url: str, args: tuple[str, ...], check) -> None:
    _monitor(world_url, "verdicts")  # one recorded run, and verdicts to list
    out, _ = _monitor(world_url, *args, "--json")
    assert check(json.loads(out)), out


# --- the layout itself, on a real rich Console --------------------------------------------------------


def _console(width: int, terminal: bool = False) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=width, force_terminal=terminal, no_color=True), buffer


def _table(rows: int = 3) -> Table:
    table = Table(title="Evidence")
    for name in ("paper", "published", "label", "conf", "judge", "counts", "quote, and why"):
        table.add_column(name, overflow="fold")
    for i in range(rows):
        table.add_row(f"2603.0123{i}v1", "2026-03-10", "OVERTURNS", "0.91", "openai", "withheld", QUOTE)
    return table


@pytest.mark.parametrize("width", [40, 60, 80, 120, 250])
def test_a_table_prints_every_column_and_word_at_any_width(width: int) -> None:
    console, buffer = _console(width)
    print_table(console, _table())
    out = buffer.getvalue()
    assert max(len(line) for line in out.splitlines()) <= width, out
    assert set(QUOTE.split()) <= _words(out)  # no word cut
    for cell in (
        "2603.01232v1",
        "2026-03-10",
        "OVERTURNS",
        "0.91",
        "openai",
        "withheld",
        "published",
        "counts",
    ):
        assert cell in out  # no column dropped
    stacked = "┃" not in out
    assert stacked == (fitted_widths(Console(width=width), _table()) is None)
    if width <= 80:
        assert stacked and "quote, and why" in out


def test_a_table_that_fits_shares_the_spare_width_by_need() -> None:
    widths = fitted_widths(Console(width=120), _table())
    assert widths is not None and widths[-1] > 30  # the quote gets the room, not the short columns
    assert widths[:6] == [12, 10, 9, 4, 6, 8]  # each short column exactly as wide as its content


def test_key_value_pairs_are_never_split_at_a_terminal_nor_in_a_pipe() -> None:
    pairs = [f"key_number_{i} {i * 1000}" for i in range(12)]
    terminal, shown = _console(80, terminal=True)
    print_pairs(terminal, "  claims", pairs)
    lines = shown.getvalue().splitlines()
    assert len(lines) > 1 and max(len(line) for line in lines) <= 80
    assert all(pair in shown.getvalue() for pair in pairs)  # each pair on one line
    piped, plain = _console(80)
    print_pairs(piped, "  claims", pairs)
    assert plain.getvalue() == "  claims: " + ", ".join(pairs) + "\n"  # one plain line, whole


# --- warnings once per cause ----------------------------------------------------------------------------


def test_a_cause_is_the_message_without_its_paper_or_exception_class() -> None:
    one = "judge: 2403.01197v1: cannot reach the judge server (APIConnectionError)"
    two = "judge: 2501.00002v3: cannot reach the judge server (ConnectTimeout)"
    assert cause(one) == cause(two) == "cannot reach the judge server"
    assert tally([one, two, "judge: other", one]) == [
        "judge: cannot reach the judge server (x3)",
        "judge: other",
    ]


def test_the_warning_handler_prints_each_cause_once_with_its_count_and_folds_the_error() -> None:
    printed: list[str] = []
    handler = WarningTally(printed.append, window=60)
    log = logging.getLogger("monitor.test_terminal")
    log.addHandler(handler)
    log.propagate = False
    try:
        for i in range(4):
            log.warning("judge: 2403.0119%dv1: cannot reach the judge server (APIConnectionError)", i)
        log.warning("judge: cannot reach the judge server at http://127.0.0.1:9/v1/: refused")
        assert printed == []  # held for the window
        folded = handler.flush(fold="cannot reach the judge server at http://127.0.0.1:9/v1/: refused")
    finally:
        log.removeHandler(handler)
        log.propagate = True
    assert folded == 1  # the error line carries that one
    assert printed == ["judge: cannot reach the judge server (x4)"]


def test_an_unreachable_judge_server_says_so_once_per_cause_and_names_why_pairs_were_left(
    world_url: str, tmp_path: Path
) -> None:
    """One closed port: before, ten lines said it (timestamped log lines, the same as warnings, then the
    error) and the pairs not asked were "left (budget)"."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    variables = {
        "COLUMNS": "80", "NO_COLOR": "1", "MONITOR_LLM__BASE_URL": f"http://127.0.0.1:{port}/v1",
        "MONITOR_LLM__API_KEY": "sk-test", "MONITOR_LLM__MAX_RETRIES": "0", "MONITOR_LLM__CONCURRENCY": "1",
    }  # fmt: skip
    store = open_store(world_url)
    try:
        w = World(store)
        for i in range(8):  # pending pairs beyond the ones the breaker lets through
            w.paper(f"2603.1000{i}", f"Paper {i}", dt.date(2026, 3, 11))
            with store.session() as s:
                from monitor.store.models import Candidate

                s.add(
                    Candidate(
                        arxiv_id=f"2603.1000{i}", version=1, claim_id="c-short", score=1.0, method="bm25"
                    )
                )
    finally:
        store.close()
    done = cli("--db", world_url, "judge", "--judge", "openai", "--skip-relevance", environ=env(**variables))
    assert done.returncode == 6, done.stderr
    reach = [line for line in done.stderr.splitlines() if "cannot reach the judge server" in line]
    assert len(reach) == len({cause(line.split(": ", 1)[1]) for line in reach}) <= 2, done.stderr
    assert any("(x" in line for line in reach), done.stderr  # the repeats counted, not printed
    assert "WARNING" not in done.stderr  # no raw log line repeating a warning
    assert "left (budget)" not in done.stdout
    left = re.search(r"left pending \(([^)]*)\)\D*(\d+)", _joined(done.stdout))
    assert left and left.group(1).startswith("judge unavailable") and int(left.group(2)) > 0, done.stdout
