"""select_candidates: score new paper versions against active claims and keep the pairs worth judging.

Incremental: a `relevance_marks` row per (claim, claim text hash) remembers the highest
paper_versions.id scanned, so each run scores only what each claim has not seen; a new or edited
claim has no mark and is scanned against every stored paper. Versions are scanned in batches of
`batch_size`; each batch's candidates and the marks that cover them commit in one transaction, so
a crash loses at most the batch in flight and a rerun redoes exactly that.

A claim's cut is the score above which `share` of a fixed reference sample of papers lie for it
(`reference.py`); scores do not depend on the batch, so the cut means the same in a daily run of 300
papers, a weekly replay and a first scan of 20,000.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import ClassVar

import numpy as np
from sqlalchemy.orm import Session

from monitor.config import RelevanceSettings, Settings
from monitor.llm.texts import ClaimText, PaperText
from monitor.progress import progress_bar
from monitor.relevance.reference import claim_cuts
from monitor.relevance.scoring import RelevanceScorer, select_pairs, title_key
from monitor.relevance.screen import ScreenSummary, screen_pending
from monitor.relevance.text import load_claims, papers_of
from monitor.store import Store
from monitor.store.candidates import SCREEN_PENDING, add_candidates, candidate_keys
from monitor.store.papers import count_versions_between, last_version_row, versions_between
from monitor.store.runs import StageNotes
from monitor.store.scan_marks import scanned_upto, set_scanned_upto


@dataclass
class RelevanceSummary:
    """What one relevance pass did (recorded on the run as `relevance` by the caller: StageCounts)."""

    stage: ClassVar[str] = "relevance"

    papers_scanned: int = 0  # distinct paper versions scored for at least one claim
    claims: int = 0  # active claims considered
    candidates_added: int = 0
    method: str = ""
    seconds: float = 0.0
    screened: ScreenSummary | None = None  # the LLM screen's pass, when relevance.screen = "llm"

    @property
    def candidates(self) -> int:
        return self.candidates_added

    @property
    def screen(self) -> dict[str, object] | None:
        return self.screened.as_dict() if self.screened is not None else None

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        del out["screened"]
        out["seconds"] = round(self.seconds, 2)
        out["screen"] = self.screen
        return out

    def stage_counts(self) -> dict[str, object]:
        return self.as_dict()

    def stage_notes(self) -> StageNotes:
        """The screen's own counts (as `screen`), tokens and warning go on the run too."""
        return StageNotes(within=[self.screened] if self.screened is not None else [])


def _load_marks(session: Session, claims: Sequence[ClaimText]) -> dict[str, int]:
    """Per claim id, the last paper_versions.id scanned for its current text (0: none yet)."""
    marks = dict.fromkeys((c.id for c in claims), 0)
    marks.update(scanned_upto(session, ((c.id, c.text_hash) for c in claims)))
    return marks


def _advance_marks(session: Session, claims: Sequence[ClaimText], marks: dict[str, int], upto: int) -> None:
    for claim in claims:
        marks[claim.id] = max(marks[claim.id], upto)
    set_scanned_upto(session, [(c.id, c.text_hash, marks[c.id]) for c in claims])


def batch_ceiling(cfg: RelevanceSettings, share: float) -> float:
    """The most of one batch a claim may take: max_share, or twice the share when that is wider.

    The ceiling guards against floods; a wider cut (an LLM judge's, a screen's first cut) widens it.
    """
    return max(cfg.max_share, min(1.0, 2 * share))


