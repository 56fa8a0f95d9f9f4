"""Test helper: a private, throwaway PostgreSQL cluster, to stop or freeze without touching the shared
one on :5432.

`initdb` into a fresh folder with Debian's binaries (/usr/lib/postgresql/*/bin), then `postgres` on a
free port of 127.0.0.1. `freeze` sends SIGSTOP to the postmaster and to each of its children (every
backend is a session leader of its own, so one process group would not do): connections stay open
and nothing answers, as on a frozen host. PostgreSQL refuses to run as root, so as root it runs as
the `postgres` user (Popen's `user=`, no wrapper process that job control could stop too), in a
folder made for it under /tmp (a pytest tmp_path is private to root). Skips, saying why, where the
binaries or that user are missing.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Cluster:
    bin: Path
    folder: Path
    port: int
    owner: str | None  # the user the binaries run as (root: postgres); None: this process's own
    proc: subprocess.Popen[bytes] | None = None
    frozen: bool = False

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - the server writes it until it stops
        self.proc = subprocess.Popen(
            [
                str(self.bin / "postgres"),
                "-D", str(self.folder / "data"),
                "-p", str(self.port),
                "-k", str(self.folder),
                "-c", "listen_addresses=127.0.0.1",
                "-c", "fsync=off",
            ],  # fmt: skip
            stdout=log,
            stderr=log,
            start_new_session=True,  # apart from the test's own process group and terminal
            user=self.owner,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready = subprocess.run(
                [str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)], capture_output=True
            )
            if ready.returncode == 0:
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited: {(self.folder / 'server.log').read_text()[-2000:]}")
            time.sleep(0.1)
        raise RuntimeError("postgres did not accept connections within 60 s")

    def _postmaster(self) -> int:
        return int((self.folder / "data" / "postmaster.pid").read_text().split()[0])

    def _processes(self) -> list[int]:
        """The postmaster and its children (backends, checkpointer, ...)."""
        main = self._postmaster()
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError):
                # the field after the ")" that ends the command name: state, then the parent's pid
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == main:
                    children.append(int(stat.parent.name))
        return [main, *children]

    def _signal(self, pids: list[int], sig: signal.Signals) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def stop(self) -> None:
        """A fast shutdown: backends are told to quit, connections close, nothing listens after."""
        if self.proc is None:
            return
        self.thaw()
        with contextlib.suppress(OSError, ValueError):
            os.kill(self._postmaster(), signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._signal(self._processes(), signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.proc = None

    def freeze(self) -> None:
        """SIGSTOP the postmaster (no new backends) and then every child it has."""
        self._signal([self._postmaster()], signal.SIGSTOP)
        self.frozen = True
        self._signal(self._processes()[1:], signal.SIGSTOP)

    def thaw(self) -> None:
        if self.proc is not None and self.frozen:
            self._signal(list(reversed(self._processes())), signal.SIGCONT)
            self.frozen = False


@contextlib.contextmanager
def private_cluster() -> Iterator[Cluster]:
    """A running throwaway cluster, stopped and removed afterwards."""
    binaries = _binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)")
    owner = None
    folder = Path(tempfile.mkdtemp(prefix="monitor-pg-"))
    if os.geteuid() == 0:
        try:
            found = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(folder)
            pytest.skip("running as root and there is no `postgres` user to run a private cluster as")
        os.chown(folder, found.pw_uid, found.pw_gid)
        owner = "postgres"
    cluster = Cluster(binaries, folder, _free_port(), owner)
    try:
        init = subprocess.run(
            [str(binaries / "initdb"), "-D", str(folder / "data"), "-A", "trust", "-U", "postgres",
             "--no-sync"],  # fmt: skip
            user=owner,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if init.returncode != 0:
            pytest.skip(f"initdb failed here: {init.stderr.strip()[-300:]}")
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
