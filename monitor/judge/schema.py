"""The answer a judge model must give, and its validation.

A model's reply is untrusted too: it is parsed leniently (code fences, prose around the JSON) but
validated strictly: labels from LABELS only, exactly the claim ids asked, confidence in 0..1, a
non-empty rationale, and evidence and a strength (direct, indirect, weak) for every label but
UNRELATED. The model's text is cleaned of control characters as paper text is (monitor/text.py): an
escape sequence in a rationale would otherwise reach every terminal, digest and page that prints it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from monitor.judge.base import LABELS, STRENGTHS, Judgement, Label, Strength
from monitor.llm.answers import InvalidAnswer, load_json
from monitor.text import printable


class ClaimAnswer(BaseModel):
    """The model's verdict on one claim."""

    model_config = ConfigDict(extra="ignore")

    claim_id: str
    label: Label
    # Out of range is rejected, not clamped: a model answering 1.5 or 2.5 is not on our scale at all, and
    # clamping would publish it at full strength. Pairs it keeps failing on get parked by the runner.
    confidence: float = Field(ge=0.0, le=1.0)
    rationale: str = Field(min_length=1)
    evidence: str = ""
    # How much the finding can carry (prompts/judge_system.j2); "none" for UNRELATED. The verdict rules
    # weigh it (monitor/verdicts/rules.py).
    strength: Strength | None = None

    @field_validator("label", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.strip().upper() if isinstance(v, str) else v

    @field_validator("strength", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().lower() or None if isinstance(v, str) else v

    @field_validator("claim_id", "rationale", "evidence", mode="before")
    @classmethod
    def _strip(cls, v: Any) -> Any:
        return printable(v).strip() if isinstance(v, str) else ("" if v is None else v)

    @model_validator(mode="after")
    def _evidence_needed(self) -> ClaimAnswer:
        if self.label == "UNRELATED":
            self.strength = "none"
            return self
        if not self.evidence:
            raise ValueError(f"label {self.label} needs an evidence quote from the title or abstract")
        if self.strength in (None, "none"):
            raise ValueError(f"label {self.label} needs a strength: direct, indirect or weak")
        return self


class JudgeAnswer(BaseModel):
    """The whole reply: one ClaimAnswer per claim asked."""

    assessments: list[ClaimAnswer]


def response_schema(claim_ids: list[str], bounds: bool = False) -> dict[str, Any]:
    """The JSON schema sent as `response_format` (strict: every key required, nothing extra).

    `bounds` adds item counts, the confidence range and a non-empty rationale: grammar-constrained
    servers (llama.cpp) enforce them, while OpenAI's strict mode may reject some of those keywords.
    """
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["assessments"],
        "properties": {
            "assessments": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    # In generation order: quote, then reason, then decide (constrained decoders
                    # emit keys in this order, so the label is conditioned on the quote).
                    "required": ["claim_id", "evidence", "rationale", "label", "strength", "confidence"],
                    "properties": {
                        "claim_id": {"type": "string", "enum": list(claim_ids)},
                        "evidence": {"type": "string"},
                        "rationale": {"type": "string"},
                        "label": {"type": "string", "enum": list(LABELS)},
                        "strength": {"type": "string", "enum": list(STRENGTHS)},
                        "confidence": {"type": "number"},
                    },
                },
            }
        },
    }
    if bounds:
        answers = schema["properties"]["assessments"]  # type: ignore[index]
        answers["minItems"] = answers["maxItems"] = len(claim_ids)
        answers["items"]["properties"]["confidence"].update(minimum=0, maximum=1)
        # Length caps keep a small local model from rambling until max_tokens cuts the JSON off.
        answers["items"]["properties"]["rationale"].update(minLength=1, maxLength=200)
        answers["items"]["properties"]["evidence"]["maxLength"] = 400
    return schema


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"])
        parts.append(f"{where}: {err['msg']}" if where else str(err["msg"]))
    return "; ".join(parts)


def parse_answer(text: str | None, claim_ids: list[str]) -> list[Judgement]:
    """Parse and validate a reply for `claim_ids`; raises InvalidAnswer saying what is wrong."""
    if not text or not text.strip():
        raise InvalidAnswer("the reply is empty")
    data = load_json(text)
    if isinstance(data, list):
        data = {"assessments": data}
    elif isinstance(data, dict) and "assessments" not in data and "label" in data and len(claim_ids) == 1:
        data = {"assessments": [{"claim_id": claim_ids[0], **data}]}
    try:
        answer = JudgeAnswer.model_validate(data)
    except ValidationError as exc:
        raise InvalidAnswer(_describe(exc)) from None
    got = [a.claim_id for a in answer.assessments]
    if sorted(got) != sorted(claim_ids):
        raise InvalidAnswer(f"expected one entry for each claim id {sorted(claim_ids)}, got {got}")
    return [
        Judgement(
            claim_id=a.claim_id,
            label=a.label,
            confidence=a.confidence,
            rationale=a.rationale,
            evidence=a.evidence,
            strength=a.strength or "",
        )
        for a in answer.assessments
    ]
