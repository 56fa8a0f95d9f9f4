"""`monitor init`: a commented monitor.toml generated from the Settings model, and the directories.

The file lists every setting of every section with its default, its allowed values and the comments
written beside it in monitor/config.py, read from the source so the file can never drift from the
model: a setting added there appears here, with its comment, without touching this module.

Settings `monitor init` found values for (a local LLM server's judge settings) are written set, not
commented; `monitor doctor --write` sets them in an existing file with `update_config`, which keeps the
file's comments and layout (tomlkit).

A first project's claims: `write_example_claims` leaves a commented example claim file in the seeds
folder, and `copy_seed_exports` copies the research library's seed exports that ship in the package
(monitor/data/seeds/, the same files as the repository's seeds/), so `monitor run --source sample`
works in any folder.
"""

from __future__ import annotations

import inspect
import io
import json
import tokenize
import tomllib
import typing
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import tomlkit
from annotated_types import Ge, Gt, Le, Lt
from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import BaseModel, SecretStr

from monitor.config import Settings
from monitor.errors import ConfigError
from monitor.files import write_atomic

TEMPLATE = "monitor.toml.j2"

# For settings config.py leaves without a comment; tests check every key here still exists.
FALLBACK_NOTES = {
    "database.url": "sqlite:///path/to/monitor.db, or postgresql://user:password@host/dbname",
    "database.echo": "log every SQL statement (debugging)",
    "paths.seeds": "the seed exports `monitor seeds import` reads by default (.txt, .yaml, .toml)",
    "paths.reports": "where digests are written",
}


@dataclass
class SettingDoc:
    name: str
    value: str | None  # TOML text of the default; None when there is no default
    comments: list[str] = field(default_factory=list)
    chosen: str | None = None  # TOML text of a value written set (uncommented)


# section -> key -> value: settings written set rather than commented
Chosen = dict[str, dict[str, Any]]


@dataclass
class SectionDoc:
    name: str
    doc: list[str]
    settings: list[SettingDoc]


def toml_value(value: Any) -> str | None:
    """A default as TOML text, written by tomlkit; None when there is no default to show."""
    if value is None or isinstance(value, SecretStr):
        return None
    return tomlkit.item(_plain(value)).as_string()


def _plain(value: Any) -> Any:
    # What tomlkit writes: paths as POSIX strings, tuples as arrays, mappings as inline tables
    # (a setting's default sits on its own `key = value` line).
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        table.update({str(k): _plain(v) for k, v in value.items()})
        return table
    return value


@dataclass
class _CommentReader:
    """Walks a class's tokens, attaching each comment to the field it sits above or beside."""

    found: dict[str, list[str]] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)  # comment lines waiting for the next field
    current: str | None = None  # the field whose line is being read
    depth: int = 0  # bracket nesting: a name inside a call or list is no field
    line_start: bool = True

    def comment(self, tok: tokenize.TokenInfo) -> None:
        text = tok.string.lstrip("#").strip()
        if tok.line.strip().startswith("#"):
            self.pending.append(text)
        elif self.current is not None:
            self.found.setdefault(self.current, []).append(text)

    def name(self, tok: tokenize.TokenInfo) -> None:
        if tok.line.strip().startswith(("def ", "@", "class ", "model_config")):
            self.current, self.pending = None, []
        elif ":" in tok.line:
            self.current = tok.string
            self.found[self.current] = self.pending + self.found.get(self.current, [])
            self.pending = []

    def read(self, tok: tokenize.TokenInfo) -> None:
        if tok.type == tokenize.COMMENT:
            self.comment(tok)
        elif tok.type == tokenize.OP and tok.string in "([{":
            self.depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            self.depth -= 1
        elif tok.type == tokenize.NAME and self.line_start and self.depth == 0 and tok.start[1] == 4:
            self.name(tok)
        self.line_start = tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)
        if tok.type == tokenize.NL and not tok.line.strip():
            self.pending = []


def source_comments(cls: type) -> dict[str, list[str]]:
    """Comments beside each field in the class source: the lines just above it and the one after it."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    reader = _CommentReader()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        reader.read(tok)
    return reader.found


def _choices(annotation: Any) -> list[str]:
    """The allowed values of a Literal (or Optional Literal, or list of Literal) annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return [json.dumps(a) for a in typing.get_args(annotation)]
    for arg in typing.get_args(annotation):
        if found := _choices(arg):
            return found
    return []


def _range(info: Any) -> str | None:
    """A numeric setting's bounds as a comment line ("range: 0 < value <= 3600"); None if it has none."""
    lower = upper = ""
    for m in info.metadata:
        if isinstance(m, Ge | Gt):
            lower = f"{m.ge} <= " if isinstance(m, Ge) else f"{m.gt} < "
        elif isinstance(m, Le | Lt):
            upper = f" <= {m.le}" if isinstance(m, Le) else f" < {m.lt}"
    return f"range: {lower}value{upper}" if lower or upper else None


