"""`--help` reads as a user expects: boolean options are flags, with no type or value shown."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from typer.testing import CliRunner

from monitor.cli import app


def test_boolean_flags_read_as_flags_in_help() -> None:
    for command in (["judge"], ["report"], ["review", "list"], ["retest"]):
        out = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "120"}).output
        assert "--help" in out, out
        assert not re.search(r"<bool>|BOOLEAN", out), f"{command}: {out}"
    judge = CliRunner().invoke(app, ["judge", "--help"], env={"COLUMNS": "120"}).output
    assert re.search(r"--dry-run\s+Count the calls", judge), judge


def test_help_imports_neither_the_store_nor_the_models() -> None:
    """`monitor --help` parses arguments before anything heavy is imported: a command's store,
    settings and models load when it runs, so asking for help costs a fraction of a second."""
    heavy = ("sqlalchemy", "onnxruntime", "pydantic", "numpy", "tokenizers", "httpx")
    probe = (
        "import sys, contextlib, io\n"
        "from monitor.cli import main\n"
        "sys.argv = ['monitor', '--help']\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main()\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def _commands(command, path=()):
    """Every command of the tree, with its path (`("review", "list")`)."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_every_command_names_the_judge_with_one_option() -> None:
    """`judge` took `--provider` where every other command took `--judge`; the old name stays hidden."""
    import typer

    with_judge = {}
    for path, command in _commands(typer.main.get_command(app)):
        visible = {opt for p in command.params if not getattr(p, "hidden", False) for opt in p.opts}
        assert "--provider" not in visible, path
        if "--judge" in visible:
            with_judge[path] = command
    assert {("judge",), ("run",), ("retest",), ("replay",), ("eval",)} <= set(with_judge)
    bad = CliRunner().invoke(app, ["judge", "--judge", "chatgpt", "--dry-run"], env={"COLUMNS": "120"})
    assert bad.exit_code == 2 and "'chatgpt' is not one of" in bad.output


def test_the_old_provider_option_still_works_with_a_one_line_notice(tmp_path) -> None:
    from ops_helpers import cli, env

    url = f"sqlite:///{tmp_path / 'monitor.db'}"
    assert cli("--db", url, "init", "--no-detect", "--no-import", cwd=tmp_path).returncode == 0
    old = cli(
        "--db", url, "judge", "--dry-run", "--provider", "openai", "--json", environ=env(), cwd=tmp_path
    )
    new = cli("--db", url, "judge", "--dry-run", "--judge", "openai", "--json", environ=env(), cwd=tmp_path)
    assert old.returncode == new.returncode == 0, old.stderr + new.stderr
    assert old.stderr.count("--provider is now --judge") == 1 and "--provider" not in new.stderr
    assert json.loads(old.stdout)["judge"]["judge"] == json.loads(new.stdout)["judge"]["judge"] == "openai"
    clash = cli(
        "--db", url, "judge", "--dry-run", "--judge", "embedded", "--provider", "openai", cwd=tmp_path
    )
    assert clash.returncode == 2 and "disagree" in clash.stderr
