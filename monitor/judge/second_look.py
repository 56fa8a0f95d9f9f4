"""The second look: a closer, second reading of each LLM label that can move a verdict, before it counts.

A first reading labels many pairs quickly; the labels that make a claim perishable (RELAXES,
OVERTURNS), and by default every bearing label and every unsure one (`judge.second_look`,
`judge.second_look_below`), are read again by a second prompt (prompts/second_look_*.j2) that checks,
in order, which sentences of the abstract report findings, whether one speaks to the claim, whether
the first reading's quote and rationale hold, then labels the pair itself and words it no stronger
than the finding (what "direct" needs; a mitigation relaxes a claim only where it was tested;
background is no finding and an unmeasured remark weak at most), since its strength, quote and
rationale are what the digest prints; `llm.review_model` names a stronger model for it. A paper's
waiting pairs are read in one call, as its first readings are (`pending_units`; each claim gets its own
first reading shown and its own quote back), so its abstract and the system prompt are paid once. The
assessment waits (`assessments.second_look = 'pending'`) and counts toward no verdict until then,
whether its first reading came live or by Batch API (whose answers get their second reading by a
batch of their own once collected, `second_look_batches`, or live with `judge.second_look_batch` off:
monitor/judge/batch.py). Which answers wait is one rule (`second_look_policy`); a dry run expects
JUDGED_LOOKS of the pairs judged to wait and prices their second readings as they will be asked
(`by_batch`: Batch API or live rates; `expected_second_looks`), and those already waiting, which a run
asks too, likewise (`waiting_second_looks`). Where the second reading gives the same label, the pair
counts with the second reading's strength, and its quote and rationale where its quote is grounded;
where it differs, the pair goes to the curator's queue (`monitor review`) and counts for nothing until a
curator decides. Each answer commits on its own; a failed call leaves its pairs pending for the next run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from openai import OpenAI

from monitor.config import Settings
from monitor.errors import MonitorError
from monitor.judge.base import Judge, Judgement
from monitor.judge.grounding import ground
from monitor.judge.schema import parse_answer, response_schema
from monitor.llm.batch import Stage
from monitor.llm.cost import cached_prefix, estimate_tokens, token_cost
from monitor.llm.engine import BatchRun, TokenBudget, run_live
from monitor.llm.prompts import Templates, load_templates
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.texts import ClaimText, PaperText, Recorder
from monitor.llm.transport import ChatTransport, Mode, Question
from monitor.llm.units import CallCounts, Pair, WorkUnit, estimate_units, group_units, grouped_prompt_tokens
from monitor.store.assessments import add_second_look, count_second_looks_pending, pending_second_looks
from monitor.store.db import Store
from monitor.store.runs import StageNotes

TEMPLATE_NAMES = ("second_look_system.j2", "second_look_user.j2", "judge_correction.j2", "judge_labels.j2")
MOVING = ("RELAXES", "OVERTURNS")  # the labels that make a claim perishable or overturned
# A second reading's answer (a quote, a longer rationale, label, strength), for estimates: the mean of
# the kept second readings (132 tokens over 2,181, held by tests/test_answer_lengths.py), as
# COMPLETION_TOKENS_PER_CLAIM is the judge's. What one may take is MAX_ANSWER_TOKENS (the longest kept
# is 239).
ANSWER_TOKENS = 140
MAX_ANSWER_TOKENS = 520


@dataclass(frozen=True)
class LookRate:
    """What a dry run expects of second looks (`expected_second_looks`): the share of the pairs judged
    that wait for one (under `judge.second_look` "all" or "moving"), and how many of those a call
    carries (a paper's share one, `pending_units`)."""

    share: float
    per_call: float


# Measured on the sample's 2026-W20 under the shipped prompts: 162 of 242 pairs judged (82 bearing labels
# and 80 unsure UNRELATED; "moving" skips the one SUPPORTS or RELAXES at 0.7 or more, so reads as many),
# in 64 calls; earlier prompts' answers gave 133 and 189 of 242. What judging pairs no screen chose is
# expected to need; those the screen keeps have a rate of their own (judge/estimate.py SHIPPED_KEEP).
JUDGED_LOOKS = LookRate(0.67, 162 / 64)
SAMPLED_PAIRS = 200  # pairs whose prompts are rendered to price an estimate
BATCH_STAGE: Stage = "second"  # `judge_batches.stage` of second-look batches


def needs_second_look(mode: str, below: float, label: str, confidence: float) -> bool:
    """Whether a first reading waits for a second one before it counts (`judge.second_look`):
    "all" every bearing label and every unsure UNRELATED, "moving" RELAXES, OVERTURNS and any unsure
    label, "none" nothing."""
    if mode == "none":
        return False
    unsure = confidence < below
    if label == "UNRELATED":
        return unsure
    return mode == "all" or label in MOVING or unsure


def second_look_policy(settings: Settings, judge: Judge) -> Callable[[Judgement], bool] | None:
    """Which of this judge's answers wait for a second reading (`judge.second_look`); None: none do (a
    judge whose labels get none, the embedded one, or "none"). The one rule: the pipeline's, live or by
    batch (judge/runner.py), `monitor eval`'s (`second_reading`) and a dry run's (`expected_second_looks`)."""
    cfg = settings.judge
    if not judge.second_look or cfg.second_look == "none":
        return None
    return lambda j: needs_second_look(cfg.second_look, cfg.second_look_below, j.label, j.confidence)


@dataclass(frozen=True)
class FirstReading:
    """What the first reader said of a pair: what the second reader is shown to check."""

    label: str
    strength: str | None
    confidence: float
    evidence: str
    rationale: str


Look = tuple[ClaimText, FirstReading]  # a claim and its first reading, as a second-look call shows them


@dataclass(frozen=True)
class SecondLookPrompts:
    templates: Templates

    @property
    def version(self) -> str:
        return self.templates.version

    def messages(self, paper: PaperText, looks: Sequence[Look]) -> list[dict[str, str]]:
        shown = paper.for_prompt()
        user = self.templates.render("second_look_user.j2", paper=shown, looks=list(looks))
        return [
            {"role": "system", "content": self.templates.render("second_look_system.j2")},
            {"role": "user", "content": user},
        ]

    def correction(self, problem: str, claim_ids: list[str]) -> str:
        return self.templates.render("judge_correction.j2", problem=problem, claim_ids=claim_ids)


def load_second_look_prompts(directory: Path | None = None) -> SecondLookPrompts:
    # A prompts folder of one's own from before the second look existed gives way to the shipped one.
    return SecondLookPrompts(load_templates(directory, TEMPLATE_NAMES, "second look", fallback=True))


class SecondLooker:
    """The second reading's question, asked through the LLM layer's transport."""

    name = "openai-second-look"

    def __init__(self, settings: Settings, client: OpenAI | None = None, connect: bool = True) -> None:
        llm = settings.llm
        if llm.review_model:
            llm = llm.model_copy(update={"model": llm.review_model})
        self.prompts = load_second_look_prompts(settings.judge.prompts_dir)
        self.prompt_version = self.prompts.version
        self.model = llm.model
        self.max_concurrency = max(1, llm.concurrency)
        self.transport = ChatTransport(llm, self.name, self.prompt_version, client, connect)
        self.firsts: dict[str, FirstReading] = {}  # by pair key: what each unit's question shows

    def question(self, paper: PaperText, looks: Sequence[Look]) -> Question[list[Judgement]]:
        """One call's question: the paper's claims waiting for a second look, each with its first reading."""
        ids = [claim.id for claim, _ in looks]
        return Question(
            messages=self.prompts.messages(paper, looks),
            schema_name="claim_assessments",
            schema=lambda bounds: response_schema(ids, bounds=bounds),
            max_tokens=MAX_ANSWER_TOKENS * len(ids),
            parse=lambda text: parse_answer(text, ids),
            correction=lambda problem: self.prompts.correction(problem, ids),
        )

    @property
    def mode(self) -> Mode | None:
        return self.transport.mode

    def remember(self, pending: Waiting) -> list[WorkUnit]:
        """The units of `pending` (`pending_units`), each pair's first reading kept for its question."""
        self.firsts.update(pending.firsts)
        return pending.units

    def unit_question(self, unit: WorkUnit) -> Question[list[Judgement]]:
        return self.question(unit.paper, [(pair.claim, self.firsts[pair.ref]) for pair in unit.pairs])

    def look(self, unit: WorkUnit, recorder: Recorder | None) -> tuple[list[Judgement], int | None]:
        return self.transport.ask(self.unit_question(unit), unit.label, recorder)


@dataclass
class SecondLookSummary(CallCounts):
    """What one pass of second looks did (recorded on the run as `second_look`, within the judge's)."""

    stage: ClassVar[str] = "second_look"

    pending: int = 0
    agreed: int = 0
    disagreed: int = 0  # sent to the curator's queue
    failed: int = 0  # no usable answer: still pending for the next run
    pending_left: int = 0
    cost: float = 0.0
    stopped: str | None = None
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def stage_counts(self) -> dict[str, object]:
        out = asdict(self)
        out["errors"] = self.errors[:10]
        out["cost"] = round(self.cost, 6)
        out["seconds"] = round(self.seconds, 2)
        return out

    def then(self, later: SecondLookSummary) -> SecondLookSummary:
        """This pass and a `later` one of the same invocation (collecting a batch this one submitted)."""
        return SecondLookSummary(
            calls=self.calls + later.calls,
            prompt_tokens=self.prompt_tokens + later.prompt_tokens,
            completion_tokens=self.completion_tokens + later.completion_tokens,
            cached_tokens=self.cached_tokens + later.cached_tokens,
            batches_submitted=self.batches_submitted + later.batches_submitted,
            batches_waiting=later.batches_waiting,
            batches_collected=self.batches_collected + later.batches_collected,
            pending=self.pending,
            agreed=self.agreed + later.agreed,
            disagreed=self.disagreed + later.disagreed,
            failed=self.failed + later.failed,
            pending_left=later.pending_left,
            cost=self.cost + later.cost,
            stopped=self.stopped or later.stopped,
            errors=self.errors + later.errors,
            seconds=self.seconds + later.seconds,
        )

    def stage_notes(self) -> StageNotes:
        warnings = []
        if self.failed:
            warnings.append(
                f"second look: {self.failed} pair(s) got no usable second reading and wait for the next run "
                f"(first error: {self.errors[0][:200]})"
            )
        return StageNotes(tokens=self.tokens, warnings=warnings)


@dataclass(frozen=True)
class Waiting:
    """The assessments waiting for their second look, as calls: a paper version's in units of up to
    `judge.claims_per_call` (each pair's `ref` its assessment id), and each one's first reading by ref."""

    units: list[WorkUnit]
    firsts: dict[str, FirstReading]


def pending_units(store: Store, settings: Settings, claim_ids: Sequence[str] | None = None) -> Waiting:
    """Every assessment (of `claim_ids`) waiting for its second look. A paper's waiting pairs share a call
    as its first readings do (`group_units`): the abstract and the system prompt are paid once."""
    with store.session() as session:
        rows = pending_second_looks(session, claim_ids)
    pairs: list[tuple[PaperText, Pair]] = []
    firsts: dict[str, FirstReading] = {}
    for (
        assessment_id, arxiv_id, version, claim_id, text, date_text, title, abstract, published,
        label, strength, confidence, evidence, rationale,
    ) in rows:
        day = published.isoformat() if published else None
        paper = PaperText(arxiv_id, version, title or "", abstract or "", day)
        pairs.append((paper, Pair(ClaimText(claim_id, text, date_text), str(assessment_id))))
        first = FirstReading(label, strength, float(confidence), evidence or "", rationale or "")
        firsts[str(assessment_id)] = first
    return Waiting(group_units(pairs, settings.judge.claims_per_call), firsts)


class SecondLookWriter:
    """Writes each second reading with its agreement, in its own transaction (monitor/llm/engine.py)."""

    def __init__(self, store: Store, looker: SecondLooker, summary: SecondLookSummary, run_id: int | None):
        self.store, self.looker, self.summary, self.run_id = store, looker, summary, run_id

    def parse(self, unit: WorkUnit, text: str | None) -> list[Judgement]:
        return parse_answer(text, [pair.claim.id for pair in unit.pairs])

    def write(self, unit: WorkUnit, seconds: list[Judgement], exchange_id: int | None) -> None:
        by_claim = {second.claim_id: second for second in seconds}  # one each, as parse_answer checked
        for pair in unit.pairs:
            self._write(unit.paper, pair, by_claim[pair.claim.id], exchange_id)

    def _write(self, paper: PaperText, pair: Pair, second: Judgement, exchange_id: int | None) -> None:
        first = self.looker.firsts.get(pair.ref)
        if first is None:  # a batch's answer for a label that got its second reading meanwhile (live)
            return
        grounding = ground(second, paper, pair.claim.text)
        agrees = second.label == first.label
        row: dict[str, Any] = {
            "assessment_id": int(pair.ref),
            "model": self.looker.model,
            "prompt_version": self.looker.prompt_version,
            "label": second.label,
            "strength": second.strength or None,
            "confidence": min(1.0, max(0.0, grounding.confidence)),
            "rationale": second.rationale,
            "evidence": second.evidence,
            "grounded": grounding.grounded,
            "agrees": agrees,
            "exchange_id": exchange_id,
            "run_id": self.run_id,
        }
        with self.store.session() as session:
            written = add_second_look(session, row)
        if written:
            self.summary.agreed += 1 if agrees else 0
            self.summary.disagreed += 0 if agrees else 1

    def fail(self, unit: WorkUnit, message: str, error: MonitorError | None = None) -> None:
        self.summary.failed += len(unit.pairs)
        self.summary.errors.append(message)


@dataclass
class SecondReading:
    """A judge's second look as `monitor eval` applies it pair by pair: who reads, and which answers."""

    looker: SecondLooker
    needed: Callable[[Judgement], bool]

    def read(self, paper: PaperText, claim: ClaimText, first: Judgement) -> Judgement:
        """The second reading of one first answer (raises JudgeError like the judge)."""
        reading = FirstReading(first.label, first.strength, first.confidence, first.evidence, first.rationale)
        question = self.looker.question(paper, [(claim, reading)])
        answers, _ = self.looker.transport.ask(question, paper.arxiv_id, None)
        return answers[0]


def second_reading(settings: Settings, judge: Judge) -> SecondReading | None:
    """The second look `judge` gets under `settings` (`second_look_policy`), or None (the embedded judge,
    or "none")."""
    needed = second_look_policy(settings, judge)
    return None if needed is None else SecondReading(SecondLooker(settings), needed)


def estimate_second_looks(units: Sequence[WorkUnit], looker: SecondLooker) -> tuple[int, int]:
    """Each unit's estimated tokens (its messages, and ANSWER_TOKENS a pair); the (prompt, completion)
    totals."""
    return estimate_units(
        units,
        lambda unit: sum(estimate_tokens(m["content"]) for m in looker.unit_question(unit).messages),
        lambda pairs: ANSWER_TOKENS * pairs,
    )


def by_batch(settings: Settings, batch: bool) -> bool:
    """Whether a run that judges by Batch API (`batch`) asks its second readings by batch too
    (`judge.second_look_batch`); a live run asks them live."""
    return batch and settings.judge.second_look_batch


def second_look_cost(
    settings: Settings,
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    batch: bool = False,
) -> float:
    """USD for second readings: at Batch API rates when they go by batch (`by_batch`), else live."""
    return token_cost(settings, prompt_tokens, completion_tokens, batch=batch, cached_tokens=cached_tokens)


@dataclass(frozen=True)
class SecondLookEstimate:
    """Some second readings a run would ask, and their price (a dry run's): those judging the pending
    pairs is expected to need (`expected_second_looks`), or those already waiting (`waiting_second_looks`)."""

    looks: int  # pairs read again
    calls: int  # a paper's waiting pairs share a call (`pending_units`)
    prompt_tokens: int
    cached_tokens: int  # of prompt_tokens: the system prompt, cached from the second call on
    completion_tokens: int
    cost: float  # at live rates, or Batch API ones where they go by batch (`second_look_cost`)
    batch: bool = False  # asked by Batch API (`by_batch`)

    @classmethod
    def none(cls) -> SecondLookEstimate:
        return cls(0, 0, 0, 0, 0, 0.0)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "cost": round(self.cost, 6)}

    @classmethod
    def priced(
        cls,
        settings: Settings,
        looks: int,
        calls: int,
        prompt: int,
        completion: int,
        system: str,
        batch: bool = False,
    ) -> SecondLookEstimate:
        """`looks` second readings in `calls` calls of `prompt` + `completion` tokens in all, the `system`
        prompt cached from the second call on, at Batch API rates with `batch` (`by_batch`), else live
        (`second_look_cost`)."""
        cached = (calls - 1) * cached_prefix(estimate_tokens(system))
        cost = second_look_cost(settings, prompt, completion, cached, batch)
        return cls(looks, calls, prompt, cached, completion, cost, batch)