def make_scorer(
    store: Store,
    settings: Settings,
    claims: Sequence[ClaimText],
    relevance: RelevanceSettings | None = None,
    keep_embeddings: bool = True,
    seen: dict[str, np.ndarray] | None = None,
) -> RelevanceScorer:
    """The configured scorer; `relevance` overrides the settings in force (the screen's wider first cut).

    `keep_embeddings=False`: new title and query vectors are not cached in the store (a dry run).
    `seen`: title vectors by key, shared by the scorers of one process: what one embedded (uncached,
    in a dry run) or read from the store, the next reuses.
    """
    relevance = relevance or settings.relevance_in_force()
    if relevance.method == "bm25":
        return RelevanceScorer(relevance, claims)
    from monitor.embeddings import cached_embeddings, get_embedder

    embedder = get_embedder()

    def title_vectors(papers: Sequence[PaperText]) -> np.ndarray:
        known = {} if seen is None else seen
        wanted = {title_key(p): p.title for p in papers if title_key(p) not in known}
        if wanted:
            known.update(cached_embeddings(store, wanted, embedder, keep_embeddings))
        return np.stack([known[title_key(p)] for p in papers])

    def query_vectors(texts: Sequence[str]) -> np.ndarray:
        # Cached too: a weekly replay builds a scorer per period and the queries rarely change.
        keys = [f"query:{hashlib.sha256(t.encode('utf-8')).hexdigest()[:40]}" for t in texts]
        found = cached_embeddings(store, dict(zip(keys, texts, strict=True)), embedder, keep_embeddings)
        return np.stack([found[k] for k in keys])

    return RelevanceScorer(relevance, claims, title_vectors, query_vectors)


@dataclass(frozen=True)
class _Plan:
    """How one pass cuts: with an LLM screen, every pair (or a wider first cut) waits for the screen,
    which narrows it (screen.py)."""

    cfg: RelevanceSettings
    screening: bool
    share: float
    ceiling: float  # the most of one batch a claim may take (`batch_ceiling`)
    new_state: str | None  # a new pair waits for the screen, if there is one
    method: str

    @classmethod
    def of(cls, settings: Settings) -> _Plan:
        cfg = settings.relevance_in_force()
        screening = cfg.screen == "llm"
        share = cfg.screen_share if screening else cfg.share
        if screening and share >= 1.0:
            # Every claim: no lexical cut at all. BM25 still scores each pair (cheap, no model) so a
            # candidate keeps a score to rank by, but nothing is left out by it.
            cfg = cfg.model_copy(update={"method": "bm25"})
            return cls(cfg, True, 1.0, 1.0, SCREEN_PENDING, "all+llm-screen")
        method = cfg.method + ("+llm-screen" if screening else "")
        return cls(
            cfg, screening, share, batch_ceiling(cfg, share), SCREEN_PENDING if screening else None, method
        )

    @property
    def every_pair(self) -> bool:
        """No first cut: every (paper, claim) pair goes to the screen."""
        return self.screening and self.share >= 1.0

    def first_cut(self) -> RelevanceSettings:
        return (
            self.cfg.model_copy(update={"embed_gate": self.cfg.screen_embed_gate})
            if self.screening
            else self.cfg
        )


@dataclass
class _Scan:
    """The claims behind the newest paper version and what each has seen, scored by one scorer."""

    behind: list[ClaimText]
    marks: dict[str, int]
    scorer: RelevanceScorer
    due: list[int]  # rows of `behind` in the scorer (which scores every active claim)
    cuts: np.ndarray
    seen: np.ndarray


def _stopped(should_stop: Callable[[], bool] | None) -> bool:
    return should_stop is not None and should_stop()


def select_candidates(
    store: Store,
    settings: Settings,
    run_id: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    claim_ids: Sequence[str] | None = None,
    screen: bool = True,
    progress: bool = False,
    since: dt.date | None = None,
) -> RelevanceSummary:
    """Scan paper versions each active claim has not seen yet; write `candidates` for those that pass
    (with `run_id`); between batches, stop when `should_stop()` says so (the next run resumes).

    With relevance.screen = "llm", new pairs are written pending and then screened (those of papers
    published on or after `since`, when given: the period a run judges), unless `screen` is False (a dry
    run, which must call nothing).
    """
    began = time.monotonic()
    plan = _Plan.of(settings)
    summary = RelevanceSummary(method=plan.method)
    with store.session() as session:
        active = load_claims(session)
        claims = [c for c in active if claim_ids is None or c.id in set(claim_ids)]
        marks = _load_marks(session, claims)
        top = last_version_row(session)
    summary.claims = len(claims)
    behind = [c for c in claims if marks[c.id] < top]
    if behind:
        scan = _prepare(store, settings, plan, active, behind, marks)
        _scan_versions(store, plan, scan, top, summary, progress, run_id, should_stop)
    if screen and not _stopped(should_stop):
        summary.screened = screen_candidates(store, settings, run_id, should_stop, claim_ids, since)
    summary.seconds = time.monotonic() - began
    return summary


