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
`relevance.screen_batch` the pending pairs go through the Batch API instead: each pass collects the
finished screen batches, then submits the pending pairs no open batch carries; a pair whose answer
failed (refused, invalid, expired) stays pending, so the judge does not see it, and goes into the next
batch. The LLM engine (monitor/llm/engine.py) runs both; this module keeps the screen's prompts, its
answer schema and what it writes.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import openai
from openai import OpenAI
from pydantic import BaseModel, ConfigDict, ValidationError

from monitor.config import Settings
from monitor.errors import ConfigError, MonitorError
from monitor.llm import batch as batches
from monitor.llm.answers import InvalidAnswer, load_json
from monitor.llm.cost import token_cost
from monitor.llm.engine import BatchRun, run_live
from monitor.llm.prompts import Templates, load_templates
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.texts import ClaimText, PaperText, Recorder
from monitor.llm.transport import ChatTransport, Mode, Question
from monitor.llm.units import CallCounts, Pair, UnitPricing, WorkUnit, group_units
from monitor.store import Store
from monitor.store.candidates import count_screen_pending, pairs_to_screen, save_screen_answer
from monitor.store.runs import StageNotes

TEMPLATE_NAMES = ("screen_system.j2", "screen_user.j2", "screen_correction.j2")


@dataclass(frozen=True)
class ScreenPrompts:
    """The screen's templates and their content-hash version."""

    templates: Templates

    @property
    def version(self) -> str:
        return self.templates.version

    def system(self) -> str:
        return self.templates.render("screen_system.j2")

    def user(self, paper: PaperText, claims: list[ClaimText]) -> str:
        return self.templates.render("screen_user.j2", paper=paper.for_prompt(), claims=claims)

    def messages(self, paper: PaperText, claims: list[ClaimText]) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system()},
            {"role": "user", "content": self.user(paper, claims)},
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
        llm = settings.llm
        if settings.relevance.screen_model:
            llm = llm.model_copy(update={"model": settings.relevance.screen_model})
        if not settings.llm_configured():
            raise ConfigError(
                "relevance.screen = 'llm' needs an LLM: set llm.base_url (OPENAI_BASE_URL) or an API key "
                "(OPENAI_API_KEY)"
            )
        self.prompts = load_screen_prompts(settings.judge.prompts_dir)
        self.prompt_version = self.prompts.version
        self.model = llm.model
        self.max_concurrency = max(1, llm.concurrency)
        self.transport = ChatTransport(llm, self.name, self.prompt_version, client)

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
class ScreenSummary(CallCounts):
    """What one screening pass did (recorded on the run as `screen`, within relevance's notes)."""

    stage: ClassVar[str] = "screen"

    papers: int = 0  # paper versions whose pending pairs were all answered
    kept: int = 0
    dropped: int = 0
    failed_papers: int = 0  # left pending for the next run
    pending_left: int = 0
    stopped: str | None = None  # why screening stopped early: budget, stop signal, server unavailable
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["errors"] = self.errors[:10]
        out["seconds"] = round(self.seconds, 2)
        return out

    def stage_counts(self) -> dict[str, object]:
        return self.as_dict()

    def stage_notes(self) -> StageNotes:
        warnings: list[str] = []
        if self.failed_papers:
            warnings.append(
                f"relevance screen: {self.failed_papers} paper(s) failed and stay pending "
                f"(first error: {self.errors[0][:200]})"
            )
        return StageNotes(tokens=self.tokens, warnings=warnings)


def pending_screen_units(store: Store, per_call: int, claim_ids: list[str] | None) -> list[WorkUnit]:
    """The pending pairs, a paper version's claims `per_call` to a call (monitor/llm/units.py)."""
    with store.session() as session:
        rows = pairs_to_screen(session, claim_ids)
    return group_units(
        (
            (
                PaperText(arxiv_id, version, title, abstract),
                Pair(ClaimText(claim_id, text), _key(arxiv_id, version, claim_id)),
            )
            for arxiv_id, version, claim_id, text, title, abstract in rows
        ),
        per_call,
    )


def _key(arxiv_id: str, version: int, claim_id: str) -> str:
    return f"{arxiv_id}v{version}/{claim_id}"


def screen_pricing(prompts: ScreenPrompts) -> UnitPricing:
    """A screen call's estimate: the tokens of its messages joined by newlines (system, then user)."""
    return UnitPricing(
        prompts.user,
        # An answer lists some of the ids asked, about ten tokens each: budget four a claim asked.
        lambda claims: 8 + 4 * claims,
        fixed_chars=len(prompts.system()) + 1,
    )


def estimate_screen_units(units: list[WorkUnit], prompts: ScreenPrompts) -> tuple[int, int]:
    """Each unit's estimated tokens; returns the (prompt, completion) totals."""
    return screen_pricing(prompts).estimate(units)


