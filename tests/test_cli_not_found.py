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
