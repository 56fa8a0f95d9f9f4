"""`monitor doctor`: the installation's health, and a local LLM server's judge settings written on request."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from monitor.cli.context import console, ctx_of

if TYPE_CHECKING:
    from monitor.llm.servers import Detection
    from monitor.schedule.doctor import JudgeCheck

app = typer.Typer()

PORT_HELP = "Look for an OpenAI-compatible server on this local port instead of the usual ones (repeatable)."


def print_detection(out: Console, detection: Detection) -> None:
    """The servers a scan found, each with its models, the one to judge with first."""
    ports = ", ".join(str(p) for p in detection.ports)
    if not detection.servers and not detection.unanswered:
        out.print(f"local LLM servers: none answering on 127.0.0.1/localhost ports {ports}", highlight=False)
        return
    for server in detection.servers:
        models = ", ".join(escape(m) for m in server.models) or "no models"
        slots = f"; {server.slots} slot(s)" if server.slots else ""
        out.print(f"local LLM server: {server.kind} at {server.base_url}: {models}{slots}", highlight=False)
    for address in detection.unanswered:
        out.print(
            f"local LLM server at {address}: no complete answer within {detection.seconds:g} s; not used",
            highlight=False,
        )


def print_chosen(out: Console, chosen: dict[str, dict[str, Any]], others: list[str]) -> None:
    pairs = [(f"{section}.{key}", value) for section, kv in chosen.items() for key, value in kv.items()]
    shown = ", ".join(f"{name} = {value!r}" for name, value in pairs)
    out.print(f"judge settings for it: {escape(shown)}", highlight=False, soft_wrap=True)
    if others:
        listed = escape(", ".join(others))
        out.print(f"other models it serves: {listed} (set llm.model to use one)", highlight=False)


def _server_state(judge: JudgeCheck) -> str | None:
    """What the configured server said, for an openai judge with a base URL."""
    if not judge.base_url:
        return None
    if judge.listed is None:
        return f"[red]the server at {escape(judge.base_url)} does not answer[/]"
    if judge.model not in judge.listed:
        return f"[red]it does not serve {escape(judge.model)}[/]; it lists: {escape(', '.join(judge.listed))}"
    return "the server answers and serves the model"


def _print_judge(judge: JudgeCheck) -> None:
    from monitor.judge_names import triage_only_judge

    if triage_only_judge(judge.provider):
        console.print("judge: the embedded model (offline; it misses most papers that bear on a claim)")
    else:
        where = judge.base_url or "the OpenAI API"
        console.print(f"judge: openai, model {escape(judge.model)} at {escape(where)}", highlight=False)
        if state := _server_state(judge):
            console.print(f"  {state}", highlight=False)
    if judge.key_withheld_for:
        console.print(
            f"API key: set for {escape(judge.key_withheld_for)} only, so not sent to "
            f"{escape(judge.base_url or 'the OpenAI API')} (llm.key_base_url names the server it is for)",
            highlight=False,
        )
    else:
        console.print(f"API key: {'set' if judge.api_key_set else 'not set'}")


@app.command("doctor")
def doctor_command(
    ctx: typer.Context,
    write: Annotated[
        bool, typer.Option("--write", help="Write the proposed judge settings into the config, unasked.")
    ] = False,
    port: Annotated[list[int] | None, typer.Option("--port", help=PORT_HELP, show_default=False)] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the findings as JSON (asks nothing; writes with --write).")
    ] = False,
) -> None:
    """Check the installation and look for a local LLM server to judge with.

    Reports the config file, the database (claims imported, papers stored), the judge in force, whether
    an API key is set (never the key) and the OpenAI-compatible servers on this machine's usual ports.

    When a local OpenAI-compatible server is found (Ollama, llama.cpp, LM Studio, vLLM) and the judge in
    force is not an LLM that answers, it proposes that server's judge settings and, asked or with --write,
    writes them into monitor.toml, keeping its comments.
    """
    from monitor.config import DEFAULT_CONFIG_FILE, config_path
    from monitor.scaffold import update_config
    from monitor.schedule.doctor import check

    app_ctx = ctx_of(ctx)
    config_file = config_path(app_ctx.config)
    health = check(app_ctx.settings, config_file, port)
    target = config_file or Path(DEFAULT_CONFIG_FILE)
    found = health.server
    why = f"set by `monitor doctor`: {found.kind} at {found.base_url}" if found is not None else ""
    if as_json:
        typer.echo(json.dumps(dataclasses.asdict(health), indent=2, ensure_ascii=False, default=str))
        if write and health.proposal and health.server is not None:
            update_config(target, health.proposal, why)
        return
    console.print(f"config: {config_file or 'none (defaults and environment)'}", highlight=False)
    if health.database_problem:
        console.print(f"database: {escape(health.database)}: [red]{escape(health.database_problem)}[/]")
    else:
        console.print(
            f"database: {escape(health.database)}: reachable; {health.claims} active claim(s), "
            f"{health.papers} paper(s) stored",
            highlight=False,
        )
    _print_judge(health.judge)
    print_detection(console, health.detection)
    if not health.proposal or health.server is None:
        return
    print_chosen(console, health.proposal, health.server.other_models)
    if not write:
        if not sys.stdin.isatty():
            console.print(f"to write them into {target}: monitor doctor --write", highlight=False)
            return
        if not typer.confirm(f"write them into {target}?", default=False):
            return
    update_config(target, health.proposal, why)
    console.print(f"wrote the judge settings into {target}", highlight=False)
