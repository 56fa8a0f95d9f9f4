"""Two open research questions per inquiring line, from the period's evidence, by the LLM judge's model.

The seeds' research prompts ask for questions "that assume the regime has moved". With an
OpenAI-compatible judge configured we ask its model, once per line and period's evidence (an identical
request reuses the earlier answer instead of spending tokens again), through the judge's own protocol
(OpenAIJudge.ask: a JSON schema in the strongest form the server takes, retries, one corrective turn
for an unusable answer); every call is an `llm_exchanges` row, and the run records the tokens and any
failure. Without such a judge, or when asking fails, the digest says so instead of inventing questions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jinja2
from sqlalchemy import select

from monitor.config import Settings
from monitor.errors import JudgeError
from monitor.judge.base import Exchange, Recorder
from monitor.judge.exchanges import ExchangeRecorder
from monitor.judge.openai_judge import Mode, OpenAIJudge
from monitor.judge.prompts import DEFAULT_PROMPTS_DIR, defuse
from monitor.judge.schema import InvalidAnswer
from monitor.store.db import Store
from monitor.store.models import LLMExchange
from monitor.store.runs import RunRecord

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


class ResearchAsker(OpenAIJudge):
    """The judge's OpenAI-compatible transport and structured-output protocol, asking for two research
    questions instead of assessments (as the LLM screen asks for relevant claims)."""

    schema_name = "research_questions"

    def __init__(self, settings: Settings, prompt_version: str) -> None:
        super().__init__(settings.judge)
        self.prompt_version = prompt_version

    def schema(self, ids: list[str], bounds: bool = False) -> dict[str, Any]:
        questions: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
        if bounds:  # strict mode rejects array bounds; the looser forms take them
            questions.update(minItems=2, maxItems=2)
        return {
            "type": "object",
            "properties": {"questions": questions},
            "required": ["questions"],
            "additionalProperties": False,
        }

    def max_tokens(self, ids: list[str]) -> int:
        return 400

    def request_body(self, messages: list[dict[str, str]], ids: list[str], mode: Mode) -> dict[str, Any]:
        request = super().request_body(messages, ids, mode)
        request["temperature"] = 0.3  # some variety: these are ideas, not judgements
        return request

    def questions(self, prompt: str, where: str, recorder: Recorder) -> list[str]:
        """The two questions; JudgeError when none came (refusal, unusable even after correcting)."""
        questions, _ = self.ask(
            [{"role": "user", "content": prompt}],
            [],
            where,
            recorder,
            parse=_parse,
            correction=lambda problem: (
                f"That answer could not be used: {problem}. Answer again with one JSON object and "
                'nothing else: {"questions": ["...", "..."]}'
            ),
        )
        return questions


def _parse(text: str | None) -> list[str]:
    try:
        return parse_questions(text or "")
    except ValueError as exc:  # what was wrong goes back to the model in the corrective turn
        raise InvalidAnswer(str(exc)) from None


def research_questions(
    store: Store, settings: Settings, line: Any, claims: list[Any], run: RunRecord | None = None
) -> ResearchQuestions:
    """Ask the judge's model for two questions about one line, given its claims with new evidence.

    With a run, its counts (`research`), tokens and errors record what asking did.
    """
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
    key = hashlib.sha256(f"{settings.judge.model}\0{prompt}".encode()).hexdigest()
    # Summed over the digest's lines: asked, reused, failed, calls, tokens.
    tally: dict[str, int] = run.counts.setdefault("research", {}) if run is not None else {}
    cached = _cached(store, version, key)
    if cached is not None:
        tally["reused"] = tally.get("reused", 0) + 1
        return ResearchQuestions("ok", cached, note="reused from an earlier identical request")
    recorder = ExchangeRecorder(store, run_id=run.id if run else None)
    meta = {"cache_key": key, "purpose": "research_questions", "line": line.id}

    def record(exchange: Exchange) -> int | None:
        exchange.extra = {**exchange.extra, **meta}  # how _cached finds the answer again
        return recorder(exchange)

    try:
        questions = ResearchAsker(settings, version).questions(prompt, f"line {line.id}", record)
    except (JudgeError, ValueError) as exc:  # ValueError: the client's own, for a body it cannot read
        error = str(exc) if isinstance(exc, JudgeError) else f"{exc.__class__.__name__}: {str(exc)[:300]}"
        log.warning("research questions for line %s failed: %s", line.id, error)
        if run is not None:
            run.errors.append(f"research questions for line {line.id}: {error}")
        tally["failed"] = tally.get("failed", 0) + 1
        return ResearchQuestions(
            "failed", note=f"The LLM call failed ({exc.__class__.__name__}); see `monitor runs`."
        )
    finally:
        tally["asked"] = tally.get("asked", 0) + 1
        tally["calls"] = tally.get("calls", 0) + recorder.calls
        tally["tokens"] = tally.get("tokens", 0) + recorder.tokens
        if run is not None:
            run.tokens += recorder.tokens
    return ResearchQuestions("ok", questions)
