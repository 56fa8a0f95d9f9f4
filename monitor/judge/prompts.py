"""The judge's prompts: judge_system.j2, judge_user.j2 and judge_correction.j2 in `prompts/`.

Loading, versioning and the `untrusted` filter are the LLM layer's (monitor/llm/prompts.py); this
module renders the messages of one judge call.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from monitor.llm.prompts import Templates, load_templates
from monitor.llm.texts import ClaimText, PaperText

# judge_labels.j2 (what counts as evidence, the labels, strengths and contrastive cases) is included by
# judge_system.j2 and by the second look's prompt: one definition, hashed into both prompt versions.
TEMPLATE_NAMES = ("judge_system.j2", "judge_user.j2", "judge_correction.j2", "judge_labels.j2")


@dataclass(frozen=True)
class JudgePrompts:
    """The loaded judge templates and their version; renders the messages of one call."""

    templates: Templates

    @property
    def version(self) -> str:
        return self.templates.version

    @property
    def directory(self) -> Path:
        return self.templates.directory

    def system(self) -> str:
        return self.templates.render("judge_system.j2")

    def user(self, paper: PaperText, claims: list[ClaimText]) -> str:
        return self.templates.render("judge_user.j2", paper=paper.for_prompt(), claims=claims)

    def correction(self, problem: str, claim_ids: list[str]) -> str:
        return self.templates.render("judge_correction.j2", problem=problem, claim_ids=claim_ids)

    def messages(self, paper: PaperText, claims: list[ClaimText]) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system()},
            {"role": "user", "content": self.user(paper, claims)},
        ]


def load_prompts(directory: Path | None = None) -> JudgePrompts:
    """Load the judge templates from `directory` (default: the shipped prompts/)."""
    return JudgePrompts(load_templates(directory, TEMPLATE_NAMES, "judge"))
