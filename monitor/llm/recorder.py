"""Recording LLM exchanges: each request a model is sent becomes one `llm_exchanges` row.

The recorder also keeps the run's totals (calls, tokens) so a stage can report them and keep to
its token budget. It is called from worker threads, hence the lock around the counters.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from monitor.llm.texts import Exchange
from monitor.store.db import Store
from monitor.store.exchanges import add_exchange


@dataclass
class ExchangeRecorder:
    """A `Recorder` that stores exchanges for one run and counts their tokens."""

    store: Store
    run_id: int | None = None
    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, from the provider's prefix cache (priced apart)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __call__(self, exchange: Exchange) -> int | None:
        request = dict(exchange.request)
        meta = dict(exchange.extra)
        if exchange.estimated:
            meta["estimated_tokens"] = list(exchange.estimated)
        if meta:
            request["meta"] = meta
        fields = {
            "run_id": self.run_id,
            "provider": exchange.provider,
            "model": exchange.model,
            "prompt_version": exchange.prompt_version,
            "request": request,
            "response": exchange.response,
            "response_format": exchange.response_format,
            "prompt_tokens": exchange.prompt_tokens,
            "completion_tokens": exchange.completion_tokens,
            "cached_tokens": exchange.cached_tokens,
            "latency_ms": exchange.latency_ms,
            "error": exchange.error,
        }
        with self.store.session() as session:
            row_id = add_exchange(session, fields)
        # A server that reports no usage still spent tokens: count the local estimate against the budget.
        prompt, completion = exchange.estimated or (exchange.prompt_tokens, exchange.completion_tokens)
        with self._lock:
            self.calls += 1
            self.failed_calls += 1 if exchange.error else 0
            self.prompt_tokens += prompt
            self.completion_tokens += completion
            self.cached_tokens += exchange.cached_tokens if not exchange.estimated else 0
        return row_id
