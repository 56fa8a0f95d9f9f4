"""The stages import one way (docs/architecture.md): a layer may import the layers below it, never above.

Read from the source with `ast`, so a new import that points upward fails here before it becomes a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "monitor"

# Layer of each top-level part of the package; equal layers must not import each other either.
LAYERS: dict[str, int] = {
    "__init__": 0, "errors": 0, "testhooks": 0, "crontab": 0, "progress": 0, "text": 0, "markup": 0,
    "backoff": 0, "terminal": 0, "judge_names": 0,
    "files": 1, "config": 1,
    "store": 2,
    "sources": 3, "claims": 3, "embeddings": 3, "llm": 3, "scaffold": 3,
    "relevance": 4,
    "judge": 5,
    "verdicts": 6,
    "review": 7,
    "report": 8,
    "web": 9,
    "schedule": 10,
    "cli": 11,
    "__main__": 12,
}  # fmt: skip


def _part(module: str) -> str:
    """The top-level part `module` belongs to; a name imported from `monitor` itself is its __init__'s."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "__init__"


def _imports(source: str, module: str) -> set[str]:
    """The `monitor` modules that `source` (the text of dotted `module`) imports, relative ones resolved.

    `from monitor import judge` names the module `monitor.judge`, and `from .. import judge` inside
    `monitor.store.x` is the same import, so both are judged by the layer of what they name.
    """
    package = module.split(".")[:-1]  # a module's relative imports start from its package
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module.split(".") if node.module else []
            if node.level:
                up = len(package) - (node.level - 1)
                assert up >= 1, f"{module}: a relative import goes above the package"
                base = package[:up] + base
            if base[:1] != ["monitor"]:
                continue
            found.update(".".join([*base, a.name]) for a in node.names if a.name != "*")
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "monitor")
    return found


def _upward(source: str, module: str) -> list[str]:
    """The imports of `module` that point to its own layer or above (a part imports itself freely)."""
    here = _part(module)
    found = _imports(source, module)
    return sorted(m for m in found if _part(m) != here and LAYERS[_part(m)] >= LAYERS[here])


def _module(path: Path) -> str:
    """The dotted name of `path`; a package keeps its `__init__` so that its relative imports start there."""
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    parts -= {"data", "templates", "__pycache__"}
    assert parts == set(LAYERS), f"give each a layer here and in docs/architecture.md: {parts ^ set(LAYERS)}"


def test_imports_only_point_down() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found = _upward(path.read_text(encoding="utf-8"), _module(path))
        upward += [f"{path.relative_to(PACKAGE.parent)} imports {m}" for m in found]
    assert upward == []


@pytest.mark.parametrize(
    "source",
    [
        "from monitor.judge import runner",
        "import monitor.judge.runner",
        "from monitor import judge",  # a package-level import naming a stage above
        "from monitor import errors, judge",
        "from .. import judge",  # relative imports that go up out of store/
        "from ..judge.runner import judge_pending",
        "from ...monitor import judge",
    ],
)
def test_an_import_of_a_higher_stage_is_caught_in_every_form(source: str) -> None:
    try:
        found = _upward(source, "monitor.store.records")
    except AssertionError as exc:  # above the package itself: refused outright
        assert "above the package" in str(exc)
    else:
        assert found and all(m.startswith("monitor.judge") for m in found), found


@pytest.mark.parametrize(
    "source",
    [
        "from monitor import errors",
        "from monitor import __version__",
        "from . import models",
        "from .models import Paper",
        "from .. import text",
    ],
)
def test_imports_downward_or_within_the_part_pass(source: str) -> None:
    assert _upward(source, "monitor.store.records") == []


def test_a_package_init_resolves_its_relative_imports_from_itself() -> None:
    assert _module(PACKAGE / "store" / "__init__.py") == "monitor.store.__init__"
    assert _upward("from . import records", "monitor.store.__init__") == []
    assert _upward("from .. import judge", "monitor.store.__init__") == ["monitor.judge"]
