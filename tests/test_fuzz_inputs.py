"""A property-based pass over every setting and every input format (issue 33, "Also").

The property is the one the fault matrix asks of every case: any value either loads, and then holds
nothing a later step chokes on (no NaN, no infinity, no number out of its declared range, no control
character in a setting), or it is refused with one clear error that names where: the file (and line,
where the format keeps lines) and the key or field. Never another exception, which the CLI would show
as a traceback.

The settings cases are driven by the settings models themselves (every key of every section, and of
every section nested in a list, such as `[[report.webhooks]]`), so a setting added later is covered
without touching this file. The runs are bounded (a few examples per key, a deadline per example) so
the whole file takes seconds.
"""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomlkit
import yaml
from annotated_types import Ge, Gt, Le, Lt
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr

from monitor.claims.importer import read_document
from monitor.claims.model import MAX_CLAIM_CHARS
from monitor.config import Section, Settings, load_settings
from monitor.errors import ConfigError, InputError
from monitor.sources.base import EARLIEST_DATE, LATEST_DATE, MAX_VERSION
from monitor.sources.files import read_jsonl
from monitor.text import unprintable

REPO = Path(__file__).resolve().parent.parent
BOUNDED = settings(
    max_examples=12,
    deadline=2000,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,  # the same examples every run: a failure here is reproducible, never flaky
    database=None,  # nothing written beside the checkout
)


# --- what a value can be ---------------------------------------------------------------------------

NASTY_NUMBERS = [float("nan"), float("inf"), -float("inf"), 1e300, -1e300, 2**63 - 1, -(2**63), 0, -1, 0.5]
SCALARS = st.one_of(
    st.sampled_from(NASTY_NUMBERS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),  # TOML's integers are 64-bit
    st.booleans(),
    st.text(max_size=12),
    st.dates(),
)
TOML_VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(st.text(max_size=4), SCALARS, max_size=2),
)
# What an environment variable can hold: text without NUL (the OS refuses it), numbers as written.
ENV_TEXT = st.one_of(
    st.sampled_from(
        ["nan", "inf", "-inf", "1e300", "-1", "0", "9223372036854775808", "[]", "{}", '{"a": 1}']
    ),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12),
)


# --- every setting, from the models ----------------------------------------------------------------


def _section_in(annotation: Any) -> type[Section] | None:
    """The section class an annotation holds directly or as a list's items (`list[WebhookSettings]`)."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, Section):
            return candidate
    return None


def every_setting() -> Iterator[tuple[str, ...]]:
    """(section, key) for every key of every section; (section, list key, key) inside listed sections."""
    for section, field in Settings.model_fields.items():
        model = _section_in(field.annotation)
        assert model is not None, section
        for key, info in model.model_fields.items():
            inner = _section_in(info.annotation)
            if inner is None:
                yield (section, key)
            else:
                yield from ((section, key, leaf) for leaf in inner.model_fields)


SETTINGS = list(every_setting())
# A check across keys names the key at fault, which may be the other one of the pair.
ALSO_NAMED = {
    "schedule.lock_heartbeat_seconds": ("schedule.lock_stale_seconds",),
    "relevance.lexical_weight": ("relevance.cut", "relevance.min_score"),
    "report.webhooks.url_env": ("report.webhooks.0",),  # "give a webhook exactly one of url and url_env"
    "report.webhooks.url": ("report.webhooks.0",),
    "web.token": ("[web] token",),  # refused in a file whatever its value
}


def placed(where: tuple[str, ...], value: Any) -> dict[str, Any]:
    """The TOML document setting one key; a listed section gets the fields it cannot do without."""
    if len(where) == 2:
        return {where[0]: {where[1]: value}}
    section, listed, key = where
    item: dict[str, Any] = {"kind": "json", "url": "http://127.0.0.1:9/hook"}
    item[key] = value
    return {section: {listed: [item]}}


BOUND_HOLDS = {
    Ge: lambda b, v: v >= b.ge,
    Gt: lambda b, v: v > b.gt,
    Le: lambda b, v: v <= b.le,
    Lt: lambda b, v: v < b.lt,
}


def assert_within_bounds(model: BaseModel, where: str) -> None:
    for name, info in type(model).model_fields.items():
        item = getattr(model, name)
        if isinstance(item, int | float) and not isinstance(item, bool):
            for bound in info.metadata:
                holds = BOUND_HOLDS.get(type(bound))
                assert holds is None or holds(bound, item), f"{where}.{name} = {item!r} breaks {bound}"


def assert_sane(value: Any, where: str = "settings") -> None:
    """Nothing a later step chokes on: finite numbers within their declared bounds, one-line plain text."""
    if isinstance(value, BaseModel):
        assert_within_bounds(value, where)
        for name in type(value).model_fields:
            assert_sane(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, float):
        assert math.isfinite(value), f"{where} = {value!r}"
    elif isinstance(value, str | Path | SecretStr):
        text = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
        assert not unprintable(text) and "\n" not in text, f"{where} = {text!r}"
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            assert_sane(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, item in value.items():
            assert_sane(k, f"{where} key")
            assert_sane(item, f"{where}.{k}")


def assert_names(message: str, where: tuple[str, ...]) -> None:
    dotted = ".".join(where[:2]) + (f".0.{where[2]}" if len(where) == 3 else "")  # as pydantic writes it
    names = (dotted, *ALSO_NAMED.get(".".join(where), ()))
    assert any(name in message for name in names), f"{message!r} names none of {names}"
    assert "\n" not in message.strip(), message


def _clean_environment(mp: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.upper().startswith(("MONITOR_", "OPENAI_")):
            mp.delenv(name)  # the user's floor for arxiv.delay_seconds (3 s) applies, as it does for users


def test_every_section_and_key_is_covered() -> None:
    """The list is the models' own: every section, and the keys of sections nested in lists."""
    assert {w[0] for w in SETTINGS} == set(Settings.model_fields)
    assert ("report", "webhooks", "timeout_seconds") in SETTINGS and ("llm", "timeout_seconds") in SETTINGS
    assert len(SETTINGS) > 100


