"""What a week of the LLM path costs: the screen of every claim, judging what it keeps, second looks.

    python bench/llm_cost.py [--claims 35|1000] [--papers 6000] [--keep-share F] [--second-look-share F]

The week is scale.py's: the first `--papers` corpus papers (held-out ones left out). The library is the
seeds' 35 claims or scale.py's 1,000 real claim texts. The screen's calls are counted as the relevance
stage would make them (monitor/relevance/screen.py: claim groups of `relevance.screen_claims_per_call`,
`screen_papers_per_call` papers a call, each group's prompt prefix cached from its second call on);
the screen's second reading (`relevance.screen_recheck`) reads each group's claims again for the share
of papers a first reading keeps for some claim of it (RECHECK_PAPER_SHARE, drawn at random per group);
the judge reads the share of the week's pairs the screen keeps and the second look its share of those
(a paper's second looks sharing a call, at the measured looks a call), all measured on a real week
through the teacher (docs/relevance.md, bench/llm_path_week.py) unless
given. Prices are the project's defaults (gpt-4o-mini: $0.15 / $0.075 cached / $0.60 per million
prompt / cached prompt / completion tokens), live and through the Batch API (half of each): under
batch (`relevance.screen_batch`, `llm.batch`) the screen, the judge's first readings and their second
looks are at batch rates (`judge.second_look_batch`; monitor/judge/batch.py). Nothing is called and
nothing is stored.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import SEED_CLAIMS, library, seed_texts, week  # noqa: E402

from monitor.claims.importer import import_claims  # noqa: E402
from monitor.config import Settings  # noqa: E402
from monitor.judge.estimate import price_kept, shipped_keep  # noqa: E402
from monitor.judge.second_look import LookRate  # noqa: E402
from monitor.llm.cost import token_cost  # noqa: E402
from monitor.llm.texts import ClaimText, PaperText  # noqa: E402
from monitor.relevance.screen import RECHECK_PAPER_SHARE, ScreenCounter, load_screen_prompts  # noqa: E402
from monitor.store import open_store  # noqa: E402
from monitor.store.claims import active_claims  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def claims_of(n: int, folder: Path) -> list[ClaimText]:
    """The seeds' claims, and for a larger library scale.py's real claim texts beside them."""
    settings = Settings()
    settings.database.url = f"sqlite:///{folder / 'claims.db'}"
    paths = [REPO / "seeds"]
    if n > SEED_CLAIMS:
        from scale import claim_file

        claim_file(folder / "library.yaml", library(n, seed_texts()))
        paths.append(folder / "library.yaml")
    store = open_store(settings.database.url)
    try:
        import_claims(store, settings, paths)
        with store.session() as session:
            return [ClaimText(c.id, c.text, c.date_text) for c in active_claims(session)]
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=SEED_CLAIMS)
    parser.add_argument("--papers", type=int, default=6000)
    parser.add_argument("--keep-share", type=float, help="default: the shipped one (judge/estimate.py)")
    parser.add_argument("--second-look-share", type=float, default=None)
    parser.add_argument("--recheck-share", type=float, default=RECHECK_PAPER_SHARE)
    args = parser.parse_args()
    began = time.monotonic()
    settings = Settings()
    cfg = settings.relevance
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        claims = claims_of(args.claims, folder)
        week(folder / "week.jsonl", args.papers)
        rows = [json.loads(line) for line in (folder / "week.jsonl").open(encoding="utf-8")]
    papers = [PaperText(r["arxiv_id"], int(r.get("version") or 1), r["title"], r["abstract"]) for r in rows]
    counter = ScreenCounter(
        load_screen_prompts(), papers, claims, cfg.screen_claims_per_call, cfg.screen_papers_per_call
    )
    screen = counter.count(np.ones((len(claims), len(papers)), dtype=bool), 0)
    screen += counter.flush()
    per_group, per_call = cfg.screen_claims_per_call, cfg.screen_papers_per_call
    again = ScreenCounter(load_screen_prompts(again=True), papers, claims, per_group, per_call)
    picked = np.zeros((len(claims), len(papers)), dtype=bool)
    draw = np.random.default_rng(20261129)
    for group in again.groups:  # per group, the papers a first reading kept for one of its claims
        picked[np.ix_(group, np.flatnonzero(draw.random(len(papers)) < args.recheck_share))] = True
    recheck = again.count(picked & cfg.screen_recheck, 0)
    recheck += again.flush()
    pairs = len(claims) * len(papers)
    rng = random.Random(20261128)
    sample = [(rng.choice(papers), rng.choice(claims)) for _ in range(200)]
    out: dict[str, object] = {"claims": len(claims), "papers": len(papers), "pairs": pairs}
    shipped = shipped_keep(settings)
    share = args.keep_share or shipped.share
    looks = shipped.looks
    if args.second_look_share is not None:  # another share, each look a call as measured
        looks = LookRate(args.second_look_share, looks.per_call)
    for batch in (False, True):
        # Through the Batch API: the screen's batches (relevance.screen_batch) and the judge's (llm.batch).
        priced = settings.model_copy(
            update={
                "llm": settings.llm.model_copy(update={"batch": batch}),
                "relevance": cfg.model_copy(update={"screen_batch": batch}),
            }
        )
        kept = price_kept(priced, pairs, share, sample, looks=looks)
        screen_usd, recheck_usd = (
            token_cost(priced, c.prompt_tokens, c.completion_tokens, batch, c.cached_tokens)
            for c in (screen, recheck)
        )
        out["batch" if batch else "live"] = {
            "screen": {
                "calls": screen.calls,
                "prompt_tokens": screen.prompt_tokens,
                "cached_tokens": screen.cached_tokens,
                "completion_tokens": screen.completion_tokens,
                "usd": round(screen_usd, 3),
            },
            "screen_second_reading": {
                "papers": recheck.papers,
                "calls": recheck.calls,
                "prompt_tokens": recheck.prompt_tokens,
                "cached_tokens": recheck.cached_tokens,
                "usd": round(recheck_usd, 3),
            },
            "judge_and_second_look": kept.as_dict(),
            "usd_week": round(screen_usd + recheck_usd + kept.cost, 3),
        }
    out["seconds"] = round(time.monotonic() - began, 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
