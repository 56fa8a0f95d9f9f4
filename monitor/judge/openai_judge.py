"""The `openai` provider: any OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp, ...).

The protocol (structured-output fallback, retries, the circuit breaker, recording) is the LLM layer's
transport (monitor/llm/transport.py); this judge renders its prompts, asks for assessments of up to
`judge.claims_per_call` claims of one paper and parses them.
"""

from __future__ import annotations

from typing import Any

from openai import OpenAI

from monitor.config import Settings
from monitor.judge.base import Judge, Judgement
from monitor.judge.prompts import JudgePrompts, load_prompts
from monitor.judge.schema import parse_answer, response_schema
from monitor.llm.texts import ClaimText, PaperText, Recorder
from monitor.llm.transport import ChatTransport, Mode, Question
from monitor.llm.units import WorkUnit


class OpenAIJudge(Judge):
    """A judge backed by an OpenAI-compatible server."""

    name = "openai"
    supports_batch = True
    billed = True
    second_look = True

    def __init__(
        self,
        settings: Settings,
        prompts: JudgePrompts | None = None,
        client: OpenAI | None = None,
        connect: bool = True,
    ) -> None:
        self.settings = settings.judge
        self.prompts: JudgePrompts = prompts or load_prompts(settings.judge.prompts_dir)
        self.model = settings.llm.model
        self.prompt_version = self.prompts.version
        self.claims_per_call = max(1, settings.judge.claims_per_call)
        self.max_concurrency = max(1, settings.llm.concurrency)
        # connect=False: a dry run, which prices calls and makes none, needs no key (ChatTransport)
        self.transport = ChatTransport(settings.llm, self.name, self.prompt_version, client, connect)

    @property
    def mode(self) -> Mode | None:
        """The response form this server was found to accept (None until the first success)."""
        return self.transport.mode

    def drain_warnings(self) -> list[str]:
        return self.transport.drain_warnings()

    def question(self, paper: PaperText, claims: list[ClaimText]) -> Question[list[Judgement]]:
        """The assessments of `claims` against `paper`, as one question (the Batch API sends it too)."""
        ids = [c.id for c in claims]

        def schema(bounds: bool) -> dict[str, Any]:
            return response_schema(ids, bounds=bounds)

        return Question(
            messages=self.prompts.messages(paper, claims),
            schema_name="claim_assessments",
            schema=schema,
            max_tokens=self.settings.max_output_tokens * len(ids),
            parse=lambda text: parse_answer(text, ids),
            correction=lambda problem: self.prompts.correction(problem, ids),
        )

    def unit_question(self, unit: WorkUnit) -> Question[list[Judgement]]:
        """The question of one of the judge's units (a paper and some of its claims): a batch request."""
        return self.question(unit.paper, unit.claims)

    def judge(
        self, paper: PaperText, claims: list[ClaimText], recorder: Recorder | None = None
    ) -> list[Judgement]:
        where = f"{paper.arxiv_id}v{paper.version}"
        judgements, exchange_id = self.transport.ask(self.question(paper, claims), where, recorder)
        for judgement in judgements:
            judgement.exchange_id = exchange_id
        return judgements
