"""Writing files that readers (a mail job, a feed reader, `monitor eval`) never see half-written."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

from monitor.testhooks import pause_at

STALE_TEMP_SECONDS = 600  # a temp file this old belongs to a write that was killed, not a running one


def write_atomic(path: Path, text: str) -> None:
    """Write via a temp file in the same folder and rename, so readers never see half a file.

    The file gets the mode a plain write would (0666 less the umask; mkstemp makes 0600), and temp
    files that a killed earlier write of the same file left behind are removed.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*"):
        with contextlib.suppress(OSError):
            if time.time() - stale.stat().st_mtime > STALE_TEMP_SECONDS:
                stale.unlink()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            half = len(text) // 2
            fh.write(text[:half])
            fh.flush()
            pause_at(f"write:{path.name}")  # test-only: a crash test kills the process mid-write here
            fh.write(text[half:])
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)  # reading the umask means setting it; put it straight back
    os.umask(current)
    return current
