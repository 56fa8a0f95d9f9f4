"""`anchors verify`: id_list look-ups (recorded and synthetic) or a snapshot, and the matching rules."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from arxiv_replay import ArxivReplay, replay_settings, rows_from_corpus
from sqlalchemy import select

from monitor.config import Settings
from monitor.sources.anchors import dates_match, title_coverage, titles_match, verify_anchors
from monitor.store import open_store
from monitor.store.models import Anchor, Line


def add_anchors(store, anchors: list[tuple[str, str | None, str | None]]) -> None:
    with store.session() as s:
        s.add(Line(id="l1", question="Does RL only sharpen?"))
        s.flush()
        for i, (arxiv_id, date, title) in enumerate(anchors):
            s.add(
                Anchor(line_id="l1", arxiv_id=arxiv_id, cited_date_text=date, cited_title=title, position=i)
            )


def statuses(store) -> dict[str, str]:
    with store.session() as s:
        return {a.arxiv_id: a.status for a in s.scalars(select(Anchor))}


@pytest.mark.parametrize(
    ("cited", "found", "match"),
    [
        (
            "RL finetunes small subnetworks",
            "Reinforcement Learning Finetunes Small Subnetworks in Large Language Models",
            True,
        ),
        (
            "RL amplifies pretraining behaviors",
            "Echo Chamber: RL Post-training Amplifies Behaviors Learned in Pretraining",
            True,
        ),
        (
            "Natural language + numerical feedback",
            "Critique-GRPO: Advancing LLM Reasoning with Natural Language and Numerical Feedback",
            True,
        ),
        (
            "Supervised RL with step-wise rewards",
            "Supervised Reinforcement Learning: From Expert Trajectories to Step-wise Reasoning",
            True,
        ),
        ("Scaling laws for reward model overoptimization", "Heat-bath random walks with Markov bases", False),
        ("LLM calibration after RLHF", "Calibrating Language Models After Preference Tuning", False),
    ],
)
def test_title_rule_accepts_shortened_titles_and_rejects_others(cited: str, found: str, match: bool) -> None:
    assert titles_match(cited, found) is match, title_coverage(cited, found)


def test_date_rule() -> None:
    assert dates_match("2025-05", dt.date(2025, 5, 16))
    assert dates_match("2025-05", dt.date(2025, 4, 28))  # within a week of the cited month
    assert not dates_match("2025-05", dt.date(2025, 3, 1))
    assert dates_match("~2024", dt.date(2024, 12, 30))
    assert dates_match(None, dt.date(2024, 1, 1))


def test_recorded_id_list_lookup_in_one_request(db_url: str) -> None:
    store = open_store(db_url)
    add_anchors(
        store,
        [
            ("0808.05394", "2008-08", "Some paper"),  # arXiv's recorded answer has no such paper
            ("1707.08567", "2016-01", "Workshop AEW10: concepts in information theory"),  # really 2017-07
            ("abc", "2020", "Not an id"),  # never sent: arXiv would reject the whole id_list
        ],
    )
    with ArxivReplay() as server:
        report = verify_anchors(store, replay_settings(server, db_url))
        assert [r.query["id_list"] for r in server.log] == ["0808.05394,1707.08567"]
    assert report.requests == 1
    assert statuses(store) == {"0808.05394": "not_found", "1707.08567": "date_differs", "abc": "not_found"}
    with store.session() as s:
        row = s.scalars(select(Anchor).where(Anchor.arxiv_id == "1707.08567")).one()
        assert row.found_title.startswith("Proceedings of Workshop AEW10")
        assert row.found_published == dt.date(2017, 7, 27) and row.checked_at is not None
    store.close()


def seed_anchor_rows(shared: Path) -> list[dict]:
    wanted = {"2506.03106", "2510.25992", "2605.22817", "2411.16579"}
    out = []
    with (shared / "arxiv" / "corpus.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            if row["arxiv_id"] in wanted:
                out.append(row)
    return out


def test_seed_anchors_online_and_offline_agree(db_url: str, shared: Path, tmp_path: Path) -> None:
    anchors = [
        ("2506.03106", "2025-06", "Natural language + numerical feedback"),
        ("2510.25992", "2025-10", "Supervised RL with step-wise rewards"),
        ("2605.22817", "2026-05", "Reward hacking in multi-agent debate"),
        ("2411.16579", "2023-02", "Enhancing LLM Reasoning via Critique Models"),
        ("2504.07912", "2025-04", "RL amplifies pretraining behaviors"),  # not in the corpus
    ]
    expected = {
        "2506.03106": "grounded",
        "2510.25992": "grounded",
        "2605.22817": "title_differs",
        "2411.16579": "date_differs",
        "2504.07912": "not_found",
    }
    store = open_store(db_url)
    add_anchors(store, anchors)
    with ArxivReplay(rows_from_corpus(seed_anchor_rows(shared)), fixtures=None) as server:
        report = verify_anchors(store, replay_settings(server, db_url))
    assert report.requests == 1
    assert statuses(store) == expected
    assert report.counts() == {
        "grounded": 2,
        "title_differs": 1,
        "date_differs": 1,
        "not_found": 1,
        "not_in_snapshot": 0,
        "requests": 1,
    }
    offline = verify_anchors(
        store, Settings(database={"url": db_url}), source=str(shared / "arxiv" / "corpus.jsonl")
    )
    # Offline, an id the snapshot lacks is "not in snapshot", never "not found".
    assert offline.requests == 0 and statuses(store) == {**expected, "2504.07912": "not_in_snapshot"}
    store.close()
