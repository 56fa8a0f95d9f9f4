"""An id or name that does not exist is a usage error (exit 64) in every command, and `--version`."""

from __future__ import annotations

import re
import tomllib

import pytest
from digest_world import World, sample
from test_report_digest import REPO, main_in_process

from monitor import __version__

UNKNOWN = [
    ["show", "nope"],
    ["claims", "--line", "nope"],
    ["verdicts", "--line", "nope", "--no-refresh"],
    ["retest", "--claim", "nope"],
    ["retest", "--line", "nope"],
    ["judge", "--claim", "nope", "--skip-relevance", "--dry-run"],
    ["relevance", "--claim", "nope"],
    ["review", "set", "999999", "--dismiss"],
    ["review", "reword", "accept", "999999"],
    ["review", "reword", "reject", "999999"],
    ["review", "reword", "propose", "nope"],
]


@pytest.mark.parametrize("args", UNKNOWN, ids=lambda a: " ".join(a))
def test_an_unknown_id_exits_64_naming_it(args, sqlite_url, tmp_path, monkeypatch, capsys) -> None:
    from monitor.store import open_store

    store = open_store(sqlite_url)
    sample(World(store))
    store.close()
    monkeypatch.setenv("MONITOR_JUDGE__PROVIDER", "local")
    code, _, err = main_in_process(args, sqlite_url, tmp_path, monkeypatch, capsys)
    assert code == 64, (args, err)
    assert re.search(r"nope|999999", err), err


def test_version_prints_the_packages_version(tmp_path, monkeypatch, capsys) -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert __version__ == declared
    code, out, err = main_in_process(["--version"], "sqlite:///unused.db", tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert out.strip() == f"claim-monitor {declared}"
    assert not (tmp_path / "unused.db").exists()


# --- issue 33.13: an id prefix is matched as typed, however long --------------------------------------


def _imported(db_url: str, tmp_path) -> list[str]:
    from ops_helpers import cli

    from monitor.store import open_store
    from monitor.store.claims import active_claims

    done = cli("--db", db_url, "seeds", "import", str(REPO / "seeds"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    store = open_store(db_url)
    with store.session() as s:
        ids = [c.id for c in active_claims(s)]
    store.close()
    return ids


def test_underscore_and_percent_in_an_id_prefix_are_not_wildcards(db_url, tmp_path) -> None:
    """`monitor show c-11_b` opened c-117ba16fa085: `_` and `%` were LIKE wildcards."""
    from ops_helpers import cli

    ids = _imported(db_url, tmp_path)
    one = ids[0]
    assert cli("--db", db_url, "show", one[:6], cwd=tmp_path).returncode == 0  # a real prefix still works
    for typed in (one[:5] + "_" + one[6:9], "c-%", "%", one[:4] + "%"):
        done = cli("--db", db_url, "show", typed, cwd=tmp_path)
        assert done.returncode == 64, (typed, done.stdout)
        assert f"no claim with id {typed!r}" in done.stderr, done.stderr
        assert one not in done.stdout


@pytest.mark.parametrize(
    "args", [["show", "c-{long}"], ["claims", "--line", "l-{long}"]], ids=["show", "line"]
)
def test_a_70_kb_id_is_not_found_in_one_short_line(db_url, tmp_path, args) -> None:
    """A pasted 70 KB id was a traceback on SQLite (LIKE pattern too complex) that echoed the pattern."""
    from ops_helpers import cli

    _imported(db_url, tmp_path)
    long = "a" * 70_000
    done = cli("--db", db_url, *[a.format(long=long) for a in args], cwd=tmp_path)
    assert done.returncode == 64, done.stderr[-500:]
    assert "Traceback" not in done.stderr and len(done.stderr) < 300, done.stderr[-500:]
    assert "aaaa'… (70,002 characters)" in " ".join(done.stderr.split())
