"""The LLM screen: every paper of the period against every active claim, before anything is judged.

A lexical cut decides by words which claim a paper is read against, and a paper that bears on a claim
by argument ("homogenised answers" against a claim about diversity) shares few of its words: at 10%
BM25 kept 0.83-0.85 of the bearing pairs (docs/relevance.md). So with an LLM in force
(`relevance.screen`, "auto" by default) the relevance stage writes every (paper, claim) pair pending
(or those of a measured first cut, `screen_share` < 1) and this stage asks the LLM which claims each
paper bears on; only the pairs it keeps are judged.

Calls are laid out for a provider's prefix cache. The active claims are split into fixed groups
(`screen_claims_per_call`, in claim-id order); a call's system message is the instructions and one
group's claims, the same for every call of the group in a run, and its user message is a few papers
(`screen_papers_per_call`) after it, so all but the first call of a group read the long prefix at the
cached rate. A paper asks about the claims of the group still pending for it (after a claim is added,
old papers ask about that claim alone), and papers asking about the same claims share calls. The
answer names, per paper, the claims it bears on, by short ids (C1.., P1..) mapped back here.

A paper the screen keeps for some claim of a call is on topic, and a quick reading of 35 claims passes
over others it bears on (the teacher set's missed pairs were all of papers kept for another claim). With
`relevance.screen_recheck` the pairs it dropped for such a paper wait for a second reading: the same
calls, asking about the whole group again under a system message that says each paper is on topic and
asks for a closer reading (prompts/screen_recheck_system.j2); what it keeps is judged, what it drops
again is dropped. Only pairs waiting for it are written: the second reading never drops what the first
kept.

Each call's answers commit in one transaction, so a crash or a stop loses at most the calls in flight;
a failed call (after retries and one corrective turn) leaves its pairs pending for the next run.
Every request is logged in `llm_exchanges` like the judge's, under its own prompt version. With
`relevance.screen_batch` the pending pairs go through the Batch API instead. The LLM engine
(monitor/llm/engine.py) runs both; this module keeps the screen's prompts, its answer schema and what
it writes.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import openai
from openai import OpenAI
from pydantic import BaseModel, ConfigDict, ValidationError

from monitor.config import Settings
from monitor.errors import ConfigError, MonitorError
from monitor.llm import batch as batches
from monitor.llm.answers import InvalidAnswer, load_json
from monitor.llm.cost import cached_prefix, estimate_tokens, token_cost
from monitor.llm.engine import BatchRun, TokenBudget, run_live
from monitor.llm.grouped import Priced
from monitor.llm.prompts import Templates, load_templates
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.texts import ClaimText, PaperText, Recorder
from monitor.llm.transport import ChatTransport, Mode, Question
from monitor.llm.units import CallCounts, Pair, Section, WorkUnit
from monitor.relevance.text import load_claims
from monitor.store import Store
from monitor.store.candidates import (
    SCREEN_PENDING,
    SCREEN_RECHECK,
    count_screen_pending,
    pending_screen_pairs,
    save_screen_answers,
)
from monitor.store.papers import version_texts
from monitor.store.runs import StageNotes

TEMPLATE_NAMES = ("screen_system.j2", "screen_user.j2", "screen_correction.j2")
RECHECK_SYSTEM = "screen_recheck_system.j2"  # the second reading's: the first's system message and more
# `llm_exchanges.provider` of each reading's calls.
SCREEN_PROVIDER, RECHECK_PROVIDER = "openai-screen", "openai-screen-recheck"


def claim_ids(n: int) -> list[str]:
    """The short ids a call gives its `n` claims, in order."""
    return [f"C{i}" for i in range(1, n + 1)]


def paper_ids(n: int) -> list[str]:
    return [f"P{i}" for i in range(1, n + 1)]


@dataclass(frozen=True)
class ScreenPrompts:
    """The screen's templates and their content-hash version; `system_name` is the first reading's system
    template or the second's."""

    templates: Templates
    system_name: str = "screen_system.j2"

    @property
    def version(self) -> str:
        return self.templates.version

    def system(self, claims: Sequence[ClaimText]) -> str:
        """The instructions and the claims asked about: the prefix every call of a group shares."""
        return self.templates.render(self.system_name, claims=claims, claim_ids=claim_ids(len(claims)))

    def user(self, papers: Sequence[PaperText]) -> str:
        shown = [p.for_prompt() for p in papers]
        return self.templates.render("screen_user.j2", papers=shown, paper_ids=paper_ids(len(papers)))

    def messages(self, claims: Sequence[ClaimText], papers: Sequence[PaperText]) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system(claims)},
            {"role": "user", "content": self.user(papers)},
        ]

    def correction(self, problem: str, papers: int, claims: int) -> str:
        return self.templates.render(
            "screen_correction.j2", problem=problem, paper_ids=paper_ids(papers), claim_ids=claim_ids(claims)
        )


