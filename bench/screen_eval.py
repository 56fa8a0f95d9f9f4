"""Recall of the LLM screen of every claim, screened for real, with the teacher answering its requests.

    python bench/screen_eval.py --set dev|teacher-seed|teacher-other [--answers FILE ...] [--record OUT]

Each set is a claim library and papers whose bearing on some of its claims is labelled:

- dev: the seeds' 35 claims and the 39 papers of ../shared/eval/domain_dev.jsonl (29 bearing pairs);
- teacher-seed: the seeds' claims and the papers of the teacher set's `test` split that bear on one of
  them (146 pairs, 100 papers; labelled by the teacher in an earlier round, not by these answers);
- teacher-other: the teacher set's 64 other dated claims and the `test` papers that bear on one (16).

A fresh SQLite store gets the library and the papers; the relevance stage writes every (paper, claim)
pair pending and the screen asks `llm_relay.py mixed` (bench/relay.py), which answers from `--answers`
and records any request it lacks into `--record` (then answered by the teacher, who never sees a label:
training/teacher_tool.py). Printed: the screen's recall of the labelled bearing pairs (on the teacher
set, also by the teacher's own confidence), the share of all pairs it keeps, what sending each kept
paper to its claim's nearest claims as well would recover and cost, and its calls and tokens (the cached
part as the relay reports it), priced at gpt-4o-mini's rates. Held-out papers
(../shared/eval/heldout_papers.txt) are never used.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pydantic import SecretStr  # noqa: E402
from relay import REPO, SHARED, first_turns, read_jsonl, relay  # noqa: E402

from monitor.claims.importer import import_claims  # noqa: E402
from monitor.config import Settings  # noqa: E402
from monitor.llm.cost import token_cost  # noqa: E402
from monitor.relevance import select_candidates  # noqa: E402
from monitor.relevance.screen import RECHECK_PROVIDER  # noqa: E402
from monitor.sources.ingest import fetch  # noqa: E402
from monitor.store import open_store  # noqa: E402
from monitor.store.candidates import SCREEN_KEPT  # noqa: E402
from monitor.store.models import Candidate, Claim  # noqa: E402
from monitor.store.records import LLMExchange  # noqa: E402

TEACHER = REPO / "training" / "teacher"
ANSWERS = TEACHER / "issue30"


def heldout() -> set[str]:
    return set((SHARED / "eval" / "heldout_papers.txt").read_text().split())


def labelled(name: str) -> tuple[list[dict[str, Any]], Path | None]:
    """The set's labelled rows (claim, arxiv_id, title, abstract, published, label) and, for the other
    claims, the claim file to import instead of the seeds."""
    if name == "dev":
        return read_jsonl(SHARED / "eval" / "domain_dev.jsonl"), None
    # Only the papers that bear on a claim: what is measured is their recall (the kept share of all
    # pairs is measured on a real week, bench/llm_path_week.py).
    rows = [
        r for r in read_jsonl(TEACHER / "pairs.jsonl") if r["split"] == "test" and r["label"] != "UNRELATED"
    ]
    if name == "teacher-seed":
        return [r for r in rows if r["source"] == "seed"], None
    other = [r for r in rows if r["source"].startswith("other:")]
    return other, TEACHER / "other_claims.jsonl"


def claims_file(other: Path, folder: Path) -> Path:
    """The teacher's other dated claims as a claim file of one line each (docs/claims.md)."""
    lines = []
    for row in read_jsonl(other):
        claim = {"text": row["claim"]}
        if row.get("claim_date"):
            claim["date"] = str(row["claim_date"])
        lines.append({"question": f"{row.get('topic', 'other')}: {row['claim'][:60]}", "claims": [claim]})
    path = folder / "other_claims.json.yaml"
    path.write_text(json.dumps({"lines": lines}, ensure_ascii=False), encoding="utf-8")  # JSON is YAML
    return path


def snapshot(rows: list[dict[str, Any]], folder: Path) -> Path:
    """The set's papers (one record each, held-out papers left out) as a JSONL snapshot to fetch."""
    skip, seen, out = heldout(), set(), []
    for row in rows:
        if row["arxiv_id"] in skip or row["arxiv_id"] in seen:
            continue
        seen.add(row["arxiv_id"])
        out.append(
            {
                "arxiv_id": row["arxiv_id"],
                "version": 1,
                "title": row["title"],
                "abstract": row["abstract"],
                "published": str(row.get("published") or "2026-01-01")[:10],
                "categories": ["cs.CL"],
            }
        )
    path = folder / "papers.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8")
    return path


def nearest_claims(
    kept: set[tuple[str, str]], missed: set[tuple[str, str]], texts: dict[str, str]
) -> dict[str, str]:
    """What sending each kept pair's paper also to its claim's k nearest claims (MiniLM cosine of the
    claim texts) would recover of the missed pairs, and the judged pairs it would add."""
    import numpy as np

    from monitor.embeddings import get_embedder

    ids = sorted(texts)
    vectors = get_embedder().embed([texts[c] for c in ids])
    order = np.argsort(-(vectors @ vectors.T), axis=1)
    by_paper: dict[str, set[str]] = {}
    for paper, claim in kept:
        by_paper.setdefault(paper, set()).add(claim)
    out: dict[str, str] = {}
    for k in (1, 2, 3, 5):
        near = {c: [ids[j] for j in order[i] if ids[j] != c][:k] for i, c in enumerate(ids)}
        added = {(p, n) for p, claims in by_paper.items() for c in claims for n in near[c]} - kept
        out[f"k={k}"] = (
            f"recovers {len(added & missed)} of {len(missed)}, adds {len(added)} pairs to {len(kept)}"
        )
    return out


