"""The LLM screen: a second relevance stage that asks an LLM which first-cut claims a paper bears on.

Lexical and title-embedding scores find papers on a claim's topic, but a paper that bears on a claim
by argument ("homogenised answers" against a claim about diversity) often ranks far below the 2% cut
(bench/relevance_bench.py --curve). With `relevance.screen = "llm"` the first stage keeps a wider
cut (`screen_share` of the reference sample per claim) and marks those pairs `pending`; this stage
sends each paper once, with its pending claims, to the judge's OpenAI-compatible server and keeps
the claims the model names. The call is short (a list of ids, no rationale or quote), so screening a
paper costs a fraction of judging its pairs.

Each paper's answer is committed on its own, so a crash or a stop loses at most the calls in flight;
a failed call (after retries and one corrective turn) leaves its pairs pending for the next run.
Every request is logged in `llm_exchanges` like the judge's, under its own prompt version. With
`relevance.screen_batch` the pending pairs go through the Batch API instead (screen_batch.py).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from openai import OpenAI
from pydantic import BaseModel, ConfigDict, ValidationError

from monitor.config import Settings
from monitor.errors import ConfigError, MonitorError
from monitor.llm.answers import InvalidAnswer, load_json
from monitor.llm.cost import estimate_tokens, token_cost
from monitor.llm.prompts import Templates, load_templates
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.texts import ClaimText, PaperText, Recorder
from monitor.llm.transport import ChatTransport, Mode, Question
from monitor.llm.workers import Budget, run_bounded
from monitor.store import Store
from monitor.store.candidates import count_screen_pending, pairs_to_screen, save_screen_answer
from monitor.store.runs import RunRecord

TEMPLATE_NAMES = ("screen_system.j2", "screen_user.j2", "screen_correction.j2")


@dataclass(frozen=True)
class ScreenPrompts:
    """The screen's templates and their content-hash version."""

    templates: Templates

    @property
    def version(self) -> str:
        return self.templates.version

    def messages(self, paper: PaperText, claims: list[ClaimText]) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.templates.render("screen_system.j2")},
            {
                "role": "user",
                "content": self.templates.render("screen_user.j2", paper=paper.for_prompt(), claims=claims),
            },
        ]

    def correction(self, problem: str, claim_ids: list[str]) -> str:
        return self.templates.render("screen_correction.j2", problem=problem, claim_ids=claim_ids)


def load_screen_prompts(directory: Path | None = None) -> ScreenPrompts:
    return ScreenPrompts(load_templates(directory, TEMPLATE_NAMES, "relevance screen"))


class ScreenAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    relevant: list[str]


def screen_schema(claim_ids: list[str], bounds: bool = False) -> dict[str, Any]:
    """The `response_format` schema: a list of ids drawn from those asked."""
    items: dict[str, Any] = {"type": "array", "items": {"type": "string", "enum": list(claim_ids)}}
    if bounds:
        items["maxItems"] = len(claim_ids)
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["relevant"],
        "properties": {"relevant": items},
    }


def parse_screen(text: str | None, claim_ids: list[str]) -> set[str]:
    """The claim ids a reply keeps; raises InvalidAnswer for anything but a list of the ids asked."""
    if not text or not text.strip():
        raise InvalidAnswer("the reply is empty")
    data = load_json(text)
    if isinstance(data, list):
        data = {"relevant": data}
    try:
        answer = ScreenAnswer.model_validate(data)
    except ValidationError as exc:
        raise InvalidAnswer(f'expected {{"relevant": [claim ids]}}: {exc.errors()[0]["msg"]}') from None
    kept = {i.strip() for i in answer.relevant}
    unknown = sorted(kept - set(claim_ids))
    if unknown:
        raise InvalidAnswer(f"ids not among those asked: {unknown}; use only {claim_ids}")
    return kept


