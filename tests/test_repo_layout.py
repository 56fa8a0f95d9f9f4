"""`reports/`: tracked with its README, while everything generated in it is git-ignored."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# What the report stage writes there (monitor/report/digest.py, feed.py; monitor/files.py temp files).
GENERATED = [
    "reports/digest-2026-W12.md",
    "reports/digest-2026-W12.html",
    "reports/digest-2026-03.md",
    "reports/digest-2026-03-01_2026-03-15.md",
    "reports/feed.xml",
    "reports/.digest-2026-W12.md.k3j9x2ab",
    "reports/.feed.xml.q8w7e6r5",
]

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs a git checkout"
)


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=60)


def test_reports_readme_is_tracked_and_names_what_lands_there() -> None:
    assert git("ls-files", "--error-unmatch", "reports/README.md").returncode == 0
    readme = (REPO / "reports" / "README.md").read_text(encoding="utf-8")
    for name in ("digest-2026-W12.md", "feed.xml", ".html", "paths.reports"):
        assert name in readme


def test_generated_reports_are_ignored_and_the_readme_is_not() -> None:
    for path in GENERATED:
        assert git("check-ignore", "-q", "--no-index", path).returncode == 0, f"{path} is not ignored"
    assert git("check-ignore", "-q", "--no-index", "reports/README.md").returncode == 1
