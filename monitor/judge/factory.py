"""Choosing a judge: the provider named on the command line, else the one the settings resolve to."""

from __future__ import annotations

from monitor.config import Settings, embedded_alias
from monitor.errors import ConfigError
from monitor.judge.base import Judge
from monitor.judge_names import EMBEDDED

PROVIDERS = (EMBEDDED, "openai")


def make_judge(settings: Settings, provider: str | None = None, connect: bool = True) -> Judge:
    """Build the judge for `provider` ("embedded" | "openai", "local" read as "embedded"; None:
    settings.judge_provider()).

    `connect=False` for an estimate: an `openai` judge then needs no API key or base URL until it calls.
    """
    chosen = embedded_alias(provider, "the judge provider") or settings.judge_provider()
    if chosen == "openai":
        from monitor.judge.openai_judge import OpenAIJudge

        return OpenAIJudge(settings, connect=connect)
    if chosen == EMBEDDED:
        # Imported only when asked for: the embedded model's dependencies are heavier.
        from monitor.judge.embedded import EmbeddedJudge

        return EmbeddedJudge(settings)
    raise ConfigError(f"unknown judge provider {chosen!r}; choose one of {', '.join(PROVIDERS)}")
