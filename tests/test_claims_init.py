"""The config `monitor init` writes is generated from the Settings model; these check the generator."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from monitor.config import Settings
from monitor.scaffold import FALLBACK_NOTES, describe, render_config, source_comments, toml_value


def test_fallback_notes_name_real_settings() -> None:
    for dotted in FALLBACK_NOTES:
        section, key = dotted.split(".")
        assert key in Settings.model_fields[section].annotation.model_fields, dotted


def test_toml_values_round_trip() -> None:
    values = {
        "s": 'quote " back\\slash ünï',
        "n": 3,
        "f": 0.15,
        "b": False,
        "l": ["a", "b"],
        "d": {"x": ["y"]},
    }
    text = "\n".join(f"{k} = {toml_value(v)}" for k, v in values.items())
    assert tomllib.loads(text) == values
    assert toml_value(None) is None


def test_toml_values_escape_what_toml_forbids_in_strings() -> None:
    """DEL is legal JSON but not a legal TOML string character: the writer is TOML's own (tomlkit)."""
    values = {"s": "del\x7f and \x00 nul", "p": Path("data/arxiv\x7f"), "t": ("a",), "d": {}}
    text = "\n".join(f"{k} = {toml_value(v)}" for k, v in values.items())
    assert tomllib.loads(text) == {"s": "del\x7f and \x00 nul", "p": "data/arxiv\x7f", "t": ["a"], "d": {}}


class _Example(BaseModel):
    # explains alpha
    alpha: int = 1  # and more about alpha
    beta: Literal["x", "y"] = "x"
    gamma: str | None = Field(None, description="from the description")


def test_comments_choices_and_unset_defaults() -> None:
    notes = source_comments(_Example)
    assert notes["alpha"] == ["explains alpha", "and more about alpha"]

    class Root(BaseModel):
        example: _Example = Field(default_factory=_Example)

    (section,) = describe(Root)
    by_name = {s.name: s for s in section.settings}
    assert by_name["alpha"].value == "1" and "explains alpha" in by_name["alpha"].comments
    assert 'one of: "x", "y"' in by_name["beta"].comments
    assert by_name["gamma"].value is None and by_name["gamma"].comments[0] == "from the description"


def test_rendered_config_is_valid_toml_without_secrets(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("MONITOR_SMTP_PASSWORD", "hunter2")
    text = render_config()
    assert "sk-secret-value" not in text and "hunter2" not in text
    assert set(tomllib.loads(text)) == set(Settings.model_fields)
