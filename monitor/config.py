"""Settings: defaults, then `monitor.toml`, then `MONITOR_*` environment variables (highest).

Nested keys use a double underscore in the environment: `MONITOR_JUDGE__MODEL=gpt-4o-mini`.
The usual `OPENAI_API_KEY` / `OPENAI_BASE_URL` are honoured for the `[llm]` server, and
`MONITOR_SMTP_PASSWORD` for mail. Secrets are `SecretStr` so they never appear in logs or reprs.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import tomllib
import typing
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from annotated_types import Le, Lt
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from monitor.errors import ConfigError
from monitor.judge_names import EMBEDDED, legacy_judge_name
from monitor.progress import line_interval
from monitor.text import unprintable

log = logging.getLogger(__name__)

DEFAULT_CONFIG_FILE = "monitor.toml"
ENV_PREFIX = "MONITOR_"

# MONITOR_* variables that are not settings: read by the code or the tests directly. Any other
# MONITOR_* variable must name a section (and key) of Settings, so a typo is an error, not ignored.
OTHER_VARIABLES = frozenset(
    {
        "MONITOR_CONFIG",
        "MONITOR_SMTP_PASSWORD",
        "MONITOR_EMBEDDING_MODEL",
        "MONITOR_EMBEDDING_TOKENIZER",
        "MONITOR_SHARED",
        "MONITOR_NO_PROGRESS",  # no progress bars or lines (monitor/progress.py)
        "MONITOR_PROGRESS_INTERVAL",  # seconds between plain progress lines off a terminal (progress.py)
        # test-only (docs/operations.md, "Test-only variables"):
        "MONITOR_ARXIV_MIN_DELAY",
        "MONITOR_TEST_PAUSE_AT",
        "MONITOR_TEST_PAUSE_FILE",
        "MONITOR_TEST_PAUSE_SECONDS",
        "MONITOR_TEST_PG",
    }
)


# Bounds shared by a setting and the code that writes or checks it (`monitor init`, the relevance cut).
MAX_CONCURRENCY = 256  # LLM requests in flight: more than any one server's slots
MAX_LEXICAL_WEIGHT = 100.0  # hybrid relevance: weight of BM25 (0..1) beside the cosine (-1..1)


def fault(key: str, message: str) -> PydanticCustomError:
    """The error a check across keys raises: `key` (relative to where the check runs) is the one at
    fault, so the user reads "relevance.cut: ..." like any other bad value (`_problem`)."""
    return PydanticCustomError("setting", "{message}", {"key": key, "message": message})


def _plain_text(key: str, value: Any) -> None:
    """Refuse control characters and line breaks in a text setting (also inside lists and tables):
    every text setting is one line (a URL, a host, a name, a mail subject), and a NUL or a CR/LF in one
    failed later, mid-run, with a traceback (a path with a NUL, a CR/LF in a mail header)."""
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if isinstance(value, str | Path):
        text = str(value)
        problem = unprintable(text) or ("a line break" if "\n" in text else None)
        if problem:
            raise fault(key, f"contains {problem}; a setting is one line of plain text")
    elif isinstance(value, list | tuple):
        for item in value:
            _plain_text(key, item)
    elif isinstance(value, dict):
        for k, item in value.items():
            _plain_text(key, k)
            _plain_text(key, item)


def _require_bounds(cls: type[BaseModel]) -> None:
    """Refuse, when a section is defined, a numeric setting without an upper bound (Field(le=...))."""
    for name, info in cls.model_fields.items():
        kinds = {info.annotation, *typing.get_args(info.annotation)}
        if kinds & {int, float} and not any(isinstance(m, Le | Lt) for m in info.metadata):
            raise TypeError(f"{cls.__name__}.{name}: a numeric setting needs an upper bound (Field(le=...))")


class Section(BaseModel):
    """A settings section. Every number in one is finite and bounded on both sides (issue 33): NaN
    compares false with everything, so a NaN cut selected no pair and the digest said "none bears" as
    if final; an infinite or 1e300 timeout loaded, then overflowed mid-run. `allow_inf_nan=False`
    refuses NaN and infinities for every float (nested ones too), and a numeric setting without an
    upper bound is refused when its section is defined (`_require_bounds`), so a new setting cannot
    forget one: its section fails at import, and tests/test_fuzz_inputs.py covers it from then on."""

    # An unknown key in a section is a typo the user wants to hear about.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        _require_bounds(cls)

    @model_validator(mode="after")
    def _one_line_texts(self) -> Section:
        for name in type(self).model_fields:
            value = getattr(self, name)
            if not isinstance(value, BaseModel):  # a nested section checks its own
                _plain_text(name, value)
        return self


class DatabaseSettings(Section):
    url: str = "sqlite:///monitor.db"
    echo: bool = False
    # SQLite: how long a write waits for another process's write lock before the command exits 75.
    busy_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)


class PathSettings(Section):
    seeds: Path = Path("seeds")
    reports: Path = Path("reports")
    claims_file: Path | None = None  # the user's own claims (YAML or TOML)


class ArxivSettings(Section):
    categories: list[str] = Field(default_factory=lambda: ["cs.CL", "cs.LG", "cs.AI"])
    api_url: str = "https://export.arxiv.org/api/query"
    rss_url: str = "https://rss.arxiv.org"
    rss_flavour: Literal["atom", "rss"] = "atom"  # rss.arxiv.org/{atom|rss}/cat1+cat2
    delay_seconds: float = Field(default=3.0, le=600)  # between requests; at least 3 (arXiv's terms)
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    max_retries: int = Field(default=5, ge=0, le=20)
    page_size: int = Field(default=2000, ge=1, le=2000)  # arXiv serves results in slices of at most 2,000
    contact: str = "claim-monitor-user@example.invalid"
    sample_path: Path | None = None  # overrides the shipped sample
    snapshot_path: Path | None = None  # e.g. ../shared/arxiv/corpus.jsonl
    lookback_days: int = Field(default=7, ge=1, le=3650)  # first run with no high-water mark
    # broad: one query per category set and window (relevance narrows); topics: one query per line
    query_mode: Literal["broad", "topics"] = "broad"
    topics: dict[str, list[str]] = Field(default_factory=dict)  # line id -> arXiv search terms

    @field_validator("delay_seconds")
    @classmethod
    def _polite(cls, v: float) -> float:
        # arXiv's terms ask for one request every 3 seconds; tests may lower the floor only via
        # MONITOR_ARXIV_MIN_DELAY, a test-only variable (docs/operations.md), not a user setting.
        floor = float(os.environ.get("MONITOR_ARXIV_MIN_DELAY", "3.0"))
        if v < floor:
            raise ValueError(f"must be at least {floor} seconds (arXiv's rate limit)")
        return v


class RelevanceSettings(Section):
    """Which (paper, claim) pairs go to the judge; see monitor/relevance/__init__.py for the method."""

    # bm25: lexical only; hybrid: BM25 plus MiniLM similarity of claim and paper title.
    method: Literal["bm25", "hybrid"] = "hybrid"
    # What is searched for besides the claim text: its note title, its lines' questions, topics.
    query_context: list[Literal["title", "questions", "topics"]] = Field(
        default_factory=lambda: ["title", "questions"]
    )
    # hybrid score = weight * BM25 (0..1) + cosine
    lexical_weight: float = Field(default=3.0, ge=0, le=MAX_LEXICAL_WEIGHT)
    # hybrid: embed titles only where some BM25 reaches it
    embed_gate: float = Field(default=0.10, ge=0, le=1)
    # Per claim, the share of the reference sample's papers that pass: sets the claim's score cut.
    share: float = Field(default=0.02, gt=0, le=1)
    max_share: float = Field(default=0.1, gt=0, le=1)  # ceiling per claim in any one scanned batch
    # Scores lie in 0..1 (bm25) or -1..lexical_weight + 1 (hybrid). A floor or cut at or above the
    # method's highest score would select no pair, so it is refused.
    # No pair scoring at or below min_score is ever selected.
    min_score: float = Field(default=0.0, ge=-1, le=MAX_LEXICAL_WEIGHT + 1)
    # One fixed score cut for every claim instead of the learned ones.
    cut: float | None = Field(default=None, ge=-1, le=MAX_LEXICAL_WEIGHT + 1)
    batch_size: int = Field(default=2000, ge=1, le=100_000)  # paper versions scored and committed together
    # llm: the LLM server screens every paper against every claim (or against the claims of a first
    # cut, `screen_share` < 1) and only what it keeps is judged (monitor/relevance/screen.py); needs an
    # LLM. auto: llm whenever the judge in force is an LLM, none for the embedded judge, so with an LLM no
    # paper is read against some claims and not others by a lexical cut (docs/relevance.md).
    screen: Literal["auto", "none", "llm"] = "auto"
    # The first cut under the screen, per claim (a share of the reference sample). 1.0: none, every
    # paper is screened against every claim; a large library may set a measured cut (docs/relevance.md).
    screen_share: float = Field(default=1.0, gt=0, le=1)
    # The first cut under a screen is wide, and there the 0.10 embedding gate costs recall (at 20% of
    # pairs: 0.862 gated, 0.931 with every title embedded; bench/relevance_bench.py --embed-gate).
    screen_embed_gate: float = Field(default=0.0, ge=0, le=1)
    # Claims per screen group: a call asks about one group's claims (the stable, cached prefix of every
    # call of a run) and `screen_papers_per_call` papers after them.
    screen_claims_per_call: int = Field(default=40, ge=1, le=200)
    screen_papers_per_call: int = Field(default=4, ge=1, le=20)
    screen_model: str | None = None  # default: llm.model
    # A paper the screen keeps for some claim of a group is on topic, and it often bears on other claims
    # of the group that one quick reading passes over: those pairs get a second, closer reading
    # (prompts/screen_recheck_system.j2) before they are dropped (docs/relevance.md measures it).
    screen_recheck: bool = True
    # The screen through the OpenAI Batch API (half price, answers within 24 h), for backfills: each run
    # collects finished screen batches and submits the pending pairs no open batch carries.
    screen_batch: bool = False

    def highest_score(self) -> float:
        """The most a pair can score under this method (scoring.py): BM25 is 0..1, the cosine at most 1."""
        return 1.0 if self.method == "bm25" else self.lexical_weight + 1.0

    def resolved(self, judge_provider: str) -> RelevanceSettings:
        """The settings in force for this judge. `screen = "auto"` becomes "llm" under an LLM judge and
        "none" under the embedded one. Without a screen, an LLM judge's unset relevance keys follow
        LLM_JUDGE_RELEVANCE (a wider cut, docs/relevance.md); an explicit value always wins."""
        screen = self.screen if self.screen != "auto" else ("llm" if judge_provider == "openai" else "none")
        resolved = self if screen == self.screen else self.model_copy(update={"screen": screen})
        if judge_provider != "openai" or screen == "llm":
            return resolved  # a screen keeps its own first cut (screen_share)
        update = {k: v for k, v in LLM_JUDGE_RELEVANCE.items() if k not in self.model_fields_set}
        return resolved.model_copy(update=update) if update else resolved


# Relevance defaults under an LLM judge. The embedded judge keeps the 2% budget it was sized for; an
# LLM judge is worth a wider cut, and at 10% plain BM25 finds as much as the hybrid without an
# embedding model (docs/relevance.md, bench/relevance_bench.py --settings).
LLM_JUDGE_RELEVANCE: dict[str, object] = {"share": 0.10, "method": "bm25"}


def embedded_alias(value: Any, where: str) -> Any:
    """The old name "local" of the embedded judge read as "embedded", with a one-line notice."""
    if not legacy_judge_name(value):
        return value
    log.warning('%s "%s" is now called "%s"; read as "%s"', where, value, EMBEDDED, EMBEDDED)
    return EMBEDDED


OPENAI_API_URL = "https://api.openai.com/v1"  # where a key goes when no other server is named for it


def same_server(a: str, b: str) -> bool:
    """Whether two base URLs name the same server and path (scheme, host, port and path compared;
    case of the host, default ports and a trailing slash aside)."""

    def parts(url: str) -> tuple[str, str, int | None, str]:
        try:
            u = urlsplit(url.strip())
            port = u.port or {"http": 80, "https": 443}.get(u.scheme.lower())
        except ValueError:
            return (url, "", None, "")  # unparseable: equal to itself only
        return (u.scheme.lower(), (u.hostname or "").lower(), port, u.path.rstrip("/"))

    return parts(a) == parts(b)


class LLMSettings(Section):
    """The connection every LLM use shares: the judge, the screen, research questions, rewording, cost."""

    base_url: str | None = None  # an OpenAI-compatible server: http://127.0.0.1:8080/v1 (OPENAI_BASE_URL)
    api_key: SecretStr | None = None  # better set OPENAI_API_KEY in the environment; never logged
    # The one server the API key is sent to; to any other base_url it is not sent (a server `monitor
    # init` found gets none). Unset: the base URL given beside the key (OPENAI_BASE_URL beside
    # OPENAI_API_KEY, MONITOR_LLM__BASE_URL beside MONITOR_LLM__API_KEY), else the OpenAI API.
    key_base_url: str | None = None
    model: str = "gpt-4o-mini"  # part of every LLM judgement's cache key
    timeout_seconds: float = Field(default=60.0, gt=0, le=3600)  # per HTTP request
    # retries of 429 / 5xx / timeouts per request (Retry-After)
    max_retries: int = Field(default=4, ge=0, le=20)
    # first retry wait when the server sends no Retry-After
    backoff_seconds: float = Field(default=1.0, ge=0, le=600)
    # a longer Retry-After is not waited for
    max_retry_wait_seconds: float = Field(default=120.0, ge=0, le=86400)
    # Server failures (5xx, 429) in a row for this long stop the run (exit 6); a rerun resumes.
    server_failure_seconds: float = Field(60.0, gt=0.0, le=3600.0)
    concurrency: int = Field(default=4, ge=1, le=MAX_CONCURRENCY)  # requests in flight at once
    # per run, judge and screen together; when spent, the run stops cleanly and the rest stays pending
    token_budget: int | None = Field(default=None, ge=1, le=10**12)
    # USD per million prompt tokens (estimates)
    price_input_per_million: float = Field(default=0.15, ge=0, le=10_000)
    # USD per million prompt tokens served from the provider's prefix cache (OpenAI reports them as
    # usage.prompt_tokens_details.cached_tokens; gpt-4o-mini bills them at half the input rate)
    price_cached_input_per_million: float = Field(default=0.075, ge=0, le=10_000)
    # USD per million completion tokens
    price_output_per_million: float = Field(default=0.60, ge=0, le=10_000)
    # A stronger model for the judge's second look (judge.second_look): the few pairs that move verdicts.
    # None: llm.model, with the second look's own prompt.
    review_model: str | None = None
    batch: bool = False  # `monitor judge` uses the OpenAI Batch API (half price, results within 24 h)
    batch_poll_seconds: float = Field(default=30.0, gt=0, le=3600)  # with `monitor judge --batch --wait`
    temperature: float = Field(default=0.0, ge=0, le=2)  # the OpenAI API's range
    # auto: json_schema, then json_object with the schema (llama.cpp), then json_object, then plain text;
    # the first the server takes is remembered for the rest of the run.
    response_format: Literal["auto", "json_schema", "json_object_schema", "json_object", "text"] = "auto"

    # The server the key was for when it was withheld from base_url (see _key_for_its_server).
    _withheld_for: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _key_for_its_server(self) -> LLMSettings:
        """A key goes only to the server it was given for: never to another base URL, such as a local
        port that anything may listen on. Withheld here, so no use of the settings can send it."""
        home = self.key_base_url or OPENAI_API_URL
        if self.api_key is not None and not same_server(self.base_url or OPENAI_API_URL, home):
            self.api_key = None
            self._withheld_for = home
        return self

    @property
    def withheld_for(self) -> str | None:
        """The server an API key was given for when it is not sent to base_url; None otherwise."""
        return self._withheld_for

    def configured(self) -> bool:
        """An OpenAI-compatible server is configured (a base URL or an API key)."""
        return bool(self.base_url or self.api_key)


# Keys that moved from [judge] to [llm]: the old spelling still loads, with a notice (Settings._moved).
MOVED_TO_LLM = frozenset(LLMSettings.model_fields)


class JudgeSettings(Section):
    """The stance judge: the embedded model (embedded) or the [llm] server (openai)."""

    # auto: openai when llm.base_url or an API key is set, else the embedded model.
    provider: Literal["auto", "embedded", "openai"] = "auto"
    # claims of one paper judged in one request (they share the abstract's tokens)
    claims_per_call: int = Field(default=4, ge=1, le=100)
    max_output_tokens: int = Field(default=300, ge=1, le=100_000)  # per claim in a call
    prompts_dir: Path | None = None  # your own *.j2 templates (default: the shipped prompts/)
    # A pair whose answer was invalid or refused in this many judge passes is parked: no longer asked
    # until `--force` or `monitor retest` (0: never park).
    park_after_failures: int = Field(3, ge=0, le=1000)
    # A second, closer reading before an LLM label counts (monitor/judge/second_look.py): "all" every
    # SUPPORTS, RELAXES and OVERTURNS and every unsure UNRELATED; "moving" only RELAXES, OVERTURNS and
    # unsure labels (the minimum); "none" never. A disagreement goes to the curator's queue.
    second_look: Literal["all", "moving", "none"] = "all"
    second_look_below: float = Field(default=0.7, ge=0, le=1)  # "unsure": a confidence below this
    # Under the Batch API (`monitor judge --batch`, `llm.batch`) the second readings go by batch too: half
    # the price, and a label counts one batch later. False: asked live as soon as the first readings land.
    second_look_batch: bool = True
    # The embedded judge's triage cut: it only ranks papers for triage (its stances count toward no
    # verdict), so for a library of more than `embedded_cut_above_claims` active claims it reads, per
    # claim and ISO week, only the `embedded_top_k` candidates of highest relevance score. The digest
    # counts the rest as below the cut, not as failed or pending; an LLM judge reads them all. None: no
    # cut. Above 150 claims the digest lists only some claims in full (report/budget.py); the figures
    # behind both defaults are in docs/scale.md.
    embedded_top_k: int | None = Field(default=10, ge=1, le=100_000)
    embedded_cut_above_claims: int = Field(default=150, ge=0, le=1_000_000)

    @field_validator("provider", mode="before")
    @classmethod
    def _old_provider_name(cls, value: Any) -> Any:
        return embedded_alias(value, "judge.provider")


Stance = Literal["SUPPORTS", "RELAXES", "OVERTURNS"]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class VerdictSettings(Section):
    # See docs/verdicts.md for the rules these feed.
    # A side's strength: the chance that at least one of its papers is right (docs/verdicts.md).
    move_strength: float = Field(0.8, gt=0.0, le=1.0)  # to make a claim DURABLE, PERISHABLE or CONTESTED
    overturn_strength: float = Field(0.9, gt=0.0, le=1.0)  # OVERTURNS strength for OVERTURNED
    # judge name ("embedded", "openai", ...) -> label -> measured precision (`monitor eval`); caps each
    # label's confidence.
    precision: dict[str, dict[Stance, Probability]] = Field(default_factory=dict)
    # Judges whose labels move a verdict only once a curator confirmed them in `monitor review`.
    # [] publishes every judge's verdicts unreviewed.
    confirm_judges: list[str] = Field(default_factory=lambda: [EMBEDDED])
    # Labels below this confidence are withheld ("too unsure"): listed for review, never stated as a
    # finding, moving no verdict. The judge's prompt gives under 0.5 only when another label is about as
    # likely. Under second-look prompt v5, 30 SUPPORTS both readings put at 0.50 (seven real weeks) were
    # signed 27 times stated and 15 times as "stance unsure" lines (docs/digest_trust.md); under earlier
    # prompts, stated labels at 0.50 were signed 13 of 24.
    min_confidence: float = Field(0.5, ge=0.0, le=1.0)
    # RELAXES and OVERTURNS, the labels that move a claim toward PERISHABLE or OVERTURNED, count only at
    # this confidence or more (and never below min_confidence): on nine LLM-path weeks graders signed
    # 12 of 25 RELAXES stated at 0.55 against 19 of 21 SUPPORTS at 0.55 (docs/digest_trust.md).
    min_confidence_against: float = Field(0.6, ge=0.0, le=1.0)
    recent_months: int = Field(6, ge=1, le=1200)  # window for "strongest recent contradicting work"
    exclude_anchors: bool = True  # a line's own anchor papers are not new evidence for its claims


class WebhookSettings(Section):
    """Where a digest's summary is posted (monitor/report/webhooks.py). A Slack URL carries its token in
    its path, so the URL is a secret: never logged, and best given by `url_env` (an environment variable)."""

    kind: Literal["slack", "json"]
    url: SecretStr | None = None
    url_env: str | None = None  # the environment variable holding the URL, e.g. MONITOR_SLACK_URL
    # How logs, errors and the digest's record name it; default: the kind and a hash of the URL.
    name: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)  # e.g. Authorization; never logged
    timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    max_retries: int = Field(default=3, ge=0, le=20)
    retry_wait_seconds: float = Field(default=2.0, ge=0, le=600)  # first back-off; doubles per attempt
    # Post to a host on a loopback, link-local or private address (a receiver on this machine or the
    # LAN): refused unless set, so a URL cannot aim the post at a local admin port or metadata service.
    allow_private_network: bool = False

    @model_validator(mode="after")
    def _one_url(self) -> WebhookSettings:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("give a webhook exactly one of url and url_env")
        return self


class ReportSettings(Section):
    period: Literal["week", "month"] = "week"  # a spec for report/digest.py choose_period, not a Period
    formats: list[Literal["md", "html"]] = Field(default_factory=lambda: ["md"])
    email: bool = False
    templates_dir: Path | None = None  # digest.*.j2 placed here override the shipped templates
    title: str = "Claim monitor digest"
    research_questions: bool = True  # ask the LLM judge for 2 questions per line (needs provider openai)
    # The address paths.reports is served at (https://example.org/reports/): the Atom feed's links and
    # ids start with it. Unset, they are the folder's file:// URI.
    public_url: str | None = None
    # The claim board's address: webhook posts link to it (else to the digest under public_url, or its file).
    board_url: str | None = None
    webhooks: list[WebhookSettings] = Field(default_factory=list)  # posted once per period after a digest


class EmailSettings(Section):
    host: str = "localhost"
    port: int = Field(default=587, ge=1, le=65535)
    security: Literal["starttls", "ssl", "none"] = "starttls"
    username: str | None = None
    password: SecretStr | None = None
    sender: str = "claim-monitor@localhost"
    recipients: list[str] = Field(default_factory=list)
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    max_retries: int = Field(default=3, ge=0, le=20)
    retry_wait_seconds: float = Field(default=5.0, ge=0, le=600)  # first back-off; doubles per attempt
    ca_file: Path | None = None  # extra CA bundle for a server with a private certificate
    subject_prefix: str = "[claim-monitor]"


class ScheduleSettings(Section):
    # crontab syntax (5 fields, or 6 with seconds first); "off" disables the job.
    digest_cron: str = "0 7 * * mon"  # full run: fetch, judge, verdicts, digest, email
    fetch_cron: str = "0 6 * * *"  # fetch, relevance, judge, verdicts; no digest
    timezone: str | None = None  # IANA name; default: the machine's local zone
    source: str = "api"  # what the daemon's jobs fetch from: api | rss | sample | a snapshot file
    misfire_grace_seconds: int = Field(default=3600, ge=1, le=7 * 86400)
    on_lock_held: Literal["exit", "wait"] = "exit"
    lock_wait_seconds: int = Field(default=600, ge=0, le=86400)
    # SQLite run lock: a holder whose heartbeat is older than this is presumed dead and taken over
    # (at once when it ran on this host and its pid is gone). PostgreSQL frees the lock itself.
    # At least twice lock_heartbeat_seconds, so one late heartbeat never makes a live run look dead.
    lock_stale_seconds: int = Field(default=300, ge=1, le=86400)
    lock_heartbeat_seconds: int = Field(default=15, ge=1, le=3600)

    @model_validator(mode="after")
    def _stale_after_heartbeats(self) -> ScheduleSettings:
        if self.lock_stale_seconds < 2 * self.lock_heartbeat_seconds:
            raise fault(
                "lock_stale_seconds",
                f"{self.lock_stale_seconds} is less than twice lock_heartbeat_seconds "
                f"({self.lock_heartbeat_seconds}): one late heartbeat would make a live run look dead",
            )
        return self

    @field_validator("digest_cron", "fetch_cron")
    @classmethod
    def _cron(cls, v: str) -> str:
        from monitor.crontab import cron_trigger

        cron_trigger(v, None)  # raises ValueError naming the problem
        return v

    @field_validator("timezone")
    @classmethod
    def _zone(cls, v: str | None) -> str | None:
        if v is not None:
            from zoneinfo import ZoneInfo

            try:
                ZoneInfo(v)
            except (KeyError, ValueError):
                raise ValueError(f"unknown time zone {v!r}") from None
        return v


class WebSettings(Section):
    """`monitor serve`: where it listens, and the curator token (MONITOR_WEB__TOKEN, environment only)."""

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    # Without it the app is read-only; never logged, never in a file. At least 20 characters, 10 of
    # them different: python -c 'import secrets; print(secrets.token_urlsafe(24))'.
    token: SecretStr | None = None
    # A page answers within this or says the database is unavailable (503); on PostgreSQL also each
    # statement's limit on the server and the longest wait for a pooled connection.
    request_timeout_seconds: float = Field(default=15.0, gt=0, le=600)
    # Addresses whose X-Forwarded-Proto and X-Forwarded-For are believed (a reverse proxy): an https
    # request through them gets Secure cookies, and sign-in attempts are counted per real client.
    trusted_proxies: list[str] = Field(default_factory=lambda: ["127.0.0.1", "::1"])


# The parsed config file while load_settings builds a Settings: a source below the environment, so that
# keyword arguments stay what they are everywhere else, the caller's last word.
_FILE_VALUES: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("file", default=None)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    paths: PathSettings = Field(default_factory=PathSettings)
    arxiv: ArxivSettings = Field(default_factory=ArxivSettings)
    relevance: RelevanceSettings = Field(default_factory=RelevanceSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    verdicts: VerdictSettings = Field(default_factory=VerdictSettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    email: EmailSettings = Field(default_factory=EmailSettings)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)
    web: WebSettings = Field(default_factory=WebSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Settings given in code win, then MONITOR_* variables, then the config file load_settings read
        # (which an environment variable overrides, as the README promises), then the defaults.
        file_settings = InitSettingsSource(settings_cls, init_kwargs=_FILE_VALUES.get() or {})
        return (init_settings, env_settings, file_settings)

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        """Old `[judge]` spellings of `[llm]` keys still load; a new key given too wins."""
        judge = data.get("judge") if isinstance(data, dict) else None
        if not isinstance(judge, dict) or not MOVED_TO_LLM & judge.keys():
            return data
        data, judge = dict(data), dict(judge)
        llm = dict(data.get("llm") or {})
        for key in MOVED_TO_LLM & judge.keys():
            llm.setdefault(key, judge.pop(key))
        data["judge"], data["llm"] = judge, llm
        return data

    @model_validator(mode="after")
    def _selects_something(self) -> Settings:
        """A relevance cut or floor at or above the highest score selects no pair, and the digest would
        read "none bears on a claim"; checked on the settings in force (an LLM judge changes the method)."""
        cfg = self.relevance_in_force()
        top = cfg.highest_score()
        for key in ("cut", "min_score"):
            value = getattr(cfg, key)
            if value is not None and value >= top:
                raise fault(
                    f"relevance.{key}",
                    f"{value:g} is at or above the highest score the {cfg.method} method gives ({top:g}), "
                    "so no pair would ever be selected",
                )
        return self

    def llm_configured(self) -> bool:
        """Whether an LLM server is configured: the one question every LLM use asks."""
        return self.llm.configured()

    def judge_provider(self) -> Literal["embedded", "openai"]:
        """The judge in force: `judge.provider`, or under "auto" openai exactly when an LLM is configured."""
        if self.judge.provider != "auto":
            return self.judge.provider
        return "openai" if self.llm_configured() else EMBEDDED

    def relevance_in_force(self) -> RelevanceSettings:
        """relevance as the judge in force resolves it (RelevanceSettings.resolved)."""
        return self.relevance.resolved(self.judge_provider())


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid TOML: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None


def _standard_env(data: dict[str, Any]) -> dict[str, Any]:
    """Fold the conventional OpenAI and SMTP variables in, below MONITOR_* ones and the file's keys."""
    for key, variable in (("api_key", "OPENAI_API_KEY"), ("base_url", "OPENAI_BASE_URL")):
        given = any(isinstance(data.get(s), dict) and key in data[s] for s in ("llm", "judge"))
        overridden = {f"MONITOR_LLM__{key.upper()}", f"MONITOR_JUDGE__{key.upper()}"} & set(os.environ)
        if (
            os.environ.get(variable)
            and not given
            and not overridden
            and isinstance(data.get("llm", {}), dict)
        ):
            data.setdefault("llm", {})[key] = os.environ[variable]
    if os.environ.get("MONITOR_SMTP_PASSWORD"):
        data.setdefault("email", {}).setdefault("password", os.environ["MONITOR_SMTP_PASSWORD"])
    _pair_key_with_its_url(data)
    return data


