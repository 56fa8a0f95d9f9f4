"""Schema migrations: one module per step, `vNNNN_what.py`, applied in order by `store.db.migrate`.

Version 1 is the first schema frozen as the SQL claim-monitor 0.1 ran (v0001_initial.<dialect>.sql);
every later step changes exactly the schema the step before it left, so none checks what exists.

Adding a step (see docs/architecture.md, "Changing the schema"): add `vNNNN_<what>.py` with the next
number and a `upgrade(conn: Connection) -> None` that writes the change as DDL (a new table as a frozen
`Table` on its own MetaData, not the model class, which will change later), and change the models to
match. Never edit or renumber a step that has shipped. tests/test_store_migrate.py checks that a fresh
store equals the models and that a store of every earlier version upgrades to them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection


@dataclass(frozen=True)
class Step:
    version: int
    name: str
    upgrade: Callable[[Connection], None]


def _steps() -> list[Step]:
    found = []
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("v") and module.name[1:5].isdigit():
            loaded = importlib.import_module(f"{__name__}.{module.name}")
            found.append(Step(int(module.name[1:5]), module.name, loaded.upgrade))
    found.sort(key=lambda s: s.version)
    if [s.version for s in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"schema migrations are not numbered 1..n: {[s.name for s in found]}")
    return found


STEPS: list[Step] = _steps()
SCHEMA_VERSION: int = STEPS[-1].version
