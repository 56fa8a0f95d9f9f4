"""Relevance stage against a real store (SQLite and PostgreSQL): selection, incrementality, reruns."""

from __future__ import annotations

import numpy as np
import pytest
from ops_helpers import cli
from sqlalchemy import func, select

from monitor.claims.ids import claim_id, text_hash
from monitor.config import Settings
from monitor.llm.texts import ClaimText, PaperText
from monitor.relevance import select as select_module
from monitor.relevance import select_candidates
from monitor.store.models import (
    Candidate,
    Claim,
    Embedding,
    Line,
    LineClaim,
    Paper,
    PaperVersion,
    RelevanceMark,
)

SPARSITY = "Reinforcement learning fine-tuning updates only a small subnetwork of model parameters"
CALIBRATION = "Binary correctness rewards degrade the calibration of language model confidence"

RELEVANT = (
    "Sparse parameter updates in reinforcement learning fine-tuning of language models",
    "We find that reinforcement learning fine-tuning of large language models updates only a small "
    "subnetwork of the parameters: 70-95% of weights stay unchanged across RL algorithms.",
)
UNRELATED = (
    "Graph neural networks for traffic forecasting in smart cities",
    "We propose a spatio-temporal graph neural network that predicts road traffic speed from sensor "
    "readings and outperforms baselines on two city datasets.",
)


def filler(i: int) -> tuple[str, str]:
    topics = [
        "image segmentation",
        "speech recognition",
        "protein folding",
        "weather prediction",
        "robot grasping",
        "music generation",
        "code search",
        "table parsing",
    ]
    t = topics[i % len(topics)]
    return (
        f"A study of {t} number {i}",
        f"We study {t} with a new benchmark, variant {i}, and report results.",
    )


def settings_for(**relevance: object) -> Settings:
    s = Settings()
    values = {"method": "bm25", **relevance}
    for key, value in values.items():
        setattr(s.relevance, key, value)
    return s


def add_claim(store, text: str, title: str | None = None, question: str | None = None) -> str:
    cid = claim_id(text)
    with store.session() as s:
        s.add(Claim(id=cid, text=text, kind="note", title=title))
        if question:
            lid = "l-" + cid[2:]
            s.add(Line(id=lid, question=question))
            s.flush()
            s.add(LineClaim(line_id=lid, claim_id=cid, role="note"))
    return cid


def add_papers(store, papers: list[tuple[str, str]], start: int = 0) -> list[str]:
    ids = []
    with store.session() as s:
        for i, (title, abstract) in enumerate(papers, start=start):
            aid = f"2601.{i:05d}"
            s.add(Paper(arxiv_id=aid, version=1, title=title, abstract=abstract, source="file"))
            s.add(PaperVersion(arxiv_id=aid, version=1, title=title, abstract=abstract, source="file"))
            ids.append(aid)
    return ids


def candidates(store) -> list[tuple[str, int, str]]:
    with store.session() as s:
        rows = s.execute(select(Candidate.arxiv_id, Candidate.version, Candidate.claim_id))
        return sorted((a, v, c) for a, v, c in rows)


def test_relevant_paper_selected_unrelated_not_hybrid(store) -> None:
    cid = add_claim(
        store, SPARSITY, title="Does reinforcement learning update only a small fraction of parameters?"
    )
    relevant, unrelated = add_papers(store, [RELEVANT, UNRELATED])
    summary = select_candidates(store, settings_for(method="hybrid"))
    assert summary.as_dict()["candidates_added"] == 1
    assert candidates(store) == [(relevant, 1, cid)]
    assert unrelated not in {a for a, _, _ in candidates(store)}
    with store.session() as s:
        keys = set(s.scalars(select(Embedding.key)))
        method = s.scalar(select(Candidate.method))
    # The relevant title is embedded and cached under a key naming what was embedded; the unrelated
    # one shares too few words with any claim to be worth embedding (embed_gate). The claim's query
    # and the reference titles its cut is learned on are cached too.
    assert f"title:{relevant}v1" in keys and f"title:{unrelated}v1" not in keys
    assert len([k for k in keys if k.startswith("query:")]) == 1
    assert method == "hybrid"
    with store.session() as s:
        s.query(RelevanceMark).delete()
    again = select_candidates(store, settings_for(method="hybrid"))
    assert (again.papers_scanned, again.candidates_added) == (2, 0)
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(Embedding)) == len(keys)  # nothing embedded twice


