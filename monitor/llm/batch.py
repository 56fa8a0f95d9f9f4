"""The OpenAI Batch API for any stage: submit a file of chat requests, poll, read the answers back.

A batch's state lives in `judge_batches` (the judge's and the relevance screen's alike), so a crash or
a cron job that exits between submit and collect loses nothing and never submits a batch twice: the
next invocation collects. A row's `stage` says whose calls it carries. Batch calls cost half.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

from openai import OpenAI

from monitor.llm.answers import looks_like_refusal
from monitor.llm.cost import cached_of
from monitor.llm.texts import Exchange, Recorder
from monitor.store.batches import add_batch, mark_batch_collected, set_batch_status, uncollected_batches
from monitor.store.db import Store
from monitor.store.records import JudgeBatch

log = logging.getLogger(__name__)

ENDPOINT = "/v1/chat/completions"
# Batch statuses after which nothing more will come.
FINISHED = {"completed", "failed", "expired", "cancelled"}
# "recheck": the screen's second readings (relevance.screen_recheck); "second": the judge's second looks.
Stage = Literal["judge", "screen", "recheck", "second"]


def open_batches(store: Store, stage: Stage) -> list[JudgeBatch]:
    """The stage's batches not collected yet, oldest first."""
    with store.session() as session:
        return uncollected_batches(session, stage)


def submit(
    store: Store,
    client: OpenAI,
    stage: Stage,
    requests: dict[str, dict[str, Any]],
    meta: dict[str, Any],
) -> str:
    """Upload `requests` (custom_id -> state with its request `body`) as one batch and record it.

    `meta` gives the row's model, prompt_version, pairs and run_id; returns the batch id."""
    lines = [
        json.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": state["body"]})
        for custom_id, state in requests.items()
    ]
    data = ("\n".join(lines) + "\n").encode()
    uploaded = client.files.create(file=(f"claim-monitor-{stage}.jsonl", data), purpose="batch")
    batch = client.batches.create(
        input_file_id=uploaded.id,
        endpoint=ENDPOINT,
        completion_window="24h",
        metadata={"tool": "claim-monitor", "stage": stage, "prompt_version": meta["prompt_version"]},
    )
    with store.session() as session:
        add_batch(
            session,
            {
                "batch_id": batch.id,
                "input_file_id": uploaded.id,
                "status": batch.status,
                "model": meta["model"],
                "prompt_version": meta["prompt_version"],
                "stage": stage,
                "requests": requests,
                "pairs": meta["pairs"],
                "run_id": meta.get("run_id"),
            },
        )
    log.info("submitted %s batch %s with %d calls", stage, batch.id, len(requests))
    return batch.id


def poll(store: Store, client: OpenAI, row: JudgeBatch) -> tuple[str, list[dict[str, Any]] | None]:
    """The batch's status, and its output lines once it has finished (None while it runs)."""
    batch = client.batches.retrieve(row.batch_id)
    if batch.status not in FINISHED:
        with store.session() as session:
            set_batch_status(session, row.id, batch.status)
        return batch.status, None
    lines: list[dict[str, Any]] = []
    if batch.output_file_id:
        content = client.files.content(batch.output_file_id).text
        lines = [json.loads(line) for line in content.splitlines() if line.strip()]
    row.output_file_id = batch.output_file_id
    return batch.status, lines


def mark_collected(store: Store, row: JudgeBatch) -> None:
    with store.session() as session:
        mark_batch_collected(session, row.id, row.output_file_id)


@dataclass
class BatchReply:
    """One output line: the model's text, or why there is none usable (`error`), and its tokens."""

    custom_id: str
    text: str | None
    refusal: str | None
    prompt_tokens: int
    completion_tokens: int
    error: str | None
    cached_tokens: int = 0


def read_reply(line: dict[str, Any]) -> BatchReply:
    """An output line read; a failed request or a refusal is its `error` (batches get no correction)."""
    response = line.get("response") or {}
    body = response.get("body") or {}
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    text, refusal = message.get("content"), message.get("refusal")
    usage = body.get("usage") or {}
    error: str | None = None
    if line.get("error") or response.get("status_code") != 200:
        error = f"batch request failed: {json.dumps(line.get('error') or body.get('error'))[:500]}"
    elif refusal or (looks_like_refusal(text) and not (text or "").lstrip().startswith("{")):
        error = f"refusal: {(refusal or text or '')[:500]}"
    return BatchReply(
        str(line.get("custom_id")),
        text,
        refusal,
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        error,
        cached_of(usage),
    )


def record_reply(recorder: Recorder, provider: str, row: JudgeBatch, reply: BatchReply) -> int | None:
    """The reply as an `llm_exchanges` row (response_format "batch"); `reply.error` as found by now."""
    return recorder(
        Exchange(
            provider=provider,
            model=row.model,
            prompt_version=row.prompt_version,
            request=row.requests[reply.custom_id]["body"],
            response=reply.text if reply.text is not None else reply.refusal,
            response_format="batch",
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cached_tokens=reply.cached_tokens,
            error=reply.error,
            extra={"batch_id": row.batch_id, "custom_id": reply.custom_id},
        )
    )