def describe(settings_cls: type[BaseModel] = Settings) -> list[SectionDoc]:
    sections = []
    for name, info in settings_cls.model_fields.items():
        cls = info.annotation
        if not (inspect.isclass(cls) and issubclass(cls, BaseModel)):
            continue
        notes = source_comments(cls)
        docs = []
        for key, f in cls.model_fields.items():
            comments = [f.description] if f.description else list(notes.get(key, []))
            if not comments and f"{name}.{key}" in FALLBACK_NOTES:
                comments = [FALLBACK_NOTES[f"{name}.{key}"]]
            if choices := _choices(f.annotation):
                comments.append("one of: " + ", ".join(choices))
            if bounds := _range(f):
                comments.append(bounds)
            comments.append(f"env: MONITOR_{name.upper()}__{key.upper()}")
            default = f.get_default(call_default_factory=True)
            docs.append(SettingDoc(key, toml_value(default), comments))
        doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")  # its own, not BaseModel's
        sections.append(SectionDoc(name, [ln for ln in doc.splitlines() if ln.strip()], docs))
    return sections


def render_config(
    settings_cls: type[BaseModel] = Settings, chosen: Chosen | None = None, why: str = ""
) -> str:
    """The commented config; the `chosen` settings written set, each with `why` above it."""
    sections = describe(settings_cls)
    for section in sections:
        for s in section.settings:
            if s.name in (chosen or {}).get(section.name, {}):
                s.chosen = toml_value(chosen[section.name][s.name])  # type: ignore[index]
                s.comments.append(f"{why} (default: {s.value or 'none'})")
    env = Environment(
        loader=PackageLoader("monitor", "templates"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # TOML, not HTML
    )
    return env.get_template(TEMPLATE).render(sections=sections).rstrip() + "\n"


def write_config(path: Path, force: bool = False, chosen: Chosen | None = None, why: str = "") -> None:
    """Write the commented config, the `chosen` settings set; an existing file is kept unless `force`."""
    check_target(path, force)
    _write(path, render_config(chosen=chosen, why=why))


def check_target(path: Path, force: bool = False) -> None:
    """The config can be written at `path`: its folder exists, and no file is there unless `force`."""
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists; use --force to overwrite it")
    if not path.parent.exists():
        raise ConfigError(f"{path.parent}: directory does not exist")


def _write(path: Path, text: str) -> None:
    try:
        write_atomic(path, text)  # never half a config file
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write config file: {exc.strerror}") from None


def update_config(path: Path, chosen: Chosen, why: str) -> None:
    """Set the `chosen` settings in an existing config file, keeping its comments and layout; a missing
    file is written whole, as `monitor init` writes it. The result must load (checked before writing)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    if not path.exists():
        write_config(path, chosen=chosen, why=why)
        return
    try:
        doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(f"{path}: cannot update: {exc}") from None
    for name, values in chosen.items():
        if name not in doc:
            doc.add(name, tomlkit.table())
        table = doc[name]
        new = [key for key in values if key not in table]
        for key, value in values.items():
            if key in table:
                table[key] = value  # in place, where the user had it
        if new:
            table.add(tomlkit.comment(why))  # type: ignore[union-attr]
            for key in new:
                table.add(key, values[key])  # type: ignore[union-attr]
            table.add(tomlkit.nl())  # type: ignore[union-attr]
    text = tomlkit.dumps(doc)
    try:
        Settings(**tomllib.loads(text))
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: not updated, the result would not load: {exc}") from None
    _write(path, text)


# --- a first project's claims: the example claim file and the shipped seed exports ----------------

EXAMPLE_CLAIMS = "my_claims.yaml"  # the name `monitor init` gives the example in the seeds folder


def _shipped(name: str) -> Traversable:
    """A file or folder under monitor/data/, read through the package: a wheel carries it there."""
    return resources.files("monitor") / "data" / name


def shipped_seed_exports() -> list[Traversable]:
    """The research library's seed exports that ship with the package (monitor/data/seeds/), by name."""
    return sorted((f for f in _shipped("seeds").iterdir() if f.name.endswith(".txt")), key=lambda f: f.name)


def write_example_claims(folder: Path) -> Path | None:
    """Leave the commented example claim file in `folder`; None when a file of that name is there."""
    target = folder / EXAMPLE_CLAIMS
    if target.exists():
        return None
    _copy(_shipped("example_claims.yaml"), target)
    return target


def copy_seed_exports(folder: Path) -> tuple[list[Path], list[Path]]:
    """Copy the shipped seed exports into `folder`: (copied, kept), never overwriting a file there."""
    copied: list[Path] = []
    kept: list[Path] = []
    for export in shipped_seed_exports():
        target = folder / export.name
        if target.exists():
            kept.append(target)
        else:
            _copy(export, target)
            copied.append(target)
    return copied, kept


def _copy(source: Traversable, target: Path) -> None:
    write_atomic(target, source.read_text(encoding="utf-8"))  # never half a claim file (FileWriteError)