def test_rerun_never_duplicates(store) -> None:
    add_claim(store, SPARSITY)
    add_papers(store, [RELEVANT, UNRELATED] + [filler(i) for i in range(6)])
    settings = settings_for()
    first = select_candidates(store, settings)
    assert first.candidates_added == 1
    again = select_candidates(store, settings)
    assert (again.papers_scanned, again.candidates_added) == (0, 0)
    # Even with the marks gone (as after an edit that keeps the claim id), nothing doubles.
    with store.session() as s:
        s.query(RelevanceMark).delete()
    rescan = select_candidates(store, settings)
    assert rescan.papers_scanned == 8 and rescan.candidates_added == 0
    assert len(candidates(store)) == 1


def test_new_papers_scanned_once_and_new_claim_scans_everything(store) -> None:
    add_claim(store, SPARSITY)
    add_papers(store, [filler(i) for i in range(5)])
    settings = settings_for()
    assert select_candidates(store, settings).papers_scanned == 5
    add_papers(store, [RELEVANT, filler(99)], start=100)
    second = select_candidates(store, settings)
    assert (second.papers_scanned, second.candidates_added) == (2, 1)
    assert select_candidates(store, settings).papers_scanned == 0

    calibration_claim = add_claim(store, CALIBRATION)
    add_papers(
        store,
        [
            (
                "Calibration of language model confidence under binary correctness rewards",
                "Binary correctness rewards degrade calibration; we add a Brier score term.",
            )
        ],
        start=200,
    )
    third = select_candidates(store, settings)
    # The new claim reads all 8 stored papers; the old one only the newest.
    assert third.papers_scanned == 8
    assert [c for _, _, c in candidates(store)].count(calibration_claim) == 1
    with store.session() as s:
        top = s.scalar(select(func.max(PaperVersion.id)))
        marks = {m.claim_id: m.last_version_row for m in s.scalars(select(RelevanceMark))}
    assert set(marks.values()) == {top}


def test_edited_claim_text_rescans_under_its_new_hash(store) -> None:
    cid = add_claim(store, SPARSITY)
    add_papers(store, [RELEVANT] + [filler(i) for i in range(3)])
    settings = settings_for()
    select_candidates(store, settings)
    with store.session() as s:
        s.get(Claim, cid).text = SPARSITY.upper()  # same id (normalised), new exact text
    again = select_candidates(store, settings)
    assert again.papers_scanned == 4 and again.candidates_added == 0
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(RelevanceMark)) == 2


def test_claim_ids_limit_the_scan(store) -> None:
    first = add_claim(store, SPARSITY)
    add_claim(store, CALIBRATION)
    add_papers(store, [RELEVANT, UNRELATED])
    summary = select_candidates(store, settings_for(), claim_ids=[first])
    assert summary.claims == 1
    with store.session() as s:
        assert [m.claim_id for m in s.scalars(select(RelevanceMark))] == [first]


def test_thresholds_from_config(store) -> None:
    add_claim(store, SPARSITY)
    add_papers(store, [RELEVANT, UNRELATED] + [filler(i) for i in range(18)])
    # A cut nothing reaches selects nothing, yet the papers count as scanned.
    none = select_candidates(store, settings_for(cut=2.0))
    assert (none.papers_scanned, none.candidates_added) == (20, 0)


def test_max_share_caps_a_claim_per_batch(store) -> None:
    add_claim(store, "study benchmark results variant")
    add_papers(store, [filler(i) for i in range(20)])
    settings = settings_for(cut=0.0, max_share=0.1, batch_size=10)
    summary = select_candidates(store, settings)
    # Every paper matches; two batches of 10, at most ceil(0.1 * 10) = 1 each.
    assert summary.candidates_added == 2


