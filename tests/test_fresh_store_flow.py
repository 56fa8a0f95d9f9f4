"""`monitor fetch && monitor judge && monitor report` on a fresh store: the three commands alone do the job.

`judge` syncs the claims and runs the relevance stage itself, and `report`'s default period follows a
store filled from a snapshot to the snapshot's last week.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from ops_helpers import monitor, write_config, write_snapshot
from sqlalchemy import func, select

from monitor.store import open_store
from monitor.store.models import Assessment, Candidate, Claim
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
