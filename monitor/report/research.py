"""Two open research questions per inquiring line, from the period's evidence, by the LLM judge's model.

The seeds' research prompts ask for questions "that assume the regime has moved". With an
OpenAI-compatible judge configured we ask its model, once per line and period's evidence (an identical
request reuses the earlier answer instead of spending tokens again); every call is an `llm_exchanges` row.
Without such a judge, or when the call fails, the digest says so instead of inventing questions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jinja2
from openai import OpenAI, OpenAIError
from sqlalchemy import select

from monitor.config import Settings
from monitor.judge.base import Exchange
from monitor.judge.exchanges import ExchangeRecorder
from monitor.judge.prompts import DEFAULT_PROMPTS_DIR, defuse
from monitor.store.db import Store
from monitor.store.models import LLMExchange

log = logging.getLogger(__name__)

TEMPLATE = "research_questions.j2"
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
# The prompt's own delimiter beyond the judge's (paper, title, abstract, claim): <evidence>.
_EVIDENCE_TAG = re.compile(r"<\s*/?\s*evidence\b[^<>]*>?", re.IGNORECASE)


def untrusted(text: object) -> str:
    """Paper or claim text with anything shaped like one of the prompt's delimiter tags defused."""
    defused = defuse(" ".join(str(text or "").split()))
    return _EVIDENCE_TAG.sub(lambda m: m.group(0).replace("<", "&lt;").replace(">", "&gt;"), defused)


State = Literal["ok", "failed", "needs_llm", "no_evidence", "disabled"]


@dataclass
class ResearchQuestions:
    """What the digest shows in a line's research-questions section."""

    state: State
    questions: list[str] = field(default_factory=list)
    note: str = ""


def prompt_dir(settings: Settings) -> Path:
    return settings.judge.prompts_dir or DEFAULT_PROMPTS_DIR


def _template(settings: Settings) -> tuple[jinja2.Template, str]:
    directory = prompt_dir(settings)
    path = directory / TEMPLATE
    if not path.is_file():
        directory, path = DEFAULT_PROMPTS_DIR, DEFAULT_PROMPTS_DIR / TEMPLATE
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)), undefined=jinja2.StrictUndefined, autoescape=False
    )
    env.filters["untrusted"] = untrusted
    version = "rq-" + hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return env.get_template(TEMPLATE), version


def parse_questions(text: str) -> list[str]:
    """The two questions from the model's answer; ValueError when it is not what was asked for."""
    data = json.loads(_FENCE.sub("", text.strip()))
    questions = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(questions, list) or not all(isinstance(q, str) and q.strip() for q in questions):
        raise ValueError('expected {"questions": [two strings]}')
    if len(questions) < 2:
        raise ValueError(f"expected 2 questions, got {len(questions)}")
    return [" ".join(q.split()) for q in questions[:2]]


def _cached(store: Store, version: str, key: str) -> list[str] | None:
    with store.session() as s:
        rows = s.scalars(
            select(LLMExchange)
            .where(LLMExchange.prompt_version == version, LLMExchange.error.is_(None))
            .order_by(LLMExchange.id.desc())
        )
        for row in rows:
            meta = (row.request or {}).get("meta") or {}
            if meta.get("cache_key") == key and row.response:
                try:
                    return parse_questions(row.response)
                except ValueError:
                    continue
    return None


def research_questions(
    store: Store, settings: Settings, line: Any, claims: list[Any], run_id: int | None = None
) -> ResearchQuestions:
    """Ask the judge's model for two questions about one line, given its claims with new evidence."""
    if not settings.report.research_questions:
        return ResearchQuestions(
            "disabled", note="Research questions are turned off (report.research_questions)."
        )
    if settings.judge.resolved_provider() != "openai":
        return ResearchQuestions(
            "needs_llm",
            note="Research questions need an LLM judge: set judge.base_url or OPENAI_API_KEY.",
        )
    if not any(c.new_evidence for c in claims):
        return ResearchQuestions("no_evidence", note="No new evidence for this line this period.")
    template, version = _template(settings)
    prompt = template.render(line=line, claims=[c for c in claims if c.new_evidence]).strip()
    model = settings.judge.model
    key = hashlib.sha256(f"{model}\0{prompt}".encode()).hexdigest()
    cached = _cached(store, version, key)
    if cached is not None:
        return ResearchQuestions("ok", cached, note="reused from an earlier identical request")
    request: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0.3,
        "max_tokens": 400,
    }
    recorder = ExchangeRecorder(store, run_id=run_id)
    exchange = Exchange(
        provider="openai",
        model=model,
        prompt_version=version,
        request=request,
        response_format="text",
        extra={"cache_key": key, "purpose": "research_questions", "line": line.id},
    )
    started = time.monotonic()
    try:
        response = _client(settings).chat.completions.create(**request)
        exchange.response = response.choices[0].message.content or ""
        if response.usage is not None:
            exchange.prompt_tokens = response.usage.prompt_tokens or 0
            exchange.completion_tokens = response.usage.completion_tokens or 0
        questions = parse_questions(exchange.response)
    except (OpenAIError, ValueError, IndexError) as exc:
        exchange.error = f"{exc.__class__.__name__}: {str(exc)[:300]}"
        log.warning("research questions for line %s failed: %s", line.id, exchange.error)
        return ResearchQuestions(
            "failed", note=f"The LLM call failed ({exc.__class__.__name__}); see `monitor runs`."
        )
    finally:
        exchange.latency_ms = int((time.monotonic() - started) * 1000)
        recorder(exchange)
    return ResearchQuestions("ok", questions)


def _client(settings: Settings) -> OpenAI:
    key = settings.judge.api_key.get_secret_value() if settings.judge.api_key else "no-key"
    return OpenAI(
        api_key=key,
        base_url=settings.judge.base_url,
        timeout=settings.judge.timeout_seconds,
        max_retries=min(settings.judge.max_retries, 2),
    )