class _JudgeKey:
    """What the judge's work is keyed by (store/pairs.py `JudgeKey`) and how many claims one call takes."""

    name, model, prompt_version, claims_per_call, triage_only = "local", "m", "v", 4, False


NOTE_TITLE = "Sparse RL updates"
QUESTION = "What breaks when you apply RL after supervised fine-tuning?"


def test_the_judge_is_asked_about_the_claims_and_papers_relevance_ranked(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One claim type and one paper type from relevance through the judge: each pair the judge is handed
    carries the claim relevance ranked its paper for, equal in every field (the note title and line
    question it searched with, the hash its marks are kept under), and a paper of the type it ranked."""
    from monitor.judge.work import pending_units

    sparsity = add_claim(store, SPARSITY, title=NOTE_TITLE, question=QUESTION)
    add_claim(store, CALIBRATION)
    relevant, *_ = add_papers(store, [RELEVANT, UNRELATED] + [filler(i) for i in range(6)])
    ranked: dict[tuple[str, str], tuple[PaperText, ClaimText]] = {}
    real = select_module._write

    def recording_write(session, claims, papers, pairs, *rest):  # type: ignore[no-untyped-def]
        # What relevance selects, as the objects it scored.
        ranked.update({(papers[p].arxiv_id, claims[c].id): (papers[p], claims[c]) for c, p, _ in pairs})
        return real(session, claims, papers, pairs, *rest)

    monkeypatch.setattr(select_module, "_write", recording_write)
    select_candidates(store, settings_for())
    units = pending_units(store, _JudgeKey())  # type: ignore[arg-type]
    asked = {(u.paper.arxiv_id, p.claim.id): (u.paper, p.claim) for u in units for p in u.pairs}

    assert (relevant, sparsity) in ranked and asked.keys() == ranked.keys()
    for key, (paper, claim) in asked.items():
        ranked_paper, ranked_claim = ranked[key]
        assert type(claim) is type(ranked_claim) is ClaimText and claim == ranked_claim
        assert type(paper) is type(ranked_paper) is PaperText
        assert (paper.version, paper.title, paper.abstract) == (
            ranked_paper.version,
            ranked_paper.title,
            ranked_paper.abstract,
        )
    claim = asked[relevant, sparsity][1]
    assert (claim.title, claim.questions, claim.text_hash) == (NOTE_TITLE, (QUESTION,), text_hash(SPARSITY))
    assert claim.query_text() == f"{NOTE_TITLE} {SPARSITY} {QUESTION}"


def test_the_keys_stored_caches_are_found_by_do_not_drift(store) -> None:
    """Stored relevance marks, cached query embeddings and assessments are found by these keys, so moving
    code must leave them byte for byte as they were: the values were computed before relevance and the
    judge shared one claim and one paper type (issue 32). A change here orphans every store's caches."""
    from monitor.judge.work import pending_units
    from monitor.relevance.scoring import title_key
    from monitor.relevance.select import make_scorer
    from monitor.relevance.text import load_claims

    sparsity = add_claim(store, SPARSITY, title=NOTE_TITLE, question=QUESTION)
    (relevant,) = add_papers(store, [RELEVANT])
    assert select_candidates(store, settings_for()).candidates_added == 1
    with store.session() as s:
        claims = load_claims(s)
        marks = [(m.claim_id, m.claim_text_hash) for m in s.scalars(select(RelevanceMark))]
    make_scorer(store, settings_for(method="hybrid"), claims)  # caches the claim's query embedding
    with store.session() as s:
        queries = [k for k in s.scalars(select(Embedding.key)) if k.startswith("query:")]
    (unit,) = pending_units(store, _JudgeKey())  # type: ignore[arg-type]

    wording = "98e5edb88eb67b4ecdad76e5764fc84acf38a3762aaee49f45ef8db9b9620c91"
    assert marks == [(sparsity, wording)] and unit.pairs[0].claim.text_hash == wording
    assert queries == ["query:1a19bfb696f770612f9d3affa20c4a9e8c7e8e03"]
    assert unit.pairs[0].ref == "c3b44034605a1a11db1b52fb33486ff1b22842413e06727fb27e74159c5142d8"
    assert title_key(unit.paper) == f"title:{relevant}v1" == "title:2601.00000v1"


def test_weekly_batches_select_what_one_scan_selects(store) -> None:
    from monitor.relevance.reference import claim_cuts, reference_papers
    from monitor.relevance.scoring import select_pairs
    from monitor.relevance.select import make_scorer
    from monitor.relevance.text import load_claims

    add_claim(store, SPARSITY, question="What breaks when you apply RL after supervised fine-tuning?")
    add_claim(store, CALIBRATION)
    stream = [(p.title, p.abstract) for p in reference_papers()[0][:300]] + [RELEVANT]
    settings = settings_for(share=0.03)
    for week in range(0, len(stream), 60):  # five "weeks" of 60 papers, then the last one
        add_papers(store, stream[week : week + 60], start=week)
        select_candidates(store, settings)
    got = {(a, c) for a, _, c in candidates(store)}

    with store.session() as s:
        claims = load_claims(s)
    scorer = make_scorer(store, settings, claims)
    docs = [PaperText(f"2601.{i:05d}", 1, t, a, row_id=i + 1) for i, (t, a) in enumerate(stream)]
    scores = scorer.score(docs)
    cuts = claim_cuts(scorer, settings.relevance.share)
    pairs = select_pairs(scores, cuts, np.ones_like(scores, dtype=bool), 1.0, 0.0)
    assert got == {(docs[p].arxiv_id, claims[c].id) for c, p, _ in pairs}
    assert ("2601.00300", claim_id(SPARSITY)) in got
    # The cut is the claim's 97th percentile over the shipped reference sample.
    assert cuts[0] == pytest.approx(np.quantile(scorer.score(list(reference_papers()[0]))[0], 0.97))


def test_crash_mid_scan_loses_nothing_and_rerun_finishes(store, monkeypatch: pytest.MonkeyPatch) -> None:
    add_claim(store, SPARSITY)
    add_papers(store, [filler(i) for i in range(5)] + [RELEVANT] + [filler(i) for i in range(5, 10)])
    settings = settings_for(batch_size=4)
    real = select_module._write
    calls = {"n": 0}

    def failing_write(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("power cut")
        return real(*args, **kwargs)

    monkeypatch.setattr(select_module, "_write", failing_write)
    with pytest.raises(RuntimeError):
        select_candidates(store, settings)
    with store.session() as s:
        assert s.scalar(select(RelevanceMark.last_version_row)) == 4  # first batch only
    assert candidates(store) == []
    monkeypatch.setattr(select_module, "_write", real)
    rest = select_candidates(store, settings)
    assert rest.papers_scanned == 7 and rest.candidates_added == 1


def test_cli_relevance_command(db_url: str, tmp_path) -> None:
    import os

    from monitor.store import open_store

    store = open_store(db_url)
    cid = add_claim(store, SPARSITY)
    relevant, _ = add_papers(store, [RELEVANT, UNRELATED])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MONITOR_", "OPENAI_"))}
    env.update(MONITOR_ARXIV_MIN_DELAY="0", COLUMNS="200", NO_COLOR="1", MONITOR_RELEVANCE__METHOD="bm25")
    done = cli("--db", db_url, "relevance", environ=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 paper version(s) scanned against 1 claim(s), 1 new candidate(s)" in done.stdout
    assert candidates(store) == [(relevant, 1, cid)]
    store.close()


def test_stop_request_ends_after_the_batch_in_hand(store) -> None:
    from monitor.store.runs import recorded_run

    add_claim(store, SPARSITY)
    add_papers(store, [filler(i) for i in range(9)] + [RELEVANT])
    settings = settings_for(batch_size=4)
    with recorded_run(store, "relevance") as run:
        run.stop.set()
        first = select_candidates(store, settings, run_id=run.id, should_stop=run.should_stop)
        run.record(first)  # the stage returns its counts; the caller records them
    assert first.papers_scanned == 4 and run.counts["relevance"]["papers_scanned"] == 4
    rest = select_candidates(store, settings)
    assert (rest.papers_scanned, rest.candidates_added) == (6, 1)