def screen_candidates(
    store: Store,
    settings: Settings,
    run_id: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    claim_ids: Sequence[str] | None = None,
    since: dt.date | None = None,
) -> ScreenSummary | None:
    """The LLM screen over the pairs pending for it (those of `claim_ids`, of papers published on or
    after `since`), with relevance.screen = "llm"; None without it. The relevance stage's second step,
    which the pipeline runs as its own (schedule/flow.py). Also picks up pairs a failed or interrupted
    earlier run left pending."""
    if not _Plan.of(settings).screening:
        return None
    wanted = list(claim_ids) if claim_ids else None
    return screen_pending(store, settings, run_id, should_stop, claim_ids=wanted, since=since)


def _prepare(
    store: Store,
    settings: Settings,
    plan: _Plan,
    active: list[ClaimText],
    behind: list[ClaimText],
    marks: dict[str, int],
) -> _Scan:
    """Score with every active claim, so a pair's score never depends on which claims are due."""
    scorer = make_scorer(store, settings, active, plan.first_cut())
    due = [active.index(c) for c in behind]
    if plan.every_pair:
        cuts = np.full(len(due), -np.inf, dtype=np.float32)
    else:
        cuts = claim_cuts(scorer, plan.share, plan.cfg.cut, due)
    seen = np.array([marks[c.id] for c in behind], dtype=np.int64)
    return _Scan(behind, marks, scorer, due, cuts, seen)


def _scan_versions(
    store: Store,
    plan: _Plan,
    scan: _Scan,
    top: int,
    summary: RelevanceSummary,
    progress: bool,
    run_id: int | None,
    should_stop: Callable[[], bool] | None,
) -> None:
    """Batch by batch from the least-read claim's mark up to `top`: each batch's pairs and marks commit
    together; a stop asked for between batches keeps what is committed, and the next run resumes."""
    after = int(scan.seen.min())
    with store.session() as session:
        to_scan = count_versions_between(session, after, top)
    with progress_bar("relevance", to_scan or 0, "papers", progress) as advance:
        while after < top:
            with store.session() as session:
                rows = versions_between(session, after, top, plan.cfg.batch_size)
            if not rows:
                break
            after = _scan_batch(store, plan, scan, papers_of(rows), run_id, summary)
            advance(len(rows))
            if _stopped(should_stop):  # a daemon or replay asked to stop: the next run resumes here
                break


def _scan_batch(
    store: Store,
    plan: _Plan,
    scan: _Scan,
    papers: list[PaperText],
    run_id: int | None,
    summary: RelevanceSummary,
) -> int:
    """Score one batch, write its pairs and advance the marks in one transaction; the batch's last row id."""
    row_ids = np.array([p.row_id for p in papers], dtype=np.int64)
    eligible = row_ids[None, :] > scan.seen[:, None]
    scores = scan.scorer.score(papers, claims=scan.due)
    floor = -np.inf if plan.every_pair else plan.cfg.min_score
    pairs = select_pairs(scores, scan.cuts, eligible, plan.ceiling, floor)
    upto = int(row_ids[-1])
    with store.session() as session:
        summary.candidates_added += _write(
            session, scan.behind, papers, pairs, plan.method, run_id, plan.new_state
        )
        _advance_marks(session, scan.behind, scan.marks, upto)
    summary.papers_scanned += int(eligible.any(axis=0).sum())
    return upto


def _write(
    session: Session,
    claims: Sequence[ClaimText],
    papers: Sequence[PaperText],
    pairs: list[tuple[int, int, float]],
    method: str,
    run_id: int | None,
    screen: str | None = None,
) -> int:
    """Insert the pairs not stored yet (an edited claim keeps its id, so its old candidates stay)."""
    if not pairs:
        return 0
    ids = sorted({papers[p].arxiv_id for _, p, _ in pairs})
    existing = candidate_keys(session, ids)
    new: list[tuple[tuple[str, int, str], float]] = []
    for c, p, score in pairs:
        paper, claim_id = papers[p], claims[c].id
        key = (paper.arxiv_id, paper.version, claim_id)
        if key in existing:
            continue
        existing.add(key)
        new.append((key, round(score, 6)))
    add_candidates(session, new, method, run_id, screen)
    return len(new)
