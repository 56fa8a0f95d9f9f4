"""Two open research questions per inquiring line, from the period's evidence, by the LLM judge's model.

The seeds' research prompts ask for questions "that assume the regime has moved". With an
OpenAI-compatible judge configured we ask its model, once per line and period's evidence (an identical
request reuses the earlier answer instead of spending tokens again), through the LLM layer's transport
(monitor/llm/transport.py: a JSON schema in the strongest form the server takes, retries, one
corrective turn for an unusable answer); every call is an `llm_exchanges` row, and the run records the
tokens and any failure. Without such a judge, or when asking fails, the digest says so instead of
inventing questions: once for the whole digest when no line gets questions for the same reason
(`digest_note`), per line otherwise.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from monitor.config import Settings
from monitor.errors import JudgeError
from monitor.llm.answers import InvalidAnswer, load_json
from monitor.llm.prompts import Templates, load_templates, untrusted_filter
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.texts import Exchange, Recorder
from monitor.llm.transport import ChatTransport, Question
from monitor.store.db import Store
from monitor.store.exchanges import answers_for
from monitor.store.runs import StageCounts, StageNotes

log = logging.getLogger(__name__)

TEMPLATE = "research_questions.j2"


State = Literal["ok", "failed", "needs_llm", "no_evidence", "disabled", "not_asked"]


@dataclass
class ResearchQuestions:
    """What the digest shows in a line's research-questions section."""

    state: State
    questions: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class ResearchTally:
    """What asking research questions did, summed over a digest's lines: asked, reused, failed, calls
    and tokens (only the keys that happened); recorded on the run as `research`, with its tokens and
    errors."""

    stage: ClassVar[str] = "research"

    counts: dict[str, int] = field(default_factory=dict)
    tokens: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def stage_counts(self) -> dict[str, int]:
        return dict(self.counts)

    def stage_notes(self) -> StageNotes:
        return StageNotes(tokens=self.tokens, errors=list(self.errors))


@dataclass
class DigestAsks:
    """What the ask step before a digest did (report/asks.py): each line's research questions, as the
    digest then shows them, and how many wordings were proposed or could not be. Recorded on the run
    as `asks` (StageCounts), with `research` and a warning per wording not proposed."""

    stage: ClassVar[str] = "asks"

    period_key: str
    questions: dict[str, ResearchQuestions] = field(default_factory=dict)
    wordings_proposed: int = 0
    wordings_failed: int = 0
    wording_failures: list[str] = field(default_factory=list)
    research: ResearchTally = field(default_factory=ResearchTally)

    def as_dict(self) -> dict[str, Any]:
        states = [q.state for q in self.questions.values()]
        return {
            "period": self.period_key,
            "questions": {state: states.count(state) for state in sorted(set(states))},
            "wordings_proposed": self.wordings_proposed,
            "wordings_failed": self.wordings_failed,
        }

    def stage_counts(self) -> dict[str, Any]:
        return self.as_dict()

    def stage_notes(self) -> StageNotes:
        within: list[StageCounts] = [self.research] if self.research.counts else []
        warnings = [f"no proposed wording for {failure}" for failure in self.wording_failures]
        return StageNotes(warnings=warnings, within=within)


def not_asked() -> ResearchQuestions:
    """A line's section when nobody asked (`report/asks.py` asks before the digest is written)."""
    return ResearchQuestions("not_asked", note="Research questions were not asked for this digest.")


# Said once for the whole digest when no line has new evidence (a line's own note names the line).
_NO_EVIDENCE_ANYWHERE = "No line has new evidence this period, so no research questions were asked."


def digest_note(sections: list[ResearchQuestions]) -> str:
    """One line for the whole digest when every line's section would say the same thing instead of
    questions (turned off, no LLM judge, nothing new anywhere, the same failure); "" when the lines differ."""
    states = {q.state for q in sections}
    notes = {q.note for q in sections}
    if len(states) != 1 or "ok" in states:
        return ""
    if states == {"no_evidence"}:
        return _NO_EVIDENCE_ANYWHERE
    return notes.pop() if len(notes) == 1 else ""


def _templates(settings: Settings) -> Templates:
    # The prompt's own delimiter beyond the judge's (paper, title, abstract, claim): <evidence>.
    return load_templates(
        settings.judge.prompts_dir,
        (TEMPLATE,),
        "research questions",
        prefix="rq-",
        fallback=True,
        untrusted=untrusted_filter(("evidence",)),
    )


