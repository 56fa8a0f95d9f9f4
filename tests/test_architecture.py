"""The stages import one way (docs/architecture.md): a layer may import the layers below it, never above.

Read from the source with `ast`, so a new import that points upward fails here before it becomes a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "monitor"

# Layer of each top-level part of the package; equal layers must not import each other either.
LAYERS: dict[str, int] = {
    "__init__": 0, "errors": 0, "testhooks": 0, "crontab": 0, "progress": 0, "text": 0, "markup": 0,
    "backoff": 0,
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
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "monitor":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "monitor")
    return found


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    parts -= {"data", "templates", "__pycache__"}
    assert parts == set(LAYERS), f"give each a layer here and in docs/architecture.md: {parts ^ set(LAYERS)}"


def test_imports_only_point_down() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for module in _imports(path):
            there = _part(module)
            if there != here and LAYERS[there] >= LAYERS[here]:
                upward.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    assert upward == []
