"""The two-stage relevance stage (first cut + LLM screen) on the domain dev pairs, against any
OpenAI-compatible server.

    python bench/screen_eval.py --base-url URL --model NAME [--sample 200] [--screen-share 0.2]
    (the key, if the server needs one, comes from OPENAI_API_KEY)

For each labelled pair of eval/domain_dev.jsonl whose label is not UNRELATED, and for a random sample
of corpus papers, it runs the first stage exactly as `select_candidates` does (hybrid score against
every seed claim, per-claim cuts learned on the reference sample at `--screen-share`) and sends each
paper's first-cut claims to the screen. It prints:

- first-cut recall (the ceiling), and recall after the screen: positives whose claim the model kept;
- the share of all (paper, claim) pairs kept, estimated on the random sample (the 2% budget's measure);
- calls, tokens and seconds, and the tokens a whole-corpus backfill would take at this rate.

What it measures is the model's: with the tests' SmolLM2-135M it shows only that the loop works.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from monitor.claims.ids import claim_id
from monitor.claims.importer import import_claims
from monitor.config import Settings
from monitor.llm.texts import ClaimText, Exchange, PaperText
from monitor.relevance.reference import claim_cuts
from monitor.relevance.scoring import PaperDoc
from monitor.relevance.screen import LLMScreen
from monitor.relevance.select import load_claim_queries, make_scorer
from monitor.store import open_store

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--sample", type=int, default=200, help="random corpus papers for the share estimate")
    ap.add_argument("--screen-share", type=float, default=0.20)
    ap.add_argument("--claims-per-call", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    settings = Settings()
    settings.relevance.screen = "llm"
    settings.relevance.screen_share = args.screen_share
    settings.relevance.screen_claims_per_call = args.claims_per_call
    settings.llm.base_url = args.base_url
    settings.llm.model = args.model
    settings.llm.timeout_seconds = args.timeout
    if os.environ.get("OPENAI_API_KEY"):
        from pydantic import SecretStr

        settings.llm.api_key = SecretStr(os.environ["OPENAI_API_KEY"])

    corpus = {}
    with (args.shared / "arxiv" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            p = json.loads(line)
            corpus[p["arxiv_id"]] = p
    dev = [json.loads(line) for line in (args.shared / "eval" / "domain_dev.jsonl").open(encoding="utf-8")]
    positives = [(r["arxiv_id"], claim_id(r["claim"])) for r in dev if r["label"] != "UNRELATED"]
    sample = random.Random(args.seed).sample(sorted(corpus), args.sample)

    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/screen.db")
        import_claims(store, settings, [REPO / "seeds"])
        with store.session() as session:
            claims = load_claim_queries(session)
        scorer = make_scorer(store, settings, claims)
        cuts = claim_cuts(scorer, args.screen_share)
        wanted = sorted({a for a, _ in positives} | set(sample))
        docs = [
            PaperDoc(0, a, int(corpus[a].get("version") or 1), corpus[a]["title"], corpus[a]["abstract"])
            for a in wanted
        ]
        scores = scorer.score(docs)
        first_cut = {
            doc.arxiv_id: [claims[c] for c in np.flatnonzero(scores[:, i] >= cuts)]
            for i, doc in enumerate(docs)
        }
        screen = LLMScreen(settings)
        tokens = {"prompt": 0, "completion": 0, "calls": 0, "failed": 0}

        def record(exchange: Exchange) -> int:
            tokens["calls"] += 1
            tokens["prompt"] += exchange.prompt_tokens
            tokens["completion"] += exchange.completion_tokens
            return tokens["calls"]

        kept: dict[str, set[str]] = {}
        began = time.monotonic()
        for doc in docs:
            chosen = first_cut[doc.arxiv_id]
            kept[doc.arxiv_id] = set()
            paper = PaperText(doc.arxiv_id, doc.version, doc.title, doc.abstract)
            for start in range(0, len(chosen), args.claims_per_call):
                part = [ClaimText(c.claim_id, c.text) for c in chosen[start : start + args.claims_per_call]]
                try:
                    ids, _ = screen.screen(paper, part, record)
                except Exception as exc:  # noqa: BLE001 - a bench counts failures and goes on
                    tokens["failed"] += 1
                    print(f"  {doc.arxiv_id}: {exc}")
                    continue
                kept[doc.arxiv_id] |= ids
        seconds = time.monotonic() - began
        store.close()

    in_cut = sum(any(c.claim_id == cid for c in first_cut[a]) for a, cid in positives)
    hits = sum(cid in kept[a] for a, cid in positives)
    first_share = sum(len(first_cut[a]) for a in sample) / (len(sample) * len(claims))
    kept_share = sum(len(kept[a]) for a in sample) / (len(sample) * len(claims))
    per_call = (tokens["prompt"] + tokens["completion"]) / max(tokens["calls"], 1)
    print(f"model                {args.model} at {args.base_url} (screen prompt {screen.prompt_version})")
    n = len(positives)
    print(f"first cut            share {first_share:.4f} (sample of {len(sample)}), recall {in_cut}/{n}")
    print(f"after the screen     share {kept_share:.4f}, recall {hits / n:.3f} ({hits}/{n})")
    print(
        f"cost                 {tokens['calls']} calls ({tokens['failed']} failed), "
        f"{tokens['prompt']:,} prompt + {tokens['completion']:,} completion tokens, {seconds:.0f} s, "
        f"{per_call:.0f} tokens a call"
    )
    papers_with_calls = sum(bool(first_cut[a]) for a in sample) / len(sample)
    print(
        f"whole corpus         ~{papers_with_calls * len(corpus):,.0f} papers need a call, "
        f"~{papers_with_calls * len(corpus) * per_call / 1e6:.1f} M tokens"
    )


if __name__ == "__main__":
    main()
