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
Every request is logged in `llm_exchanges` like the judge's, under its own prompt version.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from openai import OpenAI
from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy import func, select, update

from monitor.config import Settings
from monitor.errors import ConfigError, JudgeError
from monitor.judge.base import ClaimText, PaperText, Recorder
from monitor.judge.exchanges import ExchangeRecorder
from monitor.judge.openai_judge import OpenAIJudge
from monitor.judge.prompts import DEFAULT_PROMPTS_DIR, prompt_version, template_environment
from monitor.judge.schema import InvalidAnswer, load_json
from monitor.store import Store
from monitor.store.candidates import candidate_pairs
from monitor.store.models import Candidate, Claim
from monitor.store.runs import RunRecord

TEMPLATE_NAMES = ("screen_system.j2", "screen_user.j2", "screen_correction.j2")
PENDING, KEPT, DROPPED = "pending", "kept", "dropped"


@dataclass(frozen=True)
class ScreenPrompts:
    """The screen's templates and their content-hash version."""

    version: str
    env: jinja2.Environment

    def messages(self, paper: PaperText, claims: list[ClaimText]) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.env.get_template("screen_system.j2").render().strip()},
            {
                "role": "user",
                "content": self.env.get_template("screen_user.j2").render(paper=paper, claims=claims).strip(),
            },
        ]

    def correction(self, problem: str, claim_ids: list[str]) -> str:
        template = self.env.get_template("screen_correction.j2")
        return template.render(problem=problem, claim_ids=claim_ids).strip()


def load_screen_prompts(directory: Path | None = None) -> ScreenPrompts:
    directory = Path(directory) if directory else DEFAULT_PROMPTS_DIR
    env = template_environment(directory, TEMPLATE_NAMES, "relevance screen")
    return ScreenPrompts(version=prompt_version(directory, TEMPLATE_NAMES), env=env)


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
        raise InvalidAnswer(f"expected {{\"relevant\": [claim ids]}}: {exc.errors()[0]['msg']}") from None
    kept = {i.strip() for i in answer.relevant}
    unknown = sorted(kept - set(claim_ids))
    if unknown:
        raise InvalidAnswer(f"ids not among those asked: {unknown}; use only {claim_ids}")
    return kept


class LLMScreen(OpenAIJudge):
    """The judge's OpenAI-compatible transport (retries, format fallback, logging) asking the screen's
    question instead of the judge's."""

    name = "openai-screen"
    schema_name = "relevant_claims"

    def __init__(self, settings: Settings, client: OpenAI | None = None) -> None:
        judge = settings.judge
        if settings.relevance.screen_model:
            judge = judge.model_copy(update={"model": settings.relevance.screen_model})
        if not (judge.base_url or judge.api_key):
            raise ConfigError(
                "relevance.screen = 'llm' needs an LLM: set judge.base_url (OPENAI_BASE_URL) or an API key "
                "(OPENAI_API_KEY)"
            )
        super().__init__(judge, client=client)
        self.screen_prompts = load_screen_prompts(judge.prompts_dir)
        self.prompt_version = self.screen_prompts.version

    def schema(self, ids: list[str], bounds: bool = False) -> dict[str, Any]:
        return screen_schema(ids, bounds=bounds)

    def max_tokens(self, ids: list[str]) -> int:
        # A list of ids: about ten tokens each, plus the braces; room for a model that pads.
        return 64 + 16 * len(ids)

    def screen(
        self, paper: PaperText, claims: list[ClaimText], recorder: Recorder | None = None
    ) -> tuple[set[str], int | None]:
        """The ids of `claims` the paper bears on, and the exchange that said so."""
        ids = [c.id for c in claims]
        return self.ask(
            self.screen_prompts.messages(paper, claims),
            ids,
            f"{paper.arxiv_id}v{paper.version}",
            recorder,
            parse=lambda text: parse_screen(text, ids),
            correction=lambda problem: self.screen_prompts.correction(problem, ids),
        )


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

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["errors"] = self.errors[:10]
        out["seconds"] = round(self.seconds, 2)
        return out


@dataclass
class _Unit:
    paper: PaperText
    claims: list[ClaimText]


def _pending_units(store: Store, per_call: int, claim_ids: list[str] | None) -> list[_Unit]:
    query = candidate_pairs().where(Candidate.screen == PENDING)
    if claim_ids:
        query = query.where(Claim.id.in_(claim_ids))
    with store.session() as session:
        rows = session.execute(query).all()
    units: list[_Unit] = []
    for arxiv_id, version, claim_id, text, title, abstract in rows:
        last = units[-1] if units else None
        if last is None or (last.paper.arxiv_id, last.paper.version) != (arxiv_id, version) or (
            len(last.claims) >= per_call
        ):
            last = _Unit(PaperText(arxiv_id, version, title, abstract), [])
            units.append(last)
        last.claims.append(ClaimText(id=claim_id, text=text))
    return units