def load_screen_prompts(directory: Path | None = None, again: bool = False) -> ScreenPrompts:
    """The first reading's prompts, or with `again` the second reading's (a prompts folder from before
    it existed gives way to the shipped one for it)."""
    if not again:
        return ScreenPrompts(load_templates(directory, TEMPLATE_NAMES, "relevance screen"))
    names = (RECHECK_SYSTEM, *TEMPLATE_NAMES)
    return ScreenPrompts(load_templates(directory, names, "relevance screen", fallback=True), RECHECK_SYSTEM)


class _PaperAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    paper: str
    claims: list[str]


class ScreenAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    papers: list[_PaperAnswer]


def screen_schema(papers: int, claims: int, bounds: bool = False) -> dict[str, Any]:
    """The `response_format` schema: per paper asked, a list of the claim ids asked."""
    kept: dict[str, Any] = {"type": "array", "items": {"type": "string", "enum": claim_ids(claims)}}
    entries: dict[str, Any] = {
        "type": "array",
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["paper", "claims"],
            "properties": {"paper": {"type": "string", "enum": paper_ids(papers)}, "claims": kept},
        },
    }
    if bounds:
        kept["maxItems"] = claims
        entries["minItems"] = entries["maxItems"] = papers
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["papers"],
        "properties": {"papers": entries},
    }


def parse_screen(text: str | None, papers: int, claims: int) -> list[set[int]]:
    """Per paper asked (by position), the positions of the claims a reply keeps for it; raises
    InvalidAnswer for anything but one entry per paper asked, naming only the claims asked."""
    if not text or not text.strip():
        raise InvalidAnswer("the reply is empty")
    data = load_json(text)
    if isinstance(data, list):
        data = {"papers": data}
    try:
        answer = ScreenAnswer.model_validate(data)
    except ValidationError as exc:
        raise InvalidAnswer(
            f'expected {{"papers": [{{"paper": "P1", "claims": [...]}}, ...]}}: {exc.errors()[0]["msg"]}'
        ) from None
    paper_pos = {pid: i for i, pid in enumerate(paper_ids(papers))}
    claim_pos = {cid: i for i, cid in enumerate(claim_ids(claims))}
    kept: list[set[int] | None] = [None] * papers
    for entry in answer.papers:
        where = paper_pos.get(entry.paper.strip().upper())
        if where is None:
            raise InvalidAnswer(f"paper {entry.paper!r} was not asked about; use {list(paper_pos)}")
        if kept[where] is not None:
            raise InvalidAnswer(f"paper {entry.paper!r} answered twice")
        named = {c.strip().upper() for c in entry.claims}
        unknown = sorted(named - claim_pos.keys())
        if unknown:
            raise InvalidAnswer(f"claim ids not among those asked: {unknown}; use only C1..C{claims}")
        kept[where] = {claim_pos[c] for c in named}
    missing = [pid for pid, got in zip(paper_ids(papers), kept, strict=True) if got is None]
    if missing:
        raise InvalidAnswer(f"no entry for paper(s) {missing}: answer for every paper asked")
    return [got or set() for got in kept]


