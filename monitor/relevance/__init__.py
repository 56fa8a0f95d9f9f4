"""Relevance stage: picks the (paper version, claim) pairs worth judging.

Each paper version is scored once against each active claim it has not been scanned for
(`relevance_marks`, see `select.py`). The score (`scoring.py`) is BM25 against a frozen reference
lexicon (`bm25.py`), normalised to 0..1 per claim, plus, in the default hybrid method, the MiniLM
cosine between the claim query (claim, note title, line questions) and the paper title. No score
depends on the other papers in the batch, and each claim's cut is the score above which `share` of
a fixed reference sample of papers lie (`reference.py`), so a daily run, a weekly replay and a
first whole-corpus scan select the same pairs. bench/relevance_bench.py measures recall, the share
of pairs selected, speed and memory on the 22,120-paper snapshot; bench/relevance_variants.py shows
that embedding whole abstracts (or the claim's line) does not lift recall at 2%, so titles stay.

With `relevance.screen = "llm"` the stage has two steps: the cut above at the wider `screen_share`,
then an LLM screen (`screen.py`) that keeps the pairs whose paper the model says bears on the claim.
With an LLM judge the defaults widen to 10% with plain BM25 (`RelevanceSettings.resolved`);
`monitor/judge/estimate.py` prices each setting for `monitor judge --dry-run` (docs/relevance.md).
"""

from monitor.relevance.select import RelevanceSummary, screen_candidates, select_candidates

__all__ = ["RelevanceSummary", "screen_candidates", "select_candidates"]
