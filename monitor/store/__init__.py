"""The store: SQLAlchemy models, the engine, migrations."""

from monitor.store.db import SCHEMA_VERSION, Store, open_store, redact

__all__ = ["SCHEMA_VERSION", "Store", "open_store", "redact"]