class LLMScreen:
    """The screen's question, asked through the LLM layer's transport (retries, format fallback, logging);
    with `again`, the second reading's."""

    def __init__(self, settings: Settings, client: OpenAI | None = None, again: bool = False) -> None:
        llm = settings.llm
        if settings.relevance.screen_model:
            llm = llm.model_copy(update={"model": settings.relevance.screen_model})
        if not settings.llm_configured():
            raise ConfigError(
                "relevance.screen = 'llm' needs an LLM: set llm.base_url (OPENAI_BASE_URL) or an API key "
                "(OPENAI_API_KEY)"
            )
        self.name = RECHECK_PROVIDER if again else SCREEN_PROVIDER
        self.prompts = load_screen_prompts(settings.judge.prompts_dir, again)
        self.prompt_version = self.prompts.version
        self.model = llm.model
        self.max_concurrency = max(1, llm.concurrency)
        self.transport = ChatTransport(llm, self.name, self.prompt_version, client)

    @property
    def mode(self) -> Mode | None:
        return self.transport.mode

    def question(self, claims: Sequence[ClaimText], papers: Sequence[PaperText]) -> Question[list[set[int]]]:
        n_papers, n_claims = len(papers), len(claims)
        return Question(
            messages=self.prompts.messages(claims, papers),
            schema_name="screened_papers",
            schema=lambda bounds: screen_schema(n_papers, n_claims, bounds=bounds),
            max_tokens=answer_tokens(n_papers, n_claims) * 2 + 32,  # room for a model that pads
            parse=lambda text: parse_screen(text, n_papers, n_claims),
            correction=lambda problem: self.prompts.correction(problem, n_papers, n_claims),
        )

    def unit_question(self, unit: WorkUnit) -> Question[list[set[int]]]:
        return self.question(unit.claims, unit.papers)

    def screen(self, unit: WorkUnit, recorder: Recorder | None = None) -> tuple[list[set[int]], int | None]:
        """Per paper of `unit`, the positions of its claims the paper bears on, and the exchange."""
        return self.transport.ask(self.unit_question(unit), unit.label, recorder)


