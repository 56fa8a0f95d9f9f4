"""Writing files that readers (a mail job, a feed reader, `monitor eval`) never see half-written.

Each file is written to a temp file in its folder (`.<name>.<random>.<host>-<pid>.tmp`) and renamed
into place. A process killed mid-write leaves its temp file behind; the next write into that folder
removes the temp files of writers that are dead (same host, pid gone) and any older than
STALE_TEMP_SECONDS (a writer on another host sharing the folder), whatever file they were for.
A failure to write (no such folder, a path under a regular file, disk full) is one FileWriteError.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from monitor.errors import FileWriteError
from monitor.testhooks import pause_at

STALE_TEMP_SECONDS = 600  # a temp file this old belongs to a write that was killed, not a running one
HOST_TAG = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
_TEMP = re.compile(r"^\..+\.(?P<host>[0-9a-f]{8})-(?P<pid>\d+)\.tmp$")

T = TypeVar("T")


def write_atomic(path: Path, text: str) -> None:
    """Write via a temp file in the same folder and rename, so readers never see half a file."""
    write_together({path: text}, lambda: None)


def write_together(texts: dict[Path, str], record: Callable[[], T]) -> T:
    """Write every file, then call `record` (e.g. the database row that lists them); all or nothing.

    Every text goes to a temp file first, so a full disk or a bad folder changes no file. They are
    then renamed into place and `record` runs; if a rename or `record` fails, the files this call
    created are removed again (one it replaced keeps its new, complete text: a rerun re-records it).
    The files get the mode a plain write would (0666 less the umask; mkstemp makes 0600).
    """
    staged: dict[Path, str] = {}
    created: list[Path] = []
    try:
        for path, text in texts.items():
            with _naming(path):
                staged[path] = _stage(path, text)
        for path, tmp in staged.items():
            if not path.exists():
                created.append(path)
            with _naming(path):
                os.replace(tmp, path)
        return record()
    except BaseException:
        for tmp in staged.values():
            Path(tmp).unlink(missing_ok=True)
        for path in created:
            path.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """An OSError inside becomes one FileWriteError line naming `path` and the reason."""
    try:
        yield
    except OSError as exc:
        raise FileWriteError(f"cannot write {path}: {exc.strerror or exc}") from None


def _stage(path: Path, text: str) -> str:
    """`text` in a new temp file next to `path`; returns the temp file's name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path.parent, also=f".{path.name}.")
    suffix = f".{HOST_TAG}-{os.getpid()}.tmp"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            half = len(text) // 2
            fh.write(text[:half])
            fh.flush()
            pause_at(f"write:{path.name}")  # test-only: a crash test kills the process mid-write here
            fh.write(text[half:])
        os.chmod(tmp, 0o666 & ~_umask())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def remove_stale_temps(folder: Path, also: str | None = None) -> None:
    """Remove temp files that killed writes left in `folder` (see the module docstring).

    `also`: a prefix whose old dot-files go too whatever their name ends in (temp files of the same
    target written before the names carried host and pid); other dot-files are the user's, kept.
    """
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            ours = _TEMP.match(entry.name) is not None
            if not (ours or (also and entry.name.startswith(also))) or not entry.is_file():
                continue
            with contextlib.suppress(OSError):
                if _abandoned(entry.name) or now - entry.stat().st_mtime > STALE_TEMP_SECONDS:
                    entry.unlink()


def _abandoned(name: str) -> bool:
    """A temp file of ours whose writer ran on this host and has died."""
    match = _TEMP.match(name)
    if match is None or match["host"] != HOST_TAG:
        return False
    pid = int(match["pid"])
    if pid == os.getpid():
        return False  # this process's own write in progress (another thread)
    return not pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (signal 0 asks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _umask() -> int:
    current = os.umask(0)  # reading the umask means setting it; put it straight back
    os.umask(current)
    return current