def measure(name: str, answers: list[Path], record: Path) -> dict[str, Any]:
    rows, other = labelled(name)
    with tempfile.TemporaryDirectory() as tmp, relay(answers, record) as env:
        folder = Path(tmp)
        settings = Settings()
        settings.database.url = f"sqlite:///{folder / 'm.db'}"
        settings.llm.base_url, settings.llm.model = env["MONITOR_LLM__BASE_URL"], "teacher"
        settings.llm.api_key = SecretStr(env["MONITOR_LLM__API_KEY"])
        settings.llm.timeout_seconds, settings.llm.max_retries = 30.0, 1
        store = open_store(settings.database.url)
        try:
            paths = [other and claims_file(other, folder) or REPO / "seeds"]
            import_claims(store, settings, paths)  # type: ignore[list-item]
            fetch(store, settings, source=str(snapshot(rows, folder)))
            summary = select_candidates(store, settings)
            with store.session() as s:
                states = {
                    (a, c): st
                    for a, c, st in s.query(Candidate.arxiv_id, Candidate.claim_id, Candidate.screen)
                }
                ids = {text: cid for cid, text in s.query(Claim.id, Claim.text)}
                # The pairs the second reading kept (relevance.screen_recheck): by their exchange.
                second = {
                    (a, c)
                    for a, c in s.query(Candidate.arxiv_id, Candidate.claim_id)
                    .join(LLMExchange, LLMExchange.id == Candidate.screen_exchange_id)
                    .filter(Candidate.screen == SCREEN_KEPT, LLMExchange.provider == RECHECK_PROVIDER)
                }
        finally:
            store.close()
    screened = summary.screened
    assert screened is not None
    skip = heldout()
    positives = {
        (r["arxiv_id"], ids.get(r["claim"], "?"))
        for r in rows
        if r["label"] != "UNRELATED" and r["arxiv_id"] not in skip
    }
    missing_claim = sum(1 for _, c in positives if c == "?")
    kept = {pair for pair, st in states.items() if st == "kept"}
    found, missed = positives & kept, positives - kept
    kept_papers = {paper for paper, _ in kept}
    # The teacher set's labels carry the teacher's own confidence: recall on the pairs it was sure of
    # and on those it labelled at a coin toss or below tells a screen miss from a doubtful label.
    bands: dict[str, list[int]] = {}
    for r in rows:
        pair = (r["arxiv_id"], ids.get(r["claim"], "?"))
        if pair in positives and r.get("teacher_confidence") is not None:
            band = bands.setdefault(
                "teacher >= 0.5" if r["teacher_confidence"] >= 0.5 else "teacher < 0.5", [0, 0]
            )
            band[0] += pair in kept
            band[1] += 1
    answered = sum(1 for st in states.values() if st in ("kept", "dropped"))
    return {
        "set": name,
        "papers": len({a for a, _ in states}),
        "pairs": len(states),
        "answered": answered,
        "pending": sum(1 for st in states.values() if st in ("pending", "recheck")),
        "positives": len(positives),
        "positives_unmatched_claim": missing_claim,
        "recall": round(len(found) / len(positives), 4) if positives else None,
        "found": len(found),
        "found_by_first_reading": len(found - second),
        "recall_first_reading": round(len(found - second) / len(positives), 4) if positives else None,
        "kept_by_second_reading": len(second),
        "recall_by_teacher_confidence": {b: f"{k}/{n}" for b, (k, n) in sorted(bands.items())} or None,
        "missed": sorted(missed),
        # A missed pair whose paper the screen kept for another claim reaches the judge, only not
        # against this claim.
        "missed_papers_kept_for_another_claim": sum(1 for paper, _ in missed if paper in kept_papers),
        "nearest_claims_added": nearest_claims(kept, missed, {c: t for t, c in ids.items()}),
        "kept": len(kept),
        "kept_share": round(len(kept) / answered, 4) if answered else None,
        "calls": screened.calls,
        "prompt_tokens": screened.prompt_tokens,
        "cached_tokens": screened.cached_tokens,
        "completion_tokens": screened.completion_tokens,
        "usd_gpt4o_mini": round(
            token_cost(
                Settings(), screened.prompt_tokens, screened.completion_tokens, False, screened.cached_tokens
            ),
            4,
        ),
        "to_answer": len(first_turns(record)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("dev", "teacher-seed", "teacher-other"), required=True)
    parser.add_argument("--answers", type=Path, nargs="*", help="answer files (default: the kept ones)")
    parser.add_argument("--record", type=Path, help="where requests without an answer are recorded")
    args = parser.parse_args()
    answers = args.answers if args.answers is not None else sorted(ANSWERS.glob("screen_*.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        record = args.record or Path(tmp) / "recorded.jsonl"
        print(json.dumps(measure(args.set, answers, record), indent=2))


if __name__ == "__main__":
    main()
