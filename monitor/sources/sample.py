"""The sample shipped inside the package (`monitor/data/sample.jsonl.gz`, see `SAMPLE.md` there), so
`monitor fetch --source sample` works on a fresh machine with no network. Rebuilt by
`bench/make_sample.py` from the shared corpus.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from monitor.config import Settings
from monitor.errors import ConfigError

SAMPLE_NAME = "sample.jsonl.gz"


def shipped_sample() -> Path:
    return Path(str(resources.files("monitor") / "data" / SAMPLE_NAME))


def sample_path(settings: Settings) -> Path:
    """`arxiv.sample_path` if configured, else the shipped sample."""
    path = settings.arxiv.sample_path or shipped_sample()
    if not path.exists():
        raise ConfigError(f"sample file not found: {path} (arxiv.sample_path, or reinstall claim-monitor)")
    return path
