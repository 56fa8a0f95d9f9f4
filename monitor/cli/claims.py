"""Claims commands: init, seeds import, lines, claims."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from monitor.cli.context import AppContext, console, ctx_of
from monitor.cli.doctor import PORT_HELP, print_chosen, print_detection

if TYPE_CHECKING:
    from monitor.config import Settings

app = typer.Typer()
seeds_app = typer.Typer(help="Import the research library's seed exports and your own claim files.")


@app.command("init")
def init_command(
    ctx: typer.Context,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing config file.")] = False,
    no_import: Annotated[
        bool, typer.Option("--no-import", help="Do not import the seeds directory even if it has files.")
    ] = False,
    no_detect: Annotated[
        bool, typer.Option("--no-detect", help="Do not look for a local LLM server to judge with.")
    ] = False,
    port: Annotated[list[int] | None, typer.Option("--port", help=PORT_HELP, show_default=False)] = None,
    example: Annotated[
        bool | None,
        typer.Option(
            "--example/--no-example",
            help="Copy the shipped seed exports (5 research-library exports, 35 claims) into the seeds "
            "folder. Default: asked at a terminal, not done elsewhere.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Start a project: a commented monitor.toml with every setting, seeds/ and reports/, the database.

    The config goes to --config (default ./monitor.toml); an existing one is kept unless --force.

    An OpenAI-compatible server on this machine's usual ports (Ollama 11434, llama.cpp 8080, LM Studio
    1234, vLLM 8000) becomes the judge: its settings are written set (skip with --no-detect).

    A seeds folder without claim files gets a commented example claim file (my_claims.yaml) and, with
    --example or a yes at the prompt, the shipped seed exports: `monitor run --source sample` then
    works here. Claim files in the seeds directory are imported (skip with --no-import).
    """
    from monitor.config import DEFAULT_CONFIG_FILE, load_settings
    from monitor.llm.servers import find_servers
    from monitor.scaffold import check_target, write_config
    from monitor.store.db import check_database_url

    app_ctx = ctx_of(ctx)
    target = Path(app_ctx.config or DEFAULT_CONFIG_FILE)
    check_target(target, force)  # before the scan: an existing config is kept unless --force
    # Nothing is written before the database and the environment's settings are known to be usable: the
    # new file sets no database, so --db or MONITOR_DATABASE__URL names it.
    check_database_url(app_ctx.db_url or load_settings(file=False).database.url)
    server = None
    if not no_detect:
        detection = find_servers(port)
        print_detection(console, detection)
        server = detection.chosen
    if server is None:
        write_config(target, force=force)
        console.print(f"wrote {target} (every setting, commented, with its default)", highlight=False)
    else:
        chosen = {"llm": server.llm_settings()}
        why = f"found by `monitor init`: {server.kind} at {server.base_url}"
        write_config(target, force=force, chosen=chosen, why=why)
        print_chosen(console, chosen, server.other_models)
        console.print(f"wrote {target} (every setting, commented; the judge's set)", highlight=False)
    fresh = AppContext(config=str(target), db_url=app_ctx.db_url)
    ctx.obj = fresh
    settings = fresh.settings
    _make_folders(settings)
    from monitor.store.db import redact

    store = fresh.store
    console.print(f"database ready: {redact(settings.database.url)}", highlight=False)
    from monitor.claims.importer import import_claims

    _first_claims(settings.paths.seeds, example)
    if _claim_files(settings.paths.seeds) and not no_import:
        from monitor.cli.show.claims import print_import

        print_import(console, import_claims(store, settings))
    else:
        console.print(f"next: `monitor seeds import` reads the claim files in {settings.paths.seeds}/")


def _claim_files(folder: Path) -> list[Path]:
    from monitor.claims.importer import CLAIM_SUFFIXES

    return [p for p in folder.iterdir() if p.suffix.lower() in CLAIM_SUFFIXES and not p.name.startswith(".")]


def _first_claims(seeds: Path, example: bool | None) -> None:
    """A seeds folder without claims gets the example claim file, and the shipped seed exports when
    asked (--example, or a yes at a terminal); elsewhere it says how to get them. A folder that has
    claim files is the user's: left as it is."""
    from monitor.scaffold import write_example_claims

    if _claim_files(seeds):
        if example:
            _copy_exports(seeds)
        return
    written = write_example_claims(seeds)
    if written is not None:
        console.print(f"wrote {written} (an example claim file, every field explained)", highlight=False)
    if example is None and sys.stdin.isatty():
        example = typer.confirm(
            "Copy the shipped seed exports (5 research-library exports, 35 claims on RL for LLMs) into "
            f"{seeds}/ to start from?",
            default=True,
        )
    if example:
        _copy_exports(seeds)
    elif example is None:
        console.print(
            f"the shipped seed exports (35 claims) are not copied: `monitor seeds example` copies them into "
            f"{seeds}/ (or `monitor init --example` in a new folder)",
            highlight=False,
        )