def answer_tokens(papers: int, claims: int) -> int:
    """A screen answer's expected completion tokens: an entry a paper and a few claim ids each."""
    return 4 + papers * (10 + max(1, claims // 8) * 3)


@dataclass
class ScreenSummary(CallCounts):
    """What one screening pass did (recorded on the run as `screen`, within relevance's notes)."""

    stage: ClassVar[str] = "screen"

    papers: int = 0  # paper versions whose pending pairs were all answered
    kept: int = 0  # by either reading
    dropped: int = 0  # for good: by a first reading that kept nothing of the call, or by a second
    rechecked: int = 0  # pairs the second reading answered (relevance.screen_recheck)
    recovered: int = 0  # of those, kept
    failed_papers: int = 0  # left pending for the next run
    pending_left: int = 0
    stopped: str | None = None  # why screening stopped early: budget, stop signal, server unavailable
    unavailable: str = ""  # the server's fatal fault, for the run's error (it stops the run as the judge's)
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


def claim_groups(claims: Sequence[ClaimText], size: int) -> list[list[ClaimText]]:
    """The active claims in fixed groups of at most `size`, in claim-id order: the same groups for
    every paper, so each group's prompt prefix is the same for every call that asks about it."""
    ordered = sorted(claims, key=lambda c: c.id)
    size = max(1, size)
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def screen_units(
    pending: dict[tuple[str, int], set[str]],
    texts: dict[tuple[str, int], PaperText],
    groups: Sequence[Sequence[ClaimText]],
    papers_per_call: int,
) -> list[WorkUnit]:
    """Calls for the `pending` claim ids of each paper version: per group, the papers asking about the
    same claims of it share calls, `papers_per_call` a call; a group's calls come one after another
    (its prefix stays in the provider's cache)."""
    per_call = max(1, papers_per_call)
    units: list[WorkUnit] = []
    for group in groups:
        buckets: dict[tuple[str, ...], list[tuple[str, int]]] = {}
        for key in sorted(pending):
            asked = tuple(c.id for c in group if c.id in pending[key])
            if asked:
                buckets.setdefault(asked, []).append(key)
        by_id = {c.id: c for c in group}
        for asked, keys in buckets.items():
            claims = [by_id[c] for c in asked]
            for start in range(0, len(keys), per_call):
                sections = [
                    Section(texts[k], [Pair(c, pair_ref(k[0], k[1], c.id)) for c in claims])
                    for k in keys[start : start + per_call]
                ]
                units.append(WorkUnit(sections))
    return units


def pending_screen_units(
    store: Store,
    settings: Settings,
    claim_ids: Sequence[str] | None = None,
    since: dt.date | None = None,
    again: bool = False,
) -> list[WorkUnit]:
    """The pairs waiting for the screen's first reading, or with `again` its second (of `claim_ids`,
    default all; of papers published on or after `since`), as calls (`screen_units`). A second reading
    asks about the whole group of a pair waiting for it, so its calls share the group's cached prefix;
    its answer is written for the waiting pairs alone."""
    cfg = settings.relevance
    with store.session() as session:
        pending = pending_screen_pairs(session, claim_ids, since, SCREEN_RECHECK if again else SCREEN_PENDING)
        if not pending:
            return []
        claims = load_claims(session)
        rows = version_texts(session, list(pending))
    texts = {
        key: PaperText(key[0], key[1], title, abstract, day.isoformat() if day else None)
        for key, (title, abstract, day) in rows.items()
    }
    pending = {key: ids for key, ids in pending.items() if key in texts}
    groups = claim_groups(claims, cfg.screen_claims_per_call)
    if again:
        pending = {key: whole_groups(ids, groups) for key, ids in pending.items()}
    return screen_units(pending, texts, groups, cfg.screen_papers_per_call)


def whole_groups(ids: set[str], groups: Sequence[Sequence[ClaimText]]) -> set[str]:
    """The claim ids of every group that holds one of `ids`."""
    return {c.id for group in groups if any(c.id in ids for c in group) for c in group}


def pair_ref(arxiv_id: str, version: int, claim_id: str) -> str:
    """The screen's reference to a pair (`Pair.ref`): what a batch row records it by."""
    return f"{arxiv_id}v{version}/{claim_id}"


class ScreenPricing:
    """A screen call's estimate: the tokens of its system message (the group's prefix), of its papers,
    and of its answer; the prefix counts as cached from the second call of the same claims on."""

    def __init__(self, prompts: ScreenPrompts) -> None:
        self.prompts = prompts
        self._system_tokens: dict[tuple[str, ...], int] = {}

    def system_tokens(self, claims: Sequence[ClaimText]) -> int:
        key = tuple(f"{c.id}\0{c.text}" for c in claims)
        if key not in self._system_tokens:
            self._system_tokens[key] = estimate_tokens(self.prompts.system(claims)) + 1
        return self._system_tokens[key]

    def estimate(self, units: Iterable[WorkUnit]) -> tuple[int, int, int]:
        """Set each unit's estimated tokens (and cached part); returns (prompt, completion, cached) totals."""
        prompt_total = completion_total = cached_total = 0
        seen: set[tuple[str, ...]] = set()
        for unit in units:
            claims = unit.claims
            prefix = self.system_tokens(claims)
            asked = prefix + estimate_tokens(self.prompts.user(unit.papers))
            answered = answer_tokens(len(unit.sections), len(claims))
            key = tuple(c.id for c in claims)
            cached = cached_prefix(prefix) if key in seen else 0
            seen.add(key)
            unit.estimated_tokens, unit.cached_tokens = asked + answered, cached
            prompt_total += asked
            completion_total += answered
            cached_total += cached
        return prompt_total, completion_total, cached_total


class ScreenCounter:
    """Counts the screen calls a first cut would make over some papers and claims (the dry run's table
    of alternatives), batch by batch from its selection mask, as `screen_units` would group them when
    every selected claim of a group is asked: per group, the papers with a selected claim of it,
    `papers_per_call` a call, each group's prefix cached from its second call on."""

    def __init__(
        self,
        prompts: ScreenPrompts,
        papers: Sequence[PaperText],
        claims: Sequence[ClaimText],
        claims_per_call: int,
        papers_per_call: int,
    ) -> None:
        self.prompts, self.papers = prompts, papers
        self.per_call = max(1, papers_per_call)
        order = sorted(range(len(claims)), key=lambda i: claims[i].id)
        size = max(1, claims_per_call)
        self.groups = [order[i : i + size] for i in range(0, len(order), size)]
        pricing = ScreenPricing(prompts)
        self.prefix = [pricing.system_tokens([claims[i] for i in group]) for group in self.groups]
        self.started = [False] * len(self.groups)  # a group whose first call (uncached) is counted
        self.waiting: list[list[int]] = [[] for _ in self.groups]  # papers not in a full call yet

    def count(self, chosen: np.ndarray, start: int) -> Priced:
        """The calls and tokens for a (claims x papers) selection mask of papers[start:...]; a group's
        papers short of a full call wait for the next batch (`flush` counts what is left)."""
        priced = Priced(papers=int(chosen.any(axis=0).sum()), pairs=int(chosen.sum()))
        for g, group in enumerate(self.groups):
            self.waiting[g].extend(int(i) + start for i in np.flatnonzero(chosen[group].any(axis=0)))
            while len(self.waiting[g]) >= self.per_call:
                self._call(priced, g, self.waiting[g][: self.per_call])
                del self.waiting[g][: self.per_call]
        return priced

    def flush(self) -> Priced:
        """The calls of the papers still waiting: each group's last, shorter call."""
        priced = Priced()
        for g, waiting in enumerate(self.waiting):
            if waiting:
                self._call(priced, g, waiting)
            self.waiting[g] = []
        return priced

    def _call(self, priced: Priced, group: int, papers: list[int]) -> None:
        shown = [self.papers[i] for i in papers]
        priced.calls += 1
        priced.prompt_tokens += self.prefix[group] + estimate_tokens(self.prompts.user(shown))
        priced.completion_tokens += answer_tokens(len(shown), len(self.groups[group]))
        priced.cached_tokens += cached_prefix(self.prefix[group]) if self.started[group] else 0
        self.started[group] = True


class ScreenWriter:
    """The screen's writer for the LLM engine: marks a unit's pairs kept or dropped (or, from a first
    reading under `recheck`, waiting for the second), counts failures. `again`: the second reading's."""

    def __init__(
        self, store: Store, summary: ScreenSummary, recheck: bool = False, again: bool = False
    ) -> None:
        self.store, self.summary = store, summary
        self.recheck, self.again = recheck, again
        self.done: set[tuple[str, int]] = set()  # paper versions answered
        self.failed: set[tuple[str, int]] = set()  # paper versions with a unit that failed: still pending

    def parse(self, unit: WorkUnit, text: str | None) -> list[set[int]]:
        return parse_screen(text, len(unit.sections), len(unit.claims))

    def write(self, unit: WorkUnit, kept: list[set[int]], exchange_id: int | None) -> None:
        claims = unit.claims
        answers = [
            (section.paper.arxiv_id, section.paper.version, {c.id: i in named for i, c in enumerate(claims)})
            for section, named in zip(unit.sections, kept, strict=True)
        ]
        with self.store.session() as session:
            kept, dropped = save_screen_answers(
                session, answers, exchange_id, recheck=self.recheck, again=self.again
            )
        self.summary.kept += kept
        self.summary.dropped += dropped
        if self.again:
            self.summary.rechecked += kept + dropped
            self.summary.recovered += kept
        self.done.update(s.paper_key for s in unit.sections)

    def fail(self, unit: WorkUnit, message: str, error: MonitorError | None = None) -> None:
        self.failed.update(s.paper_key for s in unit.sections)
        self.summary.errors.append(message)

    def close(self) -> None:
        if self.again:  # a failed second reading leaves its pairs waiting for it
            self.summary.failed_papers += len(self.failed)
            return
        self.summary.papers = len(self.done - self.failed)
        self.summary.failed_papers = len(self.failed)


def screen_pending(
    store: Store,
    settings: Settings,
    run_id: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    claim_ids: list[str] | None = None,
    screen: LLMScreen | None = None,
    since: dt.date | None = None,
) -> ScreenSummary:
    """Screen every pending pair (of `claim_ids`, default all; of papers published on or after `since`,
    the period a run judges), `llm.concurrency` calls at once, then give the pairs a first reading left
    for it their second (`relevance.screen_recheck`); stops cleanly when `should_stop()` (the run's stop
    signal) or when `llm.token_budget` is spent. Exchanges are stored under `run_id`. With
    `relevance.screen_batch`, collect each reading's finished batches and submit the rest instead."""
    began = time.monotonic()
    summary = ScreenSummary()
    recorder = ExchangeRecorder(store, run_id)
    recheck = settings.relevance.screen_recheck

    def read(again: bool, asker: LLMScreen | None) -> None:
        writer = ScreenWriter(store, summary, recheck=recheck, again=again)
        pending = functools.partial(pending_screen_units, store, settings, claim_ids, since, again)
        if settings.relevance.screen_batch:
            _by_batch(store, settings, asker, pending, recorder, writer)
        elif units := pending():
            _live(settings, asker or LLMScreen(settings, again=again), units, recorder, writer, should_stop)
        writer.close()

    read(False, screen)
    if recheck and not summary.stopped:
        read(True, LLMScreen(settings, screen.transport.client, again=True) if screen else None)
    summary.take_counts(recorder)
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
    ScreenPricing(screen.prompts).estimate(units)
    end = run_live(
        units,
        lambda unit: screen.screen(unit, recorder),
        writer,
        budget=TokenBudget.of(settings.llm),
        recorder=recorder,
        workers=screen.max_concurrency,
        name="screen",
        should_stop=should_stop,
    )
    if end.fatal:
        writer.summary.stopped = "the LLM server refuses requests"
        writer.summary.unavailable = end.fatal
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
    """Collect the reading's finished screen batches (marking their pairs as the live screen does), then
    submit the pairs waiting for it that no open batch carries as one new batch (`relevance.screen_batch`).
    Each reading has its batches (`judge_batches.stage` "screen" or "recheck")."""
    stage: batches.Stage = "recheck" if writer.again else "screen"
    if not batches.open_batches(store, stage) and not pending():
        return  # nothing to collect or send: no LLM needed
    screen = screen or LLMScreen(settings, again=writer.again)
    engine = BatchRun(store, stage, screen, writer, recorder, writer.summary)
    try:
        engine.collect()
        units = engine.not_carried(pending())  # what collecting answered is pending no more
        ScreenPricing(screen.prompts).estimate(units)
        if engine.submit(units, settings.llm, recorder.run_id):
            writer.summary.stopped = f"token budget {settings.llm.token_budget} spent"
    except openai.APIError as exc:
        # The pairs stay pending and what was submitted stays recorded: the next pass picks both up.
        writer.summary.stopped = f"Batch API: {screen.transport.describe(exc)}"
        writer.summary.errors.append(writer.summary.stopped)


# The share of a week's papers a first reading keeps for some claim, and so reads again: 35 of a random
# 200 of 2026-W34 under the seeds' claims (docs/relevance.md). A dry run prices the second readings of
# what is still to be screened at this share.
RECHECK_PAPER_SHARE = 0.175


def estimate_screen(
    store: Store, settings: Settings, units: list[WorkUnit] | None = None
) -> dict[str, object]:
    """What screening the pending pairs would take (calls, tokens with the cached part, USD at the [llm]
    rates, halved with `relevance.screen_batch`), second readings included: those already waiting, and
    for the papers still to be screened RECHECK_PAPER_SHARE of the first readings' cost. Calls nothing:
    `monitor judge --dry-run`'s view of it; `units`: the first reading's pending units, where the caller
    has them already (`pending_screen_units`)."""
    batch = settings.relevance.screen_batch
    folder = settings.judge.prompts_dir
    units = pending_screen_units(store, settings) if units is None else units
    prompt, completion, cached = ScreenPricing(load_screen_prompts(folder)).estimate(units)
    first = token_cost(settings, prompt, completion, batch=batch, cached_tokens=cached)
    out: dict[str, object] = {
        "pairs": sum(len(u.pairs) for u in units),
        "papers": len({s.paper_key for u in units for s in u.sections}),
        "calls": len(units),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "completion_tokens": completion,
        "cost_estimate": round(first, 4),
    }
    if not settings.relevance.screen_recheck:
        return out
    waiting = pending_screen_units(store, settings, again=True)
    prompt, completion, cached = ScreenPricing(load_screen_prompts(folder, again=True)).estimate(waiting)
    again = token_cost(settings, prompt, completion, batch=batch, cached_tokens=cached)
    again += RECHECK_PAPER_SHARE * first
    out["recheck"] = {
        "waiting_pairs": sum(len(u.pairs) for u in waiting),
        "calls": len(waiting) + round(RECHECK_PAPER_SHARE * len(units)),
        "cost_estimate": round(again, 4),
    }
    out["cost_estimate"] = round(first + again, 4)
    return out
