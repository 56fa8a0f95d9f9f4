"""The claims commands as a user runs them: `python -m monitor` in a subprocess, real databases."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from ops_helpers import bare_monitor
from sqlalchemy import func, select

from monitor.config import Settings, load_settings
from monitor.store import open_store
from monitor.store.models import Claim, LineClaim, SeedFile

REPO = Path(__file__).resolve().parent.parent
BAD = Path(__file__).parent / "fixtures" / "seeds_bad"


def monitor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return bare_monitor(*args, cwd=cwd, MONITOR_ARXIV_MIN_DELAY="0")


def claim_rows(url: str) -> tuple[int, int, int]:
    store = open_store(url)
    try:
        with store.session() as s:
            return tuple(  # type: ignore[return-value]
                s.scalar(select(func.count()).select_from(m)) for m in (Claim, LineClaim, SeedFile)
            )
    finally:
        store.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "seeds", tmp_path / "seeds")
    return tmp_path


def test_claims_json_lists_the_five_seeds(project: Path, db_url: str) -> None:
    empty = monitor("--db", db_url, "claims", cwd=project)  # a reading command creates no database
    assert empty.returncode == 4
    assert "monitor init" in empty.stderr
    imported = monitor("--db", db_url, "seeds", "import", cwd=project)
    assert imported.returncode == 0, imported.stderr
    assert "imported 5 files (5 new); 5 lines, 35 claims, 8 anchors active" in imported.stdout
    again = monitor("--db", db_url, "seeds", "import", "seeds", cwd=project)
    assert again.returncode == 0 and again.stdout.startswith("unchanged: 5 files")

    out = monitor("--db", db_url, "claims", "--json", cwd=project)
    assert out.returncode == 0, out.stderr
    claims = json.loads(out.stdout)
    assert len(claims) == 35
    assert {c["kind"] for c in claims} == {"note", "dated"}
    assert sum(c["kind"] == "dated" for c in claims) == 10
    keys = {"id", "text", "kind", "title", "date_text", "date_start", "date_end", "date_precision",
            "date_approximate", "lines", "status"}  # fmt: skip
    assert keys <= set(claims[0])
    by_text = {c["text"][:40]: c for c in claims}
    step = by_text["Step-wise expert-similarity rewards and "]
    assert (step["date_text"], step["date_start"], step["date_end"], step["date_precision"]) == (
        "2025-06, 2025-10", "2025-06-01", "2025-10-31", "month",
    )  # fmt: skip
    assert step["date_approximate"] is False and step["status"] == "active" and len(step["lines"]) == 1
    squeeze = next(c for c in claims if c["title"] == "Does reinforcement learning squeeze exploration "
                   "diversity in search agents?")  # fmt: skip
    assert len(squeeze["lines"]) == 3 and squeeze["date_text"] is None

    lines = json.loads(monitor("--db", db_url, "lines", "--json", cwd=project).stdout)
    assert len(lines) == 4 and {ln["kind"] for ln in lines} == {"line"}
    table = monitor("--db", db_url, "lines", cwd=project)
    assert "4 inquiring line(s)" in table.stdout and "1 single-note document" in table.stdout
    one = [ln for ln in lines if ln["dated"]][0]["id"]
    only = json.loads(monitor("--db", db_url, "claims", "--line", one[:6], "--json", cwd=project).stdout)
    assert len(only) == 15 and all(one in c["lines"] for c in only)
    anchors = json.loads(monitor("--db", db_url, "anchors", "--json", cwd=project).stdout)
    assert len(anchors) == 8 and len({a["arxiv_id"] for a in anchors}) == 6
    assert {"2504.07912", "2510.25992"} <= {a["arxiv_id"] for a in anchors}
    assert "Echo Chamber" in monitor("--db", db_url, "anchors", cwd=project).stdout


@pytest.mark.parametrize(
    "fixture,where,expected",
    [
        ("no_header.txt", ":1: ", "expected an 'INQUIRING LINE' header or a 'Note · DATE' line"),
        ("sources_count.txt", ":11: ", "'Sources 3 notes' announces 3 notes but 2 follow"),
        ("bad_date.txt", ":22: ", "unreadable date 'sometime next spring'"),
        ("bad_date.yaml", ":7: ", "claims[1].date: unreadable date 'sometime next spring'"),
        # Unquoted YAML dates that are no calendar day: an error with file and line, not a traceback.
        ("impossible_day.yaml", ":4: ", "claims[0].date: unreadable date '2025-02-30'"),
        ("impossible_month.yaml", ":7: ", "lines[0].claims[1].date: unreadable date '2025-13-45'"),
    ],
)
def test_bad_seed_aborts_import(project: Path, db_url: str, fixture: str, where: str, expected: str) -> None:
    target = project / "seeds" / f"005_{fixture}"
    shutil.copy(BAD / fixture, target)
    result = monitor("--db", db_url, "seeds", "import", cwd=project)
    assert result.returncode == 3
    assert "Traceback" not in result.stderr
    message = " ".join(result.stderr.split())
    assert f"seeds/005_{fixture}{where}" in message and expected in message
    assert claim_rows(db_url) == (0, 0, 0)  # the four good files were not written either


def test_init_writes_a_complete_commented_config(project: Path) -> None:
    result = monitor("init", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "wrote monitor.toml" in result.stdout and "imported 5 files" in result.stdout
    assert (project / "reports").is_dir() and (project / "monitor.db").exists()
    text = (project / "monitor.toml").read_text()
    assert tomllib.loads(text).keys() == Settings.model_fields.keys()  # every section, nothing active
    # Uncommenting every setting that has a default gives back exactly the defaults.
    active = re.sub(r"^# (\w+ = (?!\s*\(no default\)).*)$", r"\1", text, flags=re.MULTILINE)
    (project / "active.toml").write_text(active)
    settings = load_settings(project / "active.toml")
    assert settings.model_dump() == Settings().model_dump()
    for section, info in Settings.model_fields.items():
        for key in info.annotation.model_fields:
            assert re.search(rf"^# {key} =", text, re.MULTILINE), f"{section}.{key} missing"
            assert f"MONITOR_{section.upper()}__{key.upper()}" in text
    assert 'one of: "auto", "embedded", "openai"' in text
    refused = monitor("init", cwd=project)
    assert refused.returncode == 2 and "monitor.toml already exists; use --force" in refused.stderr
    (project / "monitor.toml").write_text("# mine\n")
    forced = monitor("init", "--force", "--no-import", cwd=project)
    assert forced.returncode == 0 and (project / "monitor.toml").read_text() == text


@pytest.mark.parametrize(
    "config,expected,code",
    [
        ('[database]\nurl = "sqlite:///x.db"\n[judge]\nmodle = "x"\n', "judge.modle: unknown key", 2),
        ("[database\nurl = 1\n", "not valid TOML", 2),
        (b'[database]\nurl = "\xff"\n', "not valid TOML: not UTF-8 text", 2),
        (None, "cannot read config file", 2),  # a directory where the file should be
        ('[database]\nurl = "nosuchdb://x/y"\n', "is not usable", 4),
        ('[database]\nurl = "sqlite:////no/such/dir/m.db"\n', "database directory does not exist", 4),
        ('[database]\nurl = "postgresql://postgres@127.0.0.1:1/test"\n', "cannot open database", 4),
    ],
)
def test_config_and_database_errors_are_one_line(
    tmp_path: Path, config: str | bytes | None, expected: str, code: int
) -> None:
    path = tmp_path / "monitor.toml"
    if config is None:
        path.mkdir()
    elif isinstance(config, bytes):
        path.write_bytes(config)
    else:
        path.write_text(config)
    result = monitor("--config", str(path), "claims", cwd=tmp_path)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert expected in result.stderr


@pytest.mark.parametrize(
    "command",
    [["report"], ["verdicts"], ["show", "c1"], ["claims"], ["lines"], ["runs"], ["review", "list"]],
)
def test_reading_commands_in_the_wrong_folder_create_no_database(tmp_path: Path, command: list[str]) -> None:
    result = monitor(*command, cwd=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    message = " ".join(result.stderr.split())
    assert f"no database at {tmp_path / 'monitor.db'}" in message and "monitor init" in message
    assert not (tmp_path / "monitor.db").exists() and not (tmp_path / "reports").exists()


def test_reading_commands_on_a_database_without_our_tables_say_so(tmp_path: Path) -> None:
    import sqlite3

    sqlite3.connect(tmp_path / "other.db").close()  # an empty file from something else
    result = monitor("--db", f"sqlite:///{tmp_path / 'other.db'}", "verdicts", cwd=tmp_path)
    assert result.returncode == 4 and "holds no claim-monitor data yet" in result.stderr


def test_cut_file_and_unasked_retirement_exit_3_and_allow_retire_accepts(project: Path, db_url: str) -> None:
    assert monitor("--db", db_url, "seeds", "import", cwd=project).returncode == 0
    before = claim_rows(db_url)
    path = next((project / "seeds").glob("000_*.txt"))
    full = path.read_text()
    path.write_text("".join(full.splitlines(keepends=True)[:71]))  # `head -n 71`, the reported case
    cut = monitor("--db", db_url, "seeds", "import", cwd=project)
    assert cut.returncode == 3 and "Traceback" not in cut.stderr
    assert f"seeds/{path.name}:71: " in cut.stderr and "looks cut off" in cut.stderr
    lines = full.split("\n")
    path.write_text("\n".join(ln for ln in lines if not ln.startswith("• arXiv:2505.11711")))
    refused = monitor("--db", db_url, "seeds", "import", cwd=project)
    assert refused.returncode == 3 and "would retire 1 anchor" in refused.stderr
    assert "arXiv:2505.11711" in refused.stderr and "--allow-retire" in refused.stderr
    assert claim_rows(db_url) == before
    done = monitor("--db", db_url, "seeds", "import", "--allow-retire", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "retired as asked: 1 anchor" in done.stdout and "arXiv:2505.11711" in done.stdout
    assert monitor("--db", db_url, "seeds", "import", cwd=project).returncode == 0