def _save(store: Store, unit: _Unit, kept: set[str], exchange_id: int | None) -> tuple[int, int]:
    with store.session() as session:
        for claim in unit.claims:
            session.execute(
                update(Candidate)
                .where(
                    Candidate.arxiv_id == unit.paper.arxiv_id,
                    Candidate.version == unit.paper.version,
                    Candidate.claim_id == claim.id,
                    Candidate.screen == PENDING,
                )
                .values(screen=KEPT if claim.id in kept else DROPPED, screen_exchange_id=exchange_id)
            )
    return len(kept), len(unit.claims) - len(kept)


def screen_pending(
    store: Store,
    settings: Settings,
    run: RunRecord | None = None,
    claim_ids: list[str] | None = None,
    screen: LLMScreen | None = None,
) -> ScreenSummary:
    """Screen every pending pair (of `claim_ids`, default all), a paper per call, `judge.concurrency`
    calls at once; stops cleanly on the run's stop signal or when `judge.token_budget` is spent."""
    began = time.monotonic()
    summary = ScreenSummary()
    units = _pending_units(store, settings.relevance.screen_claims_per_call, claim_ids)
    if units:
        screen = screen or LLMScreen(settings)
        recorder = ExchangeRecorder(store, run.id if run is not None else None)
        budget = settings.judge.token_budget
        failed: set[tuple[str, int]] = set()
        done: set[tuple[str, int]] = set()
        with ThreadPoolExecutor(max_workers=screen.max_concurrency) as pool:
            running: dict[Future[tuple[set[str], int | None]], _Unit] = {}
            queue: Iterator[_Unit] = iter(units)
            while True:
                while summary.stopped is None and len(running) < screen.max_concurrency:
                    if run is not None and run.should_stop():
                        summary.stopped = "stop requested"
                    elif budget is not None and recorder.tokens >= budget:
                        summary.stopped = f"token budget {budget} spent"
                    elif (unit := next(queue, None)) is not None:
                        running[pool.submit(screen.screen, unit.paper, unit.claims, recorder)] = unit
                        continue
                    break
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    unit = running.pop(future)
                    key = (unit.paper.arxiv_id, unit.paper.version)
                    try:
                        kept, exchange_id = future.result()
                    except JudgeError as exc:
                        failed.add(key)
                        summary.errors.append(str(exc))
                        if getattr(exc, "fatal", False):
                            summary.stopped = "the LLM server refuses requests"
                        continue
                    k, d = _save(store, unit, kept, exchange_id)
                    summary.kept += k
                    summary.dropped += d
                    done.add(key)
        summary.papers = len(done - failed)
        summary.failed_papers = len(failed)
        summary.calls = recorder.calls
        summary.prompt_tokens, summary.completion_tokens = recorder.prompt_tokens, recorder.completion_tokens
        if run is not None:
            run.tokens += recorder.tokens
    with store.session() as session:
        left = select(func.count()).select_from(Candidate).where(Candidate.screen == PENDING)
        if claim_ids:
            left = left.where(Candidate.claim_id.in_(claim_ids))
        summary.pending_left = session.scalar(left) or 0
    summary.seconds = time.monotonic() - began
    if run is not None:
        run.add("screen", summary.as_dict())
        if summary.failed_papers:
            run.warnings.append(
                f"relevance screen: {summary.failed_papers} paper(s) failed and stay pending "
                f"(first error: {summary.errors[0][:200]})"
            )
    return summary


def estimate_screen(store: Store, settings: Settings) -> dict[str, object]:
    """What screening the pending pairs would take (calls, tokens, USD at the judge's rates).

    Calls nothing: this is `monitor judge --dry-run`'s view of the screen."""
    from monitor.judge.runner import estimate_tokens, token_cost

    prompts = load_screen_prompts(settings.judge.prompts_dir)
    units = _pending_units(store, settings.relevance.screen_claims_per_call, None)
    prompt = sum(
        estimate_tokens("\n".join(m["content"] for m in prompts.messages(u.paper, u.claims))) for u in units
    )
    # An answer lists some of the ids asked, about ten tokens each: budget four a claim asked.
    completion = sum(8 + 4 * len(u.claims) for u in units)
    cost = token_cost(settings, prompt, completion)
    return {
        "pairs": sum(len(u.claims) for u in units),
        "calls": len(units),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost_estimate": round(cost, 4),
    }
