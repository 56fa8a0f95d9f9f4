"""`monitor doctor`: is this installation ready, and which judge will it use?

It reports the config file in force, whether the database can be opened (with the claims imported and
the papers stored), the judge the settings resolve to (and, for a server, whether it answers and lists
the model), whether an API key is set (never the key; and, when it is for another server than the
judge's, that it is not sent), and the OpenAI-compatible servers listening on this machine's usual
ports (the scan has one deadline: a server that trickles its answer is named, not waited for). When
the judge in force is the embedded one, or a configured server does not answer or lacks the model, and
a local server was found, it proposes the judge settings for that server (`FoundServer.llm_settings`),
which the command writes into monitor.toml when told to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitor.config import Settings
from monitor.errors import MonitorError
from monitor.judge_names import EMBEDDED
from monitor.llm.servers import Detection, FoundServer, find_servers, list_models
from monitor.store.claims import active_totals
from monitor.store.db import open_store, redact, require_existing
from monitor.store.papers import paper_count


@dataclass
class JudgeCheck:
    """The judge the settings resolve to."""

    provider: str  # local | openai
    model: str
    base_url: str | None
    api_key_set: bool
    listed: list[str] | None = None  # models the configured base_url lists; None: not asked or no answer
    key_withheld_for: str | None = None  # the server a key is for, when it is not sent to base_url

    @property
    def works(self) -> bool:
        """An LLM judge that can be asked: the OpenAI API with a key, or a server that lists the model."""
        if self.provider != "openai":
            return False
        if self.base_url is None:
            return self.api_key_set
        return self.listed is not None and self.model in self.listed


@dataclass
class Health:
    config_file: Path | None
    database: str  # the URL, password hidden
    database_problem: str | None
    claims: int | None
    papers: int | None
    judge: JudgeCheck
    detection: Detection
    proposal: dict[str, dict[str, Any]] = field(default_factory=dict)  # settings worth writing, by section
    server: FoundServer | None = None  # the server they are for


def _database(settings: Settings) -> tuple[str | None, int | None, int | None]:
    """(problem, active claims, papers): a database never created is a problem, not created here."""
    url = settings.database.url
    try:
        require_existing(url)
        store = open_store(url, echo=settings.database.echo)
    except MonitorError as exc:
        return str(exc), None, None
    try:
        with store.session() as s:
            return None, active_totals(s)["claims"], paper_count(s)
    finally:
        store.close()


def _judge(settings: Settings) -> JudgeCheck:
    cfg = settings.llm
    key = cfg.api_key.get_secret_value() if cfg.api_key else None
    check = JudgeCheck(settings.judge_provider(), cfg.model, cfg.base_url, bool(key), None, cfg.withheld_for)
    if check.provider == "openai" and cfg.base_url:
        check.listed = list_models(cfg.base_url, key)
    return check


def check(settings: Settings, config_file: Path | None, ports: list[int] | None = None) -> Health:
    """Everything `monitor doctor` reports; `ports` overrides the usual local-server ports."""
    problem, claims, papers = _database(settings)
    judge = _judge(settings)
    detection = find_servers(ports)
    health = Health(config_file, redact(settings.database.url), problem, claims, papers, judge, detection)
    server = detection.chosen
    if server is not None and not judge.works:
        health.server = server
        health.proposal = {"llm": server.llm_settings()}
        if settings.judge.provider == EMBEDDED:  # the user chose the embedded judge; writing says otherwise
            health.proposal["judge"] = {"provider": "openai"}
    return health