class LLMScreen:
    """The screen's question, asked through the LLM layer's transport (retries, format fallback, logging)."""

    name = "openai-screen"

    def __init__(self, settings: Settings, client: OpenAI | None = None) -> None:
        judge = settings.judge
        if settings.relevance.screen_model:
            judge = judge.model_copy(update={"model": settings.relevance.screen_model})
        if not judge.has_server():
            raise ConfigError(
                "relevance.screen = 'llm' needs an LLM: set judge.base_url (OPENAI_BASE_URL) or an API key "
                "(OPENAI_API_KEY)"
            )
        self.prompts = load_screen_prompts(judge.prompts_dir)
        self.prompt_version = self.prompts.version
        self.model = judge.model
        self.max_concurrency = max(1, judge.concurrency)
        self.transport = ChatTransport(judge, self.name, self.prompt_version, client)

    @property
    def mode(self) -> Mode | None:
        return self.transport.mode

    def question(self, paper: PaperText, claims: list[ClaimText]) -> Question[set[str]]:
        ids = [c.id for c in claims]
        return Question(
            messages=self.prompts.messages(paper, claims),
            schema_name="relevant_claims",
            schema=lambda bounds: screen_schema(ids, bounds=bounds),
            # A list of ids: about ten tokens each, plus the braces; room for a model that pads.
            max_tokens=64 + 16 * len(ids),
            parse=lambda text: parse_screen(text, ids),
            correction=lambda problem: self.prompts.correction(problem, ids),
        )

    def screen(
        self, paper: PaperText, claims: list[ClaimText], recorder: Recorder | None = None
    ) -> tuple[set[str], int | None]:
        """The ids of `claims` the paper bears on, and the exchange that said so."""
        return self.transport.ask(self.question(paper, claims), f"{paper.arxiv_id}v{paper.version}", recorder)


@dataclass
class ScreenSummary:
    """What one screening pass did."""

    papers: int = 0  # paper versions whose pending pairs were all answered
    calls: int = 0  # requests made, retries and corrective turns included
    kept: int = 0
    dropped: int = 0
    failed_papers: int = 0  # left pending for the next run
    pending_left: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stopped: str | None = None  # why screening stopped early: budget, stop signal, server unavailable
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    batches_submitted: int = 0  # relevance.screen_batch only
    batches_waiting: int = 0
    batches_collected: int = 0

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["errors"] = self.errors[:10]
        out["seconds"] = round(self.seconds, 2)
        return out


@dataclass
class ScreenUnit:
    """One call's worth: a paper version and up to `screen_claims_per_call` of its pending claims."""

    paper: PaperText
    claims: list[ClaimText]
    estimated_tokens: int = 0

    @property
    def key(self) -> tuple[str, int]:
        return self.paper.arxiv_id, self.paper.version


def pending_screen_units(store: Store, per_call: int, claim_ids: list[str] | None) -> list[ScreenUnit]:
    with store.session() as session:
        rows = pairs_to_screen(session, claim_ids)
    units: list[ScreenUnit] = []
    for arxiv_id, version, claim_id, text, title, abstract in rows:
        last = units[-1] if units else None
        if last is None or last.key != (arxiv_id, version) or len(last.claims) >= per_call:
            last = ScreenUnit(PaperText(arxiv_id, version, title, abstract), [])
            units.append(last)
        last.claims.append(ClaimText(id=claim_id, text=text))
    return units


def estimate_screen_units(units: list[ScreenUnit], prompts: ScreenPrompts) -> tuple[int, int]:
    """Each unit's estimated tokens; returns the (prompt, completion) totals."""
    prompt = completion = 0
    for unit in units:
        asked = estimate_tokens("\n".join(m["content"] for m in prompts.messages(unit.paper, unit.claims)))
        # An answer lists some of the ids asked, about ten tokens each: budget four a claim asked.
        answer = 8 + 4 * len(unit.claims)
        unit.estimated_tokens = asked + answer
        prompt, completion = prompt + asked, completion + answer
    return prompt, completion


