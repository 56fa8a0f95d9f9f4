"""A first run anywhere: `monitor init` in a new folder leaves a commented example claim file and offers the
shipped seed exports (`--example`, a prompt at a terminal, `monitor seeds example`), so `monitor run
--source sample` works outside the repository; the exports ship in the package (monitor/scaffold.py).
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from ops_helpers import MONITOR, REPO, bare_environ, bare_monitor
from sqlalchemy import func, select

from monitor.claims.userfile import parse_user_file
from monitor.scaffold import EXAMPLE_CLAIMS, shipped_seed_exports
from monitor.store import open_store
from monitor.store.models import Claim
from monitor.store.records import Digest

SEEDS = sorted((REPO / "seeds").glob("*.txt"))


def _claims(folder: Path) -> int:
    store = open_store(f"sqlite:///{folder / 'monitor.db'}")
    try:
        with store.session() as s:
            return int(s.scalar(select(func.count()).select_from(Claim)) or 0)
    finally:
        store.close()


def test_init_in_a_new_folder_leaves_a_commented_example_claim_file_and_says_how_to_get_the_seeds(
    tmp_path: Path,
) -> None:
    """Before, seeds/ was left empty: `monitor run --source sample` then exited 3, "no claim files found"."""
    done = bare_monitor("init", "--no-detect", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    example = tmp_path / "seeds" / EXAMPLE_CLAIMS
    doc = parse_user_file(example)
    assert [len(line.claims) for line in doc.lines] == [2] and doc.lines[0].anchors
    text = example.read_text(encoding="utf-8")
    # Every field the format has is used, each under a comment saying what it is and whether required.
    lines = text.splitlines()
    keys = (
        "lines",
        "question",
        "framing",
        "body",
        "topics",
        "claims",
        "text",
        "date",
        "title",
        "anchors",
        "arxiv",
    )
    for key in keys:
        at = next(i for i, line in enumerate(lines) if re.match(rf"^\s*(- )?{key}:", line))
        assert lines[at - 1].strip().startswith("#"), (key, lines[at - 1])
    assert "Required" in text and "Optional" in text
    assert not list((tmp_path / "seeds").glob("*.txt"))  # the exports are offered, not copied unasked
    out = " ".join(done.stdout.split())
    assert "`monitor seeds example` copies them" in out
    assert _claims(tmp_path) == 2  # the example was imported


def test_init_example_copies_the_shipped_seed_exports_as_they_are_in_the_repository(tmp_path: Path) -> None:
    done = bare_monitor("init", "--no-detect", "--example", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    copied = sorted((tmp_path / "seeds").glob("*.txt"))
    assert [p.name for p in copied] == [p.name for p in SEEDS]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(copied, SEEDS, strict=True))
    assert _claims(tmp_path) == 35 + 2  # the seeds' claims and the example's


def test_the_packaged_seed_exports_are_the_repository_s() -> None:
    """Two copies of five files (the package's, for any folder; the checkout's seeds/, for the README's
    quickstart in it): they must not drift apart."""
    shipped = shipped_seed_exports()
    assert [f.name for f in shipped] == [p.name for p in SEEDS]
    assert all(f.read_bytes() == p.read_bytes() for f, p in zip(shipped, SEEDS, strict=True))


def test_seeds_example_adds_the_exports_to_a_project_and_keeps_what_is_there(tmp_path: Path) -> None:
    assert bare_monitor("init", "--no-detect", cwd=tmp_path).returncode == 0
    mine = tmp_path / "seeds" / SEEDS[0].name
    mine.write_text(SEEDS[0].read_text(encoding="utf-8"), encoding="utf-8")
    done = bare_monitor("seeds", "example", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"copied {len(SEEDS) - 1} shipped seed export(s)" in done.stdout
    assert f"kept seeds/{SEEDS[0].name}" in done.stdout
    assert _claims(tmp_path) == 35 + 2


def test_init_at_a_terminal_asks_whether_to_copy_the_seed_exports(tmp_path: Path) -> None:
    """At a terminal (a pseudo-terminal here) the prompt offers the exports; yes copies them."""
    main, side = pty.openpty()
    try:
        proc = subprocess.Popen(
            [MONITOR, "init", "--no-detect", "--no-import"],
            cwd=tmp_path, stdin=side, stdout=side, stderr=side, env=bare_environ(), close_fds=True,
        )  # fmt: skip
        os.close(side)
        seen = b""
        while b"[Y/n]" not in seen:
            chunk = os.read(main, 4096)
            assert chunk, seen
            seen += chunk
        os.write(main, b"y\n")
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(timeout=120) == 0, seen.decode(errors="replace")
    finally:
        os.close(main)
    assert b"Copy the shipped seed exports" in seen
    assert sorted(p.name for p in (tmp_path / "seeds").glob("*.txt")) == [p.name for p in SEEDS]


@pytest.mark.slow
def test_a_first_run_in_a_new_folder_works_from_the_example_alone(tmp_path: Path) -> None:
    assert bare_monitor("init", "--no-detect", cwd=tmp_path).returncode == 0
    done = bare_monitor("run", "--source", "sample", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    store = open_store(f"sqlite:///{tmp_path / 'monitor.db'}")
    try:
        with store.session() as s:
            digest = s.scalars(select(Digest)).one()
    finally:
        store.close()
    assert digest.period_key == "2026-W34" and (tmp_path / digest.markdown_path).exists()


@pytest.mark.slow
def test_the_wheel_carries_the_seed_exports_and_the_example(tmp_path: Path) -> None:
    """Built from a copy of the checkout (setuptools writes build/ beside the sources), not editable;
    setuptools comes from the package index, as `pip install .` gets it."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("monitor", "prompts"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path, "."],
        cwd=source, check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    wheel = next(tmp_path.glob("claim_monitor-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"monitor/data/seeds/{p.name}" for p in SEEDS} <= names
    assert "monitor/data/example_claims.yaml" in names