def parse_questions(text: str) -> list[str]:
    """The two questions from the model's answer; ValueError when it is not what was asked for."""
    data = load_json(text)
    questions = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(questions, list) or not all(isinstance(q, str) and q.strip() for q in questions):
        raise ValueError('expected {"questions": [two strings]}')
    if len(questions) < 2:
        raise ValueError(f"expected 2 questions, got {len(questions)}")
    return [" ".join(q.split()) for q in questions[:2]]


def _cached(store: Store, version: str, key: str) -> list[str] | None:
    with store.session() as s:
        for answer in answers_for(s, version, key):
            try:
                return parse_questions(answer)
            except ValueError:
                continue
    return None


def ask_questions(settings: Settings, version: str, prompt: str, where: str, recorder: Recorder) -> list[str]:
    """The two questions from the judge's model; JudgeError when none came (refusal, unusable even after
    correcting)."""
    questions: dict[str, Any] = {"type": "array", "items": {"type": "string"}}

    def schema(bounds: bool) -> dict[str, Any]:
        items = (
            {**questions, "minItems": 2, "maxItems": 2} if bounds else questions
        )  # strict mode rejects bounds
        return {
            "type": "object",
            "properties": {"questions": items},
            "required": ["questions"],
            "additionalProperties": False,
        }

    question = Question(
        messages=[{"role": "user", "content": prompt}],
        schema_name="research_questions",
        schema=schema,
        max_tokens=400,
        parse=_parse,
        correction=lambda problem: (
            f"That answer could not be used: {problem}. Answer again with one JSON object and "
            'nothing else: {"questions": ["...", "..."]}'
        ),
        temperature=0.3,  # some variety: these are ideas, not judgements
    )
    answer, _ = ChatTransport(settings.llm, "openai", version).ask(question, where, recorder)
    return answer


def _parse(text: str | None) -> list[str]:
    try:
        return parse_questions(text or "")
    except ValueError as exc:  # what was wrong goes back to the model in the corrective turn
        raise InvalidAnswer(str(exc)) from None


def research_questions(
    store: Store,
    settings: Settings,
    line: Any,
    claims: list[Any],
    run_id: int | None = None,
    tally: ResearchTally | None = None,
    ask: bool = True,
) -> ResearchQuestions:
    """Ask the judge's model for two questions about one line, given its claims with new evidence.

    `tally` (the caller's, summed over the digest's lines) gets what asking did: counts, tokens and
    errors; exchanges are stored under `run_id`. `ask=False` (the digest, a pure reader): an earlier
    identical request's answer, or `not_asked`; nothing is called.
    """
    if not settings.report.research_questions:
        return ResearchQuestions(
            "disabled", note="Research questions are turned off (report.research_questions)."
        )
    if not settings.llm_configured():
        return ResearchQuestions(
            "needs_llm",
            note="Research questions need an LLM judge: set llm.base_url or OPENAI_API_KEY.",
        )
    if not any(c.new_evidence for c in claims):
        return ResearchQuestions("no_evidence", note="No new evidence for this line this period.")
    templates = _templates(settings)
    version = templates.version
    prompt = templates.render(TEMPLATE, line=line, claims=[c for c in claims if c.new_evidence])
    key = hashlib.sha256(f"{settings.llm.model}\0{prompt}".encode()).hexdigest()
    tally = tally if tally is not None else ResearchTally()
    cached = _cached(store, version, key)
    if cached is not None:
        tally.add("reused")
        return ResearchQuestions("ok", cached, note="reused from an earlier identical request")
    if not ask:
        return not_asked()
    recorder = ExchangeRecorder(store, run_id=run_id)
    meta = {"cache_key": key, "purpose": "research_questions", "line": line.id}

    def record(exchange: Exchange) -> int | None:
        exchange.extra = {**exchange.extra, **meta}  # how _cached finds the answer again
        return recorder(exchange)

    try:
        questions = ask_questions(settings, version, prompt, f"line {line.id}", record)
    except (JudgeError, ValueError) as exc:  # ValueError: the client's own, for a body it cannot read
        error = str(exc) if isinstance(exc, JudgeError) else f"{exc.__class__.__name__}: {str(exc)[:300]}"
        log.warning("research questions for line %s failed: %s", line.id, error)
        tally.errors.append(f"research questions for line {line.id}: {error}")
        tally.add("failed")
        return ResearchQuestions(
            "failed", note=f"The LLM call failed ({exc.__class__.__name__}); see `monitor runs`."
        )
    finally:
        tally.add("asked")
        tally.add("calls", recorder.calls)
        tally.add("tokens", recorder.tokens)
        tally.tokens += recorder.tokens
    return ResearchQuestions("ok", questions)
