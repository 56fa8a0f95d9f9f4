"""`--help` reads as a user expects: boolean options are flags, with no type or value shown."""

from __future__ import annotations

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