@pytest.mark.parametrize("where", SETTINGS, ids=lambda w: ".".join(w))
@settings(BOUNDED, max_examples=6)
@given(value=TOML_VALUES)
@example(value=float("nan"))
@example(value=float("inf"))
@example(value=1e300)
@example(value=2**63 - 1)
@example(value="x\x00\r\ny")
def test_any_value_of_any_setting_in_the_file_loads_sane_or_names_file_and_key(
    tmp_path: Path, where: tuple[str, ...], value: Any
) -> None:
    path = tmp_path / "monitor.toml"
    path.write_text(tomlkit.dumps(placed(where, value)), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        _clean_environment(mp)
        try:
            loaded = load_settings(path)
        except ConfigError as exc:
            assert str(exc).startswith(f"{path}: "), exc
            assert_names(str(exc), where)
        else:
            assert_sane(loaded)


ENV_SETTINGS = [w for w in SETTINGS if len(w) == 2]  # a listed section comes whole, as JSON


@pytest.mark.parametrize("where", ENV_SETTINGS, ids=lambda w: ".".join(w))
@settings(BOUNDED, max_examples=6)
@given(value=ENV_TEXT)
@example(value="nan")
@example(value="inf")
@example(value="1e300")
def test_any_value_of_any_setting_in_the_environment_loads_sane_or_names_the_variable(
    tmp_path: Path, where: tuple[str, ...], value: str
) -> None:
    variable = f"MONITOR_{where[0].upper()}__{where[1].upper()}"
    empty = tmp_path / "monitor.toml"
    empty.write_text("", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        _clean_environment(mp)
        mp.setenv(variable, value)
        try:
            loaded = load_settings(empty)
        except ConfigError as exc:
            assert variable in str(exc), exc
            assert "\n" not in str(exc).strip()
        else:
            assert_sane(loaded)


# --- claim files: YAML, TOML, seed exports ---------------------------------------------------------

TEXTS = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", " ", "~2025", "2025-13", "x" * (MAX_CLAIM_CHARS + 1), "\x1b[2J", "\x00", "\ud83d"]),
)
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXTS, st.dates()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXTS, inner, max_size=3)),
    max_leaves=8,
)
CLAIM = st.one_of(
    TEXTS,
    st.fixed_dictionaries({"text": TEXTS}, optional={"date": JSONISH, "title": JSONISH, "topics": JSONISH}),
    JSONISH,
)
CLAIM_DOCS = st.one_of(
    st.fixed_dictionaries(
        {"question": TEXTS, "claims": st.lists(CLAIM, max_size=3)},
        optional={"anchors": JSONISH, "topics": JSONISH, "framing": JSONISH},
    ),
    st.fixed_dictionaries({"lines": st.lists(st.fixed_dictionaries({"question": TEXTS, "claims": JSONISH}))}),
    JSONISH,
)