def _pair_key_with_its_url(data: dict[str, Any]) -> None:
    """Set llm.key_base_url, where nobody did, to the base URL given beside the key in the environment:
    OPENAI_BASE_URL beside OPENAI_API_KEY, MONITOR_LLM__BASE_URL beside MONITOR_LLM__API_KEY (or their
    old [judge] spellings). A key given alone (or in a file) stays the OpenAI API's (LLMSettings)."""
    env = {name.upper(): value for name, value in os.environ.items() if value}
    given = [s for s in ("llm", "judge") if isinstance(data.get(s), dict) and "key_base_url" in data[s]]
    named = {f"{ENV_PREFIX}{s}__KEY_BASE_URL" for s in ("LLM", "JUDGE")} & set(env)
    if given or named or not isinstance(data.get("llm", {}), dict):
        return
    pairs = [(f"{ENV_PREFIX}{s}__API_KEY", f"{ENV_PREFIX}{s}__BASE_URL") for s in ("LLM", "JUDGE")]
    for key, url in pairs:
        if key in env:  # the MONITOR_ spelling wins over OPENAI_API_KEY, as it does for the key itself
            if url in env:
                data.setdefault("llm", {})["key_base_url"] = env[url]
            return
    if "OPENAI_API_KEY" in env and "OPENAI_BASE_URL" in env and _key_from_openai_variable(data):
        data.setdefault("llm", {})["key_base_url"] = env["OPENAI_BASE_URL"]


