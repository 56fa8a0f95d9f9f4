"""The store: SQLAlchemy models, the engine, migrations."""

from monitor.store import records  # noqa: F401  (every table on Base: foreign keys cross both modules)
from monitor.store.db import SCHEMA_VERSION, Store, open_store, redact

__all__ = ["SCHEMA_VERSION", "Store", "open_store", "redact"]