# Seven levels of nine aliases, on one line: 9**7 strings (4.8 million) if built.
BOMB = (
    "x: ["
    + ", ".join(
        ['&l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
        + [f"&l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 7)]
    )
    + "]"
)


def assert_read_or_refused(path: Path, *, needs_line: bool) -> None:
    """The file is read into claims fit to store and prompt, or refused naming the file (and line)."""
    try:
        doc = read_document(path)
    except InputError as exc:
        assert str(exc).startswith(f"{path}"), exc
        if needs_line:
            assert exc.line is not None or "nested too deeply" in str(exc) or "cannot read" in str(exc), exc
        return
    for line in doc.lines:
        for text in (line.question, *(c.text for c in line.claims)):
            assert 0 < len(text) <= MAX_CLAIM_CHARS and not unprintable(text.replace("\n", " "))


@settings(BOUNDED, max_examples=60)
@given(doc=CLAIM_DOCS)
@example(doc={"question": "Q?", "claims": ["x" * (MAX_CLAIM_CHARS + 1)]})
@example(doc={"question": "Q?" * MAX_CLAIM_CHARS, "claims": ["A claim."]})
def test_any_yaml_claim_file_is_read_or_refused_naming_file_and_line(tmp_path: Path, doc: Any) -> None:
    path = tmp_path / "claims.yaml"
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except (yaml.YAMLError, UnicodeEncodeError):
        return  # not representable as YAML (a lone surrogate)
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    assert_read_or_refused(path, needs_line=True)


@settings(BOUNDED, max_examples=60)
@given(line=st.integers(min_value=0, max_value=60), insert=st.text(max_size=40))
@example(line=20, insert="claims:")
@example(line=9, insert="a: &a [*a]")
@example(line=7, insert=BOMB)
def test_a_real_yaml_claim_file_with_any_line_inserted_is_read_or_refused(
    tmp_path: Path, line: int, insert: str
) -> None:
    rows = (REPO / "examples" / "my_claims.yaml").read_text(encoding="utf-8").splitlines()
    rows.insert(min(line, len(rows)), insert)
    path = tmp_path / "claims.yaml"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8", errors="surrogatepass")
    assert_read_or_refused(path, needs_line=True)


@settings(BOUNDED, max_examples=60)
@given(doc=CLAIM_DOCS.filter(lambda d: isinstance(d, dict)))
@example(doc={"question": "Q?", "claims": ["x" * (MAX_CLAIM_CHARS + 1)]})
def test_any_toml_claim_file_is_read_or_refused_naming_the_file(tmp_path: Path, doc: dict[str, Any]) -> None:
    path = tmp_path / "claims.toml"
    try:
        text = tomlkit.dumps(doc)  # TOML has no null: documents holding one are not TOML
    except (TypeError, ValueError):
        return
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    assert_read_or_refused(path, needs_line=False)  # tomllib keeps no positions (docs/claims.md)


@settings(BOUNDED, max_examples=60)
@given(
    seed=st.sampled_from(sorted(p.name for p in (REPO / "seeds").glob("*.txt"))),
    line=st.integers(min_value=0, max_value=120),
    replace=st.booleans(),
    text=st.one_of(st.text(max_size=60), st.just("• " + "word " * 500 + "(~2025).")),
)
def test_a_seed_export_with_any_line_changed_is_read_or_refused_naming_file_and_line(
    tmp_path: Path, seed: str, line: int, replace: bool, text: str
) -> None:
    rows = (REPO / "seeds" / seed).read_text(encoding="utf-8").splitlines()
    at = min(line, len(rows) - 1)
    rows[at : at + int(replace)] = [text.replace("\n", " ").replace("\r", " ")]
    path = tmp_path / seed
    path.write_text("\n".join(rows) + "\n", encoding="utf-8", errors="surrogatepass")
    assert_read_or_refused(path, needs_line=True)


# --- snapshot records (JSONL) ----------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),  # what JSON can carry
        st.text(max_size=20),
        st.sampled_from(
            ["2026-08-03", "9999-12-31", "0001-01-01", "2026-08-03T20:24:19Z", "2608.00001v99999"]
        ),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.text(max_size=5), inner, max_size=2)
    ),
    max_leaves=4,
)
FIELDS = [
    "arxiv_id", "version", "title", "abstract", "authors", "categories", "primary_category",
    "published", "updated", "comment", "journal_ref", "doi",
]  # fmt: skip
GOOD_ROW = {
    "arxiv_id": "2608.00001",
    "version": None,
    "title": "A paper",
    "abstract": "Its abstract.",
    "authors": ["A. Author"],
    "categories": ["cs.CL"],
    "primary_category": "cs.CL",
    "published": "2026-08-03",
    "updated": None,
}


def assert_records_or_refused(path: Path, line: int) -> None:
    try:
        records = read_jsonl(path)
    except InputError as exc:
        assert str(exc).startswith(f"{path}:{line}: "), exc
        return
    for rec in records:
        assert 1 <= rec.version <= MAX_VERSION
        for day in (rec.published, rec.updated.date() if rec.updated else None):
            assert day is None or EARLIEST_DATE <= day <= LATEST_DATE
        assert rec.title.strip() and not unprintable(rec.title.replace("\n", " "))


@settings(BOUNDED, max_examples=80)
@given(changes=st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, min_size=1, max_size=3))
@example(changes={"version": 2**40})
@example(changes={"version": 10**30})
@example(changes={"published": "9999-12-31"})
def test_any_snapshot_record_is_read_or_refused_naming_file_line_and_field(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    path = tmp_path / "s.jsonl"
    good = json.dumps(GOOD_ROW | {"arxiv_id": "2608.00002"})
    path.write_text(good + "\n" + json.dumps(GOOD_ROW | changes) + "\n", encoding="utf-8")
    assert_records_or_refused(path, 2)


@settings(BOUNDED, max_examples=60)
@given(raw=st.binary(max_size=80))
def test_any_bytes_as_a_snapshot_line_are_read_or_refused_naming_the_line(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(json.dumps(GOOD_ROW).encode() + b"\n" + raw.replace(b"\n", b" ") + b"\n")
    assert_records_or_refused(path, 2)