def _key_from_openai_variable(data: dict[str, Any]) -> bool:
    """Whether the key in force is OPENAI_API_KEY's (folded in by _standard_env), not a file's."""
    llm = data.get("llm") if isinstance(data.get("llm"), dict) else {}
    given = os.environ.get("OPENAI_API_KEY")
    return bool(given) and llm.get("api_key") == given


def _moved_keys(data: dict[str, Any], path: Path | None) -> dict[str, tuple[str, str]]:
    """Each `[llm]` key given by its old `[judge]` spelling (in the file or the environment), with where
    it was given and its new name: for the notice after loading and for errors to name it as written."""
    judge = data.get("judge")
    given = MOVED_TO_LLM & judge.keys() if isinstance(judge, dict) else set()
    old = {key: (f"{path}: judge.{key}", f"llm.{key}") for key in given}
    for upper, name in sorted(_env_names().items()):
        section, _, key = upper[len(ENV_PREFIX) :].lower().partition("__")
        if section == "judge" and key in MOVED_TO_LLM:
            old[key] = (f"environment variable {name}", f"{ENV_PREFIX}LLM__{key.upper()}")
    return old


def config_path(explicit: str | Path | None = None) -> Path | None:
    """The config file in force: --config, else $MONITOR_CONFIG, else ./monitor.toml if present."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("MONITOR_CONFIG")
    if env:
        return Path(env)
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.exists() else None


def load_settings(explicit: str | Path | None = None, *, file: bool = True) -> Settings:
    """Load settings; every problem becomes one ConfigError line naming the file and key.

    `file=False`: defaults and the environment only, what a config that sets nothing (the one
    `monitor init` is about to write) will load as, checked before it is written."""
    path = config_path(explicit) if file else None
    data: dict[str, Any] = {}
    if path is not None:
        if not path.exists():
            raise ConfigError(f"{path}: config file not found")
        data = _read_toml(path)
        if "token" in (data.get("web") or {}):
            # A token in a file gets copied, committed and shared; the environment keeps it to one shell.
            raise ConfigError(
                f"{path}: [web] token: set MONITOR_WEB__TOKEN in the environment, not in a file"
            )
    old = _moved_keys(data, path)
    data = _standard_env(data)
    check_environment(_webhook_url_variables(data))
    loading = _FILE_VALUES.set(data)
    try:
        settings = Settings()
    except SettingsError as exc:
        # A list or table value that is not JSON; pydantic-settings names only the section.
        section = exc.args[0].split('"')[1] if exc.args and '"' in str(exc.args[0]) else ""
        names = [n for u, n in sorted(_env_names().items()) if u.startswith(f"{ENV_PREFIX}{section.upper()}")]
        raise ConfigError(
            f"environment variable {' or '.join(names) or ENV_PREFIX + '*'}: "
            "not valid JSON (lists and tables are given as JSON)"
        ) from None
    except ValidationError as exc:
        where = str(path) if path else "environment"
        problems = "; ".join(_problem(err, old) for err in exc.errors())
        raise ConfigError(f"{where}: invalid configuration: {problems}") from None
    finally:
        _FILE_VALUES.reset(loading)
    # After loading, so that a configuration error stays the one line the user reads.
    for where, new in old.values():
        log.warning("%s is now %s (the old name still loads)", where, new)
    if settings.llm.withheld_for and not _key_from_openai_variable(data):
        # A key the user set for this project (not a shell-wide OPENAI_API_KEY) that goes nowhere.
        log.warning(
            "llm.api_key is not sent to llm.base_url %s: it is for %s; set llm.key_base_url "
            "(MONITOR_LLM__KEY_BASE_URL) to the server it belongs to",
            settings.llm.base_url or OPENAI_API_URL,
            settings.llm.withheld_for,
        )
    return settings


def _env_names() -> dict[str, str]:
    """Upper-cased name -> name of every MONITOR_* variable (pydantic-settings ignores case)."""
    return {name.upper(): name for name in os.environ if name.upper().startswith(ENV_PREFIX)}


def _webhook_url_variables(data: dict[str, Any]) -> frozenset[str]:
    """The variables webhooks read their URLs from (`url_env`, in the file or MONITOR_REPORT__WEBHOOKS)."""
    hooks = list((data.get("report") or {}).get("webhooks") or [])
    with contextlib.suppress(TypeError, ValueError):  # not a JSON list: Settings says so
        hooks += list(json.loads(os.environ.get(f"{ENV_PREFIX}REPORT__WEBHOOKS") or "[]"))
    names = (h.get("url_env") for h in hooks if isinstance(h, dict))
    return frozenset(n.upper() for n in names if isinstance(n, str))


def check_environment(allowed: frozenset[str] = frozenset()) -> None:
    """Reject MONITOR_* variables that name no section or key, as unknown TOML keys are rejected.

    pydantic-settings alone silently ignores an unknown section (`MONITOR_JUGDE__MODEL`), so the
    user's setting would quietly not apply. `allowed`: other names in use (a webhook's `url_env`).
    """
    try:
        line_interval()  # read by the long steps, mid-run: a bad value fails here, before any work
    except ValueError as exc:
        raise ConfigError(f"environment variable {exc}") from None
    for upper, name in sorted(_env_names().items()):
        if upper in OTHER_VARIABLES or upper in allowed:
            continue
        section, nested, rest = upper[len(ENV_PREFIX) :].lower().partition("__")
        field = Settings.model_fields.get(section)
        if field is None:
            known = ", ".join(Settings.model_fields)
            raise ConfigError(f"environment variable {name}: unknown section {section!r} (sections: {known})")
        model = field.annotation
        key = rest.split("__")[0]
        if not nested:
            # A whole section at once is a JSON object, as pydantic-settings reads it.
            try:
                ok = isinstance(json.loads(os.environ[name]), dict)
            except json.JSONDecodeError:
                ok = False
            if not ok:
                raise ConfigError(
                    f"environment variable {name}: must be a JSON object of {section} settings; "
                    f"for one key use {ENV_PREFIX}{section.upper()}__KEY"
                )
        elif section == "judge" and key in MOVED_TO_LLM:
            continue  # an old spelling: Settings._moved moves it to [llm] with a notice
        elif isinstance(model, type) and issubclass(model, BaseModel) and key not in model.model_fields:
            raise ConfigError(f"environment variable {name}: unknown key {section}.{key}")


def _problem(err: Any, old: dict[str, tuple[str, str]]) -> str:
    """One validation problem, naming the environment variable when the value came from one, and an
    `[llm]` key by its old `[judge]` spelling (`old`) when the user wrote that."""
    loc = [str(p) for p in err["loc"]]
    if err.get("type") == "setting":  # a check across keys (`fault`) names the key at fault
        loc += err["ctx"]["key"].split(".")
    explained = _explain(err).removeprefix("Value error, ")
    if loc[:1] == ["llm"] and len(loc) >= 2 and loc[1] in old:
        loc[0] = "judge"
    text = f"{'.'.join(loc)}: {explained}"
    if len(loc) >= 2:
        variable = f"{ENV_PREFIX}{loc[0]}__{loc[1]}".upper()
        names = _env_names()
        if variable in names:
            return f"{text} (from environment variable {names[variable]})"
    return text


def _explain(err: Any) -> str:
    if err.get("type") == "extra_forbidden":
        return "unknown key"
    return str(err.get("msg", "invalid"))
