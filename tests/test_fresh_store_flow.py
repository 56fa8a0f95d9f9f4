"""A fresh store: the README quickstart, and `monitor fetch && monitor judge && monitor report`.

`judge` syncs the claims and runs the relevance stage itself, and `report`'s default period follows a
store filled from a snapshot to the snapshot's last week.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from ops_helpers import MONITOR, REPO, env, monitor, write_config, write_snapshot
from sqlalchemy import func, select

from monitor.store import open_store
from monitor.store.models import Assessment, Candidate, Claim, Paper
from monitor.store.records import Digest


def test_fetch_judge_report_on_a_fresh_store(db_url: str, tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.jsonl"
    assert write_snapshot(snapshot, dt.date(2025, 3, 3), dt.date(2025, 3, 16), limit=40) > 0
    config = write_config(tmp_path, db_url)

    fetched = monitor(config, "fetch", "--source", str(snapshot))
    assert fetched.returncode == 0, fetched.stderr
    judged = monitor(config, "judge")
    assert judged.returncode == 0, judged.stderr
    assert "relevance:" in judged.stdout
    reported = monitor(config, "report")
    assert reported.returncode == 0, reported.stderr

    store = open_store(db_url)
    try:
        with store.session() as s:
            claims = s.scalar(select(func.count()).select_from(Claim))
            candidates = s.scalar(select(func.count()).select_from(Candidate))
            assessed = s.scalar(select(func.count()).select_from(Assessment))
            digest = s.scalars(select(Digest)).one()
    finally:
        store.close()
    assert claims == 35  # the shipped seeds
    assert candidates > 0 and assessed == candidates
    # The snapshot's newest papers are from ISO week 2025-W11, months before today: that week is reported.
    assert digest.period_key == "2025-W11"
    assert Path(digest.markdown_path).read_text(encoding="utf-8").startswith("# ")

    again = monitor(config, "judge")
    assert again.returncode == 0, again.stderr
    store = open_store(db_url)
    try:
        with store.session() as s:
            assert s.scalar(select(func.count()).select_from(Assessment)) == assessed  # nothing judged twice
    finally:
        store.close()


@pytest.mark.slow
def test_the_sample_quickstart_judges_the_reported_week_and_says_what_comes_next(tmp_path: Path) -> None:
    """`monitor run --source sample` in a fresh directory holding only seeds/, as the README says."""
    shutil.copytree(REPO / "seeds", tmp_path / "seeds")
    done = subprocess.run(
        [MONITOR, "run", "--source", "sample"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env(MONITOR_PROGRESS_INTERVAL="1"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    store = open_store(f"sqlite:///{tmp_path / 'monitor.db'}")
    try:
        with store.session() as s:
            judged_days = s.scalars(
                select(Paper.published).join(Assessment, Assessment.arxiv_id == Paper.arxiv_id)
            ).all()
            papers = s.scalar(select(func.count()).select_from(Paper))
            candidates = s.scalar(select(func.count()).select_from(Candidate))
            digest = s.scalars(select(Digest)).one()
    finally:
        store.close()
    # The sample's last week (its newest paper is from 2026-08-21) is the digest's, and all that is judged.
    assert digest.period_key == "2026-W34" and papers == 4529
    assert judged_days and min(judged_days) >= dt.date(2026, 8, 17)
    assert len(judged_days) < candidates  # the rest waits for `monitor judge`
    waiting = candidates - len(judged_days)
    out = " ".join(done.stdout.split())  # rich wraps at 80 columns off a terminal
    assert f"Judged the papers of 2026-W34 only, the digest's period. {waiting:,} candidate pairs" in out
    assert "`monitor doctor`" in out and "`monitor judge --dry-run --judge openai`" in out
    assert f"Not judged yet: {waiting:,} candidate pairs" in Path(tmp_path, digest.markdown_path).read_text()
    # Relevance over 4,529 papers outlasts a second: stderr (a pipe) carried its progress lines.
    assert re.search(r"^progress: relevance \d+/4529 papers, \d+s elapsed$", done.stderr, re.M), done.stderr
