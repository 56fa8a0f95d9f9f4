"""Settings: defaults, then `monitor.toml`, then `MONITOR_*` environment variables (highest).

Nested keys use a double underscore in the environment: `MONITOR_JUDGE__MODEL=gpt-4o-mini`.
The usual `OPENAI_API_KEY` / `OPENAI_BASE_URL` are honoured for the OpenAI-compatible judge, and
`MONITOR_SMTP_PASSWORD` for mail. Secrets are `SecretStr` so they never appear in logs or reprs.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from monitor.errors import ConfigError

DEFAULT_CONFIG_FILE = "monitor.toml"


class Section(BaseModel):
    # An unknown key in a section is a typo the user wants to hear about.
    model_config = ConfigDict(extra="forbid")


class DatabaseSettings(Section):
    url: str = "sqlite:///monitor.db"
    echo: bool = False


class PathSettings(Section):
    seeds: Path = Path("seeds")
    reports: Path = Path("reports")
    claims_file: Path | None = None  # the user's own claims (YAML or TOML)


class ArxivSettings(Section):
    categories: list[str] = Field(default_factory=lambda: ["cs.CL", "cs.LG", "cs.AI"])
    api_url: str = "https://export.arxiv.org/api/query"
    rss_url: str = "https://rss.arxiv.org"
    delay_seconds: float = 3.0
    timeout_seconds: float = 30.0
    max_retries: int = 5
    page_size: int = 2000
    contact: str = "claim-monitor-user@example.invalid"
    sample_path: Path | None = None  # overrides the shipped sample
    snapshot_path: Path | None = None  # e.g. ../shared/arxiv/corpus.jsonl
    lookback_days: int = 7  # first run with no high-water mark

    @field_validator("delay_seconds")
    @classmethod
    def _polite(cls, v: float) -> float:
        # arXiv's terms ask for one request every 3 seconds; tests may lower it only via
        # MONITOR_ARXIV_MIN_DELAY, which is not a documented user setting.
        floor = float(os.environ.get("MONITOR_ARXIV_MIN_DELAY", "3.0"))
        if v < floor:
            raise ValueError(f"must be at least {floor} seconds (arXiv's rate limit)")
        return v


class RelevanceSettings(Section):
    method: Literal["bm25", "hybrid"] = "hybrid"
    top_k_per_claim: int = 60
    min_score: float = 0.0
    embed_candidates: int = 400


class JudgeSettings(Section):
    provider: Literal["auto", "local", "openai"] = "auto"
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key: SecretStr | None = None
    timeout_seconds: float = 60.0
    max_retries: int = 4
    concurrency: int = 4
    claims_per_call: int = 4
    token_budget: int | None = None
    price_input_per_million: float = 0.15
    price_output_per_million: float = 0.60
    batch: bool = False
    temperature: float = 0.0

    def resolved_provider(self) -> Literal["local", "openai"]:
        if self.provider != "auto":
            return self.provider
        return "openai" if (self.base_url or self.api_key) else "local"


class VerdictSettings(Section):
    overturn_threshold: float = 0.7
    local_overturn_threshold: float = 0.9
    min_confidence: float = 0.3
    recent_months: int = 6


class ReportSettings(Section):
    period: Literal["week", "month"] = "week"
    formats: list[Literal["md", "html"]] = Field(default_factory=lambda: ["md"])
    email: bool = False


class EmailSettings(Section):
    host: str = "localhost"
    port: int = 587
    security: Literal["starttls", "ssl", "none"] = "starttls"
    username: str | None = None
    password: SecretStr | None = None
    sender: str = "claim-monitor@localhost"
    recipients: list[str] = Field(default_factory=list)
    timeout_seconds: float = 30.0
    max_retries: int = 3


class ScheduleSettings(Section):
    digest_cron: str = "0 7 * * mon"
    fetch_cron: str = "0 6 * * *"
    timezone: str | None = None
    misfire_grace_seconds: int = 3600
    on_lock_held: Literal["exit", "wait"] = "exit"
    lock_wait_seconds: int = 600


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MONITOR_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    paths: PathSettings = Field(default_factory=PathSettings)
    arxiv: ArxivSettings = Field(default_factory=ArxivSettings)
    relevance: RelevanceSettings = Field(default_factory=RelevanceSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    verdicts: VerdictSettings = Field(default_factory=VerdictSettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    email: EmailSettings = Field(default_factory=EmailSettings)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # init kwargs carry the parsed TOML file (see load_settings), so env overrides it.
        return (env_settings, init_settings)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None


def _standard_env(data: dict[str, Any]) -> dict[str, Any]:
    """Fold the conventional OpenAI and SMTP variables in, below MONITOR_* ones."""
    judge = data.setdefault("judge", {})
    if os.environ.get("OPENAI_API_KEY") and "MONITOR_JUDGE__API_KEY" not in os.environ:
        judge.setdefault("api_key", os.environ["OPENAI_API_KEY"])
    if os.environ.get("OPENAI_BASE_URL") and "MONITOR_JUDGE__BASE_URL" not in os.environ:
        judge.setdefault("base_url", os.environ["OPENAI_BASE_URL"])
    if os.environ.get("MONITOR_SMTP_PASSWORD"):
        data.setdefault("email", {}).setdefault("password", os.environ["MONITOR_SMTP_PASSWORD"])
    if not judge:
        data.pop("judge")
    return data


def config_path(explicit: str | Path | None = None) -> Path | None:
    """The config file in force: --config, else $MONITOR_CONFIG, else ./monitor.toml if present."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("MONITOR_CONFIG")
    if env:
        return Path(env)
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.exists() else None


def load_settings(explicit: str | Path | None = None) -> Settings:
    """Load settings; every problem becomes one ConfigError line naming the file and key."""
    path = config_path(explicit)
    data: dict[str, Any] = {}
    if path is not None:
        if not path.exists():
            raise ConfigError(f"{path}: config file not found")
        data = _read_toml(path)
    data = _standard_env(data)
    try:
        return Settings(**data)
    except ValidationError as exc:
        where = str(path) if path else "environment"
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {_explain(err)}" for err in exc.errors()
        )
        raise ConfigError(f"{where}: invalid configuration: {problems}") from None


def _explain(err: Any) -> str:
    if err.get("type") == "extra_forbidden":
        return "unknown key"
    return str(err.get("msg", "invalid"))