def save_answer(store: Store, unit: ScreenUnit, kept: set[str], exchange_id: int | None) -> tuple[int, int]:
    """Mark the unit's pairs kept or dropped (those still pending); returns (kept, dropped)."""
    answer = {claim.id: claim.id in kept for claim in unit.claims}
    with store.session() as session:
        save_screen_answer(session, unit.paper.arxiv_id, unit.paper.version, answer, exchange_id)
    return len(kept), len(unit.claims) - len(kept)


def screen_pending(
    store: Store,
    settings: Settings,
    run: RunRecord | None = None,
    claim_ids: list[str] | None = None,
    screen: LLMScreen | None = None,
) -> ScreenSummary:
    """Screen every pending pair (of `claim_ids`, default all), a paper per call, `judge.concurrency`
    calls at once; stops cleanly on the run's stop signal or when `judge.token_budget` is spent.
    With `relevance.screen_batch`, collect finished screen batches and submit the rest instead."""
    began = time.monotonic()
    summary = ScreenSummary()
    recorder = ExchangeRecorder(store, run.id if run is not None else None)
    if settings.relevance.screen_batch:
        from monitor.relevance.screen_batch import screen_by_batch

        screen_by_batch(store, settings, screen, recorder, summary, claim_ids)
    else:
        units = pending_screen_units(store, settings.relevance.screen_claims_per_call, claim_ids)
        if units:
            _screen_units(store, settings, screen or LLMScreen(settings), units, recorder, summary, run)
    summary.calls = recorder.calls
    summary.prompt_tokens, summary.completion_tokens = recorder.prompt_tokens, recorder.completion_tokens
    with store.session() as session:
        summary.pending_left = count_screen_pending(session, claim_ids)
    summary.seconds = time.monotonic() - began
    if run is not None:
        run.tokens += recorder.tokens
        run.add("screen", summary.as_dict())
        if summary.failed_papers:
            run.warnings.append(
                f"relevance screen: {summary.failed_papers} paper(s) failed and stay pending "
                f"(first error: {summary.errors[0][:200]})"
            )
    return summary


def _screen_units(
    store: Store,
    settings: Settings,
    screen: LLMScreen,
    units: list[ScreenUnit],
    recorder: ExchangeRecorder,
    summary: ScreenSummary,
    run: RunRecord | None,
) -> None:
    budget = settings.judge.token_budget
    if budget is not None:
        estimate_screen_units(units, screen.prompts)
    failed: set[tuple[str, int]] = set()
    done: set[tuple[str, int]] = set()

    def finish(unit: ScreenUnit, result: tuple[set[str], int | None] | MonitorError) -> None:
        if isinstance(result, MonitorError):
            failed.add(unit.key)
            summary.errors.append(str(result))
            return
        kept, dropped = save_answer(store, unit, *result)
        summary.kept, summary.dropped = summary.kept + kept, summary.dropped + dropped
        done.add(unit.key)

    end = run_bounded(
        units,
        lambda unit: screen.screen(unit.paper, unit.claims, recorder),
        finish,
        workers=screen.max_concurrency,
        name="screen",
        budget=Budget(budget, lambda: recorder.tokens, lambda u: u.estimated_tokens),
        should_stop=run.should_stop if run is not None else None,
    )
    if end.fatal:
        summary.stopped = "the LLM server refuses requests"
    elif end.stopped:
        summary.stopped = "stop requested"
    elif end.budget_exhausted:
        summary.stopped = f"token budget {budget} spent"
    summary.papers = len(done - failed)
    summary.failed_papers = len(failed)


def estimate_screen(store: Store, settings: Settings) -> dict[str, object]:
    """What screening the pending pairs would take (calls, tokens, USD at the judge's rates, halved
    with `relevance.screen_batch`). Calls nothing: this is `monitor judge --dry-run`'s view of the screen."""
    units = pending_screen_units(store, settings.relevance.screen_claims_per_call, None)
    prompt, completion = estimate_screen_units(units, load_screen_prompts(settings.judge.prompts_dir))
    cost = token_cost(settings, prompt, completion, batch=settings.relevance.screen_batch)
    return {
        "pairs": sum(len(u.claims) for u in units),
        "calls": len(units),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost_estimate": round(cost, 4),
    }