class ScreenWriter:
    """The screen's writer for the LLM engine: marks a unit's pairs kept or dropped, counts failures."""

    def __init__(self, store: Store, summary: ScreenSummary) -> None:
        self.store, self.summary = store, summary
        self.done: set[tuple[str, int]] = set()  # paper versions answered
        self.failed: set[tuple[str, int]] = set()  # paper versions with a unit that failed: still pending

    def parse(self, unit: WorkUnit, text: str | None) -> set[str]:
        return parse_screen(text, [c.id for c in unit.claims])

    def write(self, unit: WorkUnit, kept: set[str], exchange_id: int | None) -> None:
        answer = {claim.id: claim.id in kept for claim in unit.claims}
        with self.store.session() as session:
            save_screen_answer(session, unit.paper.arxiv_id, unit.paper.version, answer, exchange_id)
        self.summary.kept += len(kept)
        self.summary.dropped += len(unit.claims) - len(kept)
        self.done.add(unit.paper_key)

    def fail(self, unit: WorkUnit, message: str, error: MonitorError | None = None) -> None:
        self.failed.add(unit.paper_key)
        self.summary.errors.append(message)

    def close(self) -> None:
        self.summary.papers = len(self.done - self.failed)
        self.summary.failed_papers = len(self.failed)


def screen_pending(
    store: Store,
    settings: Settings,
    run_id: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    claim_ids: list[str] | None = None,
    screen: LLMScreen | None = None,
) -> ScreenSummary:
    """Screen every pending pair (of `claim_ids`, default all), a paper per call, `llm.concurrency`
    calls at once; stops cleanly when `should_stop()` (the run's stop signal) or when `llm.token_budget`
    is spent. Exchanges are stored under `run_id`.
    With `relevance.screen_batch`, collect finished screen batches and submit the rest instead."""
    began = time.monotonic()
    summary = ScreenSummary()
    recorder = ExchangeRecorder(store, run_id)
    writer = ScreenWriter(store, summary)
    pending = functools.partial(
        pending_screen_units, store, settings.relevance.screen_claims_per_call, claim_ids
    )
    if settings.relevance.screen_batch:
        _by_batch(store, settings, screen, pending, recorder, writer)
    elif units := pending():
        _live(settings, screen or LLMScreen(settings), units, recorder, writer, should_stop)
    writer.close()
    summary.calls = recorder.calls
    summary.prompt_tokens, summary.completion_tokens = recorder.prompt_tokens, recorder.completion_tokens
    with store.session() as session:
        summary.pending_left = count_screen_pending(session, claim_ids)
    summary.seconds = time.monotonic() - began
    return summary


def _live(
    settings: Settings,
    screen: LLMScreen,
    units: list[WorkUnit],
    recorder: ExchangeRecorder,
    writer: ScreenWriter,
    should_stop: Callable[[], bool] | None,
) -> None:
    estimate_screen_units(units, screen.prompts)
    end = run_live(
        units,
        lambda unit: screen.screen(unit.paper, unit.claims, recorder),
        writer,
        llm=settings.llm,
        recorder=recorder,
        workers=screen.max_concurrency,
        name="screen",
        should_stop=should_stop,
    )
    if end.fatal:
        writer.summary.stopped = "the LLM server refuses requests"
    elif end.stopped:
        writer.summary.stopped = "stop requested"
    elif end.budget_exhausted:
        writer.summary.stopped = f"token budget {settings.llm.token_budget} spent"


def _by_batch(
    store: Store,
    settings: Settings,
    screen: LLMScreen | None,
    pending: Callable[[], list[WorkUnit]],
    recorder: ExchangeRecorder,
    writer: ScreenWriter,
) -> None:
    """Collect finished screen batches (marking their pairs as the live screen does), then submit the
    pending pairs no open batch carries as one new batch (`relevance.screen_batch`)."""
    if not batches.open_batches(store, "screen") and not pending():
        return  # nothing to collect or send: no LLM needed
    screen = screen or LLMScreen(settings)
    engine = BatchRun(store, "screen", screen, writer, recorder, writer.summary)
    try:
        engine.collect()
        units = engine.not_carried(pending())  # what collecting answered is pending no more
        estimate_screen_units(units, screen.prompts)
        if engine.submit(units, settings.llm, recorder.run_id):
            writer.summary.stopped = f"token budget {settings.llm.token_budget} spent"
    except openai.APIError as exc:
        # The pairs stay pending and what was submitted stays recorded: the next pass picks both up.
        writer.summary.stopped = f"Batch API: {screen.transport.describe(exc)}"
        writer.summary.errors.append(writer.summary.stopped)


def estimate_screen(store: Store, settings: Settings) -> dict[str, object]:
    """What screening the pending pairs would take (calls, tokens, USD at the [llm] rates, halved
    with `relevance.screen_batch`). Calls nothing: this is `monitor judge --dry-run`'s view of the screen."""
    units = pending_screen_units(store, settings.relevance.screen_claims_per_call, None)
    prompt, completion = estimate_screen_units(units, load_screen_prompts(settings.judge.prompts_dir))
    cost = token_cost(settings, prompt, completion, batch=settings.relevance.screen_batch)
    return {
        "pairs": sum(len(u.pairs) for u in units),
        "calls": len(units),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost_estimate": round(cost, 4),
    }
