"""`--help` reads as a user expects: boolean options are flags, with no type or value shown."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from monitor.cli import app


def test_boolean_flags_read_as_flags_in_help() -> None:
    for command in (["judge"], ["report"], ["review", "list"], ["retest"]):
        out = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "120"}).output
        assert "--help" in out, out
        assert not re.search(r"<bool>|BOOLEAN", out), f"{command}: {out}"
    judge = CliRunner().invoke(app, ["judge", "--help"], env={"COLUMNS": "120"}).output
    assert re.search(r"--dry-run\s+Count the calls", judge), judge