def priced_sample(pairs: Sequence[tuple[PaperText, ClaimText]]) -> list[tuple[PaperText, ClaimText]]:
    """Up to SAMPLED_PAIRS of `pairs`, spread evenly: the ones whose prompts an estimate renders."""
    return list(pairs)[:: max(1, len(pairs) // SAMPLED_PAIRS)][:SAMPLED_PAIRS]


def expected_second_looks(
    settings: Settings,
    judged: int,
    sample: Sequence[tuple[PaperText, ClaimText]],
    batch: bool = False,
    rate: LookRate = JUDGED_LOOKS,
) -> SecondLookEstimate:
    """The second looks expected of judging `judged` pairs by an LLM judge under `settings` (none under
    `judge.second_look = "none"`), at `rate` (the one measured for pairs no screen chose, or a caller's
    for its kind of pairs: the screen's, judge/estimate.py), its looks a call at most
    `judge.claims_per_call`, each call priced from the second-look prompts of (up to SAMPLED_PAIRS of)
    `sample`'s pairs, shown a bearing first reading, and ANSWER_TOKENS of answer a look, at Batch API
    rates with `batch` (`by_batch`), else live (`second_look_cost`). Calls nothing. A caller holding the
    judge asks `second_look_policy` first: a judge it gives no second look expects none."""
    looks = 0 if settings.judge.second_look == "none" else round(judged * rate.share)
    sample = priced_sample(sample)
    if not looks or not sample:
        return SecondLookEstimate.none()
    looker = SecondLooker(settings, connect=False)
    first = FirstReading("RELAXES", "direct", 0.8, "x" * 120, "x" * 200)

    def mean_tokens(times: int) -> float:
        asked = [looker.question(paper, [(claim, first)] * times).messages for paper, claim in sample]
        return sum(sum(estimate_tokens(m["content"]) for m in messages) for messages in asked) / len(sample)

    # A call: the system prompt, the paper once, and each look's claim and first reading.
    per_call = min(rate.per_call, settings.judge.claims_per_call)
    calls, prompt = grouped_prompt_tokens(looks, per_call, mean_tokens(1), mean_tokens(2))
    paper, claim = sample[0]
    system = looker.question(paper, [(claim, first)]).messages[0]["content"]
    return SecondLookEstimate.priced(settings, looks, calls, prompt, looks * ANSWER_TOKENS, system, batch)


def waiting_second_looks(
    store: Store, settings: Settings, claim_ids: Sequence[str] | None = None, batch: bool = False
) -> SecondLookEstimate:
    """The second looks already waiting (of `claim_ids`): first readings left pending by a stopped run, a
    failed second look or a collected batch, which a run asks along with its own (`second_look_pending`).
    Each priced from its own rendered prompt and ANSWER_TOKENS of answer, at Batch API rates with `batch`
    (`by_batch`), else live (`second_look_cost`), the system prompt cached from the second call on as in
    `expected_second_looks`. Calls nothing; a caller asks `second_look_policy` first, as a run does
    before asking them."""
    pending = pending_units(store, settings, claim_ids)
    if not pending.units:
        return SecondLookEstimate.none()
    looker = SecondLooker(settings, connect=False)
    units = looker.remember(pending)
    prompt, completion = estimate_second_looks(units, looker)
    system = looker.unit_question(units[0]).messages[0]["content"]
    looks = len(pending.firsts)
    return SecondLookEstimate.priced(settings, looks, len(units), prompt, completion, system, batch)


def second_look_pending(
    store: Store,
    settings: Settings,
    run_id: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    claim_ids: Sequence[str] | None = None,
    looker: SecondLooker | None = None,
    budget: TokenBudget | None = None,
) -> SecondLookSummary:
    """Give every pending first reading (of `claim_ids`) its second look, `llm.concurrency` at a time,
    within what is left of `budget` (default: all of `llm.token_budget`); stops cleanly on `should_stop()`."""
    began = time.monotonic()
    budget = budget or TokenBudget.of(settings.llm)
    summary = SecondLookSummary()
    pending = pending_units(store, settings, claim_ids)
    summary.pending = len(pending.firsts)
    if pending.units:
        looker = looker or SecondLooker(settings)
        recorder = ExchangeRecorder(store, run_id)
        units = looker.remember(pending)
        estimate_second_looks(units, looker)
        writer = SecondLookWriter(store, looker, summary, run_id)
        end = run_live(
            units,
            lambda unit: looker.look(unit, recorder),
            writer,
            budget=budget,
            recorder=recorder,
            workers=looker.max_concurrency,
            name="second look",
            should_stop=should_stop,
        )
        if end.fatal:
            summary.stopped = end.fatal
        elif end.budget_exhausted:
            summary.stopped = f"token budget {budget.limit} spent"
        elif end.stopped:
            summary.stopped = "stop requested"
        _count(summary, settings, recorder, batch=False)
    return _ended(store, summary, began)


def second_look_batches(
    store: Store,
    settings: Settings,
    run_id: int | None = None,
    claim_ids: Sequence[str] | None = None,
    budget: TokenBudget | None = None,
    submit: bool = True,
) -> SecondLookSummary:
    """Second readings by Batch API (`by_batch`): write the readings of every finished second-look batch
    as live ones are written, then (with `submit`) submit the first readings still waiting (of
    `claim_ids`) that no open batch carries, as one batch within what is left of `budget`. Half the live
    price; a label counts once an invocation after its batch finished has collected it."""
    began = time.monotonic()
    budget = budget or TokenBudget.of(settings.llm)
    summary = SecondLookSummary()
    looker = SecondLooker(settings)
    recorder = ExchangeRecorder(store, run_id)
    writer = SecondLookWriter(store, looker, summary, run_id)
    engine = BatchRun(store, BATCH_STAGE, looker, writer, recorder, summary)
    # A batch may carry any claim's pairs: each waiting first reading is what its answer is checked against.
    looker.remember(pending_units(store, settings))
    engine.collect()
    units = engine.not_carried(pending_units(store, settings, claim_ids).units)
    summary.pending = sum(len(unit.pairs) for unit in units)
    if submit and units:
        estimate_second_looks(units, looker)
        left = engine.submit(units, settings.llm.model_copy(update={"token_budget": budget.left}), run_id)
        if left:
            summary.stopped = f"token budget {budget.limit} spent"
    _count(summary, settings, recorder, batch=True)
    return _ended(store, summary, began)


def _count(summary: SecondLookSummary, settings: Settings, recorder: ExchangeRecorder, batch: bool) -> None:
    """What a pass's calls spent, priced at live or Batch API rates (`second_look_cost`)."""
    summary.take_counts(recorder)
    summary.cost = second_look_cost(
        settings, recorder.prompt_tokens, recorder.completion_tokens, recorder.cached_tokens, batch
    )


def _ended(store: Store, summary: SecondLookSummary, began: float) -> SecondLookSummary:
    """A pass's summary with what still waits for a second reading, and how long the pass took."""
    with store.session() as session:
        summary.pending_left = count_second_looks_pending(session)
    summary.seconds = time.monotonic() - began
    return summary