def _copy_exports(seeds: Path) -> None:
    from monitor.scaffold import copy_seed_exports

    copied, kept = copy_seed_exports(seeds)
    if copied:
        console.print(f"copied {len(copied)} shipped seed export(s) into {seeds}/", highlight=False)
    for path in kept:
        console.print(f"kept {path}: a file of that name is there", highlight=False)


def _make_folders(settings: Settings) -> None:
    for folder in (settings.paths.seeds, settings.paths.reports):
        if not folder.exists():
            folder.mkdir(parents=True)
            console.print(f"created {folder}/", highlight=False)


@seeds_app.command("example")
def seeds_example_command(
    ctx: typer.Context,
    no_import: Annotated[bool, typer.Option("--no-import", help="Copy only; do not import.")] = False,
) -> None:
    """Copy the shipped seed exports (the research library's 5 exports, 35 claims) into the seeds folder
    and import them; files already there are kept. `monitor run --source sample` then has claims."""
    from monitor.claims.importer import import_claims
    from monitor.cli.show.claims import print_import

    app_ctx = ctx_of(ctx)
    seeds = app_ctx.settings.paths.seeds
    if not seeds.exists():
        seeds.mkdir(parents=True)
        console.print(f"created {seeds}/", highlight=False)
    _copy_exports(seeds)
    if not no_import:
        print_import(console, import_claims(app_ctx.store, app_ctx.settings))


@seeds_app.command("import")
def seeds_import_command(
    ctx: typer.Context,
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Seed exports (.txt) or claim files (.yaml/.toml), or directories of them. "
            "Default: paths.seeds and paths.claims_file.",
            show_default=False,
        ),
    ] = None,
    prune: Annotated[
        bool,
        typer.Option("--prune", help="Also retire lines and claims of files no longer in the import set."),
    ] = False,
    allow_retire: Annotated[
        bool,
        typer.Option(
            "--allow-retire",
            help="Retire the lines, claims and anchors the files no longer hold (refused without it).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what changed as JSON.")] = False,
) -> None:
    """Import claims and print what changed. A bad file aborts the whole import; nothing is written.

    Importing again changes nothing. An edited claim text is a new claim; the old one is retired.

    An import that would retire anything is refused (exit 3, listing it) unless --allow-retire or
    --prune. Retired claims keep their assessments. Files left out of the set keep their claims, unless
    --prune.
    """
    import json

    from monitor.claims.importer import import_claims
    from monitor.cli.show.claims import print_import

    app_ctx = ctx_of(ctx)
    report = import_claims(
        app_ctx.store,
        app_ctx.settings,
        [Path(p) for p in paths] if paths else None,
        prune=prune,
        allow_retire=allow_retire,
    )
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print_import(console, report)


@app.command("lines")
def lines_command(
    ctx: typer.Context,
    notes: Annotated[
        bool, typer.Option("--notes", help="Also list single-note documents (like seed 001).")
    ] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Include retired lines.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Inquiring lines: question, how many notes, dated claims and anchors each cites, span, file."""
    import json

    from monitor.claims.listing import count_lines, list_lines, require_claims
    from monitor.cli.show.claims import print_lines

    store = ctx_of(ctx).existing_store
    require_claims(store)
    kinds = ("line", "user", "note") if notes else ("line", "user")
    views = list_lines(store, include_retired=show_all, kinds=kinds)
    if as_json:
        typer.echo(json.dumps([v.as_dict() for v in views], indent=2, ensure_ascii=False))
        return
    print_lines(console, views, hidden_notes=0 if notes else count_lines(store).get("note", 0))


@app.command("claims")
def claims_command(
    ctx: typer.Context,
    line: Annotated[
        str | None, typer.Option("--line", help="Only this line's claims (id or prefix).")
    ] = None,
    show_all: Annotated[bool, typer.Option("--all", help="Include retired claims.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON list (full texts, dates, lines).")
    ] = False,
    full: Annotated[bool, typer.Option("--full", help="Do not shorten long texts in the table.")] = False,
) -> None:
    """Claims under test: id, kind, date as written, the lines citing them, text."""
    import json

    from monitor.claims.listing import list_claims, require_claims
    from monitor.cli.show.claims import print_claims

    store = ctx_of(ctx).existing_store
    require_claims(store)
    views = list_claims(store, line=line, include_retired=show_all)
    if as_json:
        typer.echo(json.dumps([v.as_dict() for v in views], indent=2, ensure_ascii=False))
        return
    print_claims(console, views, full=full)
