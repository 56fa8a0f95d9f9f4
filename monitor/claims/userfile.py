"""The user's own claims, in a small YAML or TOML file. See docs/claims.md for the format.

A file holds one question at the top level, or several under `lines`. Each claim is a string or a
mapping with `text` and optionally `date`, `title`, `topics`. Errors name the file, the line (YAML
always; TOML for syntax errors) and the field, e.g. `my_claims.yaml:12: lines[0].claims[1].date: ...`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from monitor.claims.dates import parse_date
from monitor.claims.model import ClaimDocument, ParsedAnchor, ParsedClaim, ParsedLine
from monitor.errors import InputError
from monitor.text import printable, unstorable

USER_SUFFIXES = (".yaml", ".yml", ".toml")
_ARXIV_ID = re.compile(
    r"^(?:arXiv:)?(?P<id>(?:\d{4}\.\d{4,5}|[a-z][a-z.\-]*(?:\.[A-Z]{2})?/\d{7}))(?:v\d+)?$"
)


def _as_text(value: Any) -> Any:
    # YAML reads 2025-05-01 as a date and 2025 as an int; TOML has dates too. Keep what was meant.
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date | int):
        return str(value.isoformat() if isinstance(value, dt.date) else value)
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class UserClaim(_Strict):
    text: str = Field(min_length=1)
    date: str | None = None
    title: str | None = None
    topics: list[str] = Field(default_factory=list)

    @field_validator("date", mode="before")
    @classmethod
    def _date_text(cls, v: Any) -> Any:
        return _as_text(v)

    @field_validator("date")
    @classmethod
    def _readable(cls, v: str | None) -> str | None:
        if v is not None:
            parse_date(v)  # DateError is a ValueError: pydantic reports it on this field
        return v


class UserAnchor(_Strict):
    arxiv: str
    date: str | None = None
    title: str | None = None

    @field_validator("arxiv", mode="before")
    @classmethod
    def _id(cls, v: Any) -> Any:
        m = _ARXIV_ID.match(str(v).strip()) if isinstance(v, str | float) else None
        if not m:
            raise ValueError(f"not an arXiv id: {v!r} (expected e.g. 2504.07912)")
        return m["id"]

    @field_validator("date", mode="before")
    @classmethod
    def _date_text(cls, v: Any) -> Any:
        v = _as_text(v)
        if v is not None:
            parse_date(str(v))
        return v


class UserLine(_Strict):
    question: str = Field(min_length=1)
    framing: str | None = None
    body: str | None = None
    topics: list[str] = Field(default_factory=list)
    claims: list[UserClaim] = Field(min_length=1)
    anchors: list[UserAnchor] = Field(default_factory=list)

    @field_validator("claims", mode="before")
    @classmethod
    def _bare_strings(cls, v: Any) -> Any:
        # A bare string is a claim without a date.
        return [{"text": item} if isinstance(item, str) else item for item in v] if isinstance(v, list) else v


class UserFile(_Strict):
    lines: list[UserLine] = Field(min_length=1)


class _DatesAsWritten(yaml.SafeLoader):
    """The safe loader, minus its timestamp type: `2025-02-30` stays a string, so our date parser can
    report it with file, line and field (PyYAML would raise a bare ValueError building the date)."""


_DatesAsWritten.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


# What aliases (`*name`, and `<<: *name` merges) may add to a file, in nodes (each scalar, list and
# mapping counts one). Sharing a topics list among a few hundred claims stays far below it; a 472-byte
# "billion laughs" file, whose nested aliases stand for 10^9 strings, crosses it at its first levels,
# before anything is built (it ran past 60 s and 1.6 GB when `monitor run` read it).
MAX_ALIAS_NODES = 10_000


class _Composer(_DatesAsWritten):
    """The loader, noting where each alias is used so the file's expansion is bounded before it is built."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases: list[tuple[yaml.Node | None, int]] = []  # (the node named, 1-based line) in order

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            self.aliases.append((self.anchors.get(event.anchor), event.start_mark.line + 1))
        return super().compose_node(parent, index)  # type: ignore[no-any-return]


def _unique_keys(path: Path, node: yaml.MappingNode) -> None:
    seen: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if isinstance(key, yaml.ScalarNode):
            line = key.start_mark.line + 1
            if (key.tag, key.value) in seen:
                first = seen[key.tag, key.value]
                raise InputError(
                    str(path),
                    line,
                    f"duplicate key {key.value!r} (first on line {first}): YAML would keep only the last one",
                )
            seen[key.tag, key.value] = line


def _check_nodes(path: Path, root: yaml.Node, composer: _Composer) -> None:
    """Refuse a repeated key (YAML would silently keep the last: a second `claims:` replaced the first)
    and aliases that would expand the file past MAX_ALIAS_NODES, or into itself, naming the line."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_nodes:  # reached again from inside itself: the alias is within its span
            inside = (ln for n, ln in composer.aliases if n is node and ln <= node.end_mark.line + 1)
            raise InputError(str(path), next(inside, None), "a YAML alias inside the node it names")
        open_nodes.add(id(node))
        total = 1
        if isinstance(node, yaml.MappingNode):
            _unique_keys(path, node)
            total += sum(size(key) + size(value) for key, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(item) for item in node.value)
        open_nodes.discard(id(node))
        sizes[id(node)] = total
        return total

    size(root)
    added = 0
    for node, line in composer.aliases:
        added += sizes.get(id(node), 1)
        if added > MAX_ALIAS_NODES:
            raise InputError(
                str(path),
                line,
                f"YAML aliases expand the file by more than {MAX_ALIAS_NODES:,} values (an alias bomb?); "
                "write the repeated parts out",
            )


def _load(path: Path, text: str) -> tuple[Any, yaml.Node | None]:
    if path.suffix == ".toml":
        try:
            return tomllib.loads(text), None
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"line (\d+)", str(exc))
            raise InputError(str(path), int(m[1]) if m else None, f"not valid TOML: {exc}") from None
    composer: _Composer | None = None
    try:
        composer = _Composer(text)
        root = composer.get_single_node()
        if root is None:
            return None, None
        _check_nodes(path, root, composer)  # before building anything from the nodes
        return composer.construct_document(root), root
    except RecursionError:
        raise InputError(str(path), None, "not valid YAML: nested too deeply") from None
    except yaml.reader.ReaderError as exc:
        # A control character written as such (not as an escape): the reader has no mark, only a position.
        line = text[: exc.position].count("\n") + 1
        raise InputError(
            str(path), line, f"not valid YAML: character #x{exc.character:04x} is not allowed"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(str(path), mark.line + 1 if mark else None, f"not valid YAML: {problem}") from None
    finally:
        if composer is not None:
            composer.dispose()


def _printable_tree(path: Path, root: yaml.Node | None, value: Any, loc: tuple[int | str, ...] = ()) -> Any:
    """`value` with every string made printable (monitor/text.py); a NUL or a lone surrogate, which
    an escape ("\\0", "\\ud800") can put in a string, is refused with the file line and field instead:
    neither can be stored (PostgreSQL refuses NUL, UTF-8 cannot encode a surrogate)."""
    if isinstance(value, str):
        problem = unstorable(value)
        if problem:
            where = _field_path(loc) or "file"
            raise InputError(str(path), _node_line(root, loc), f"{where}: contains {problem}")
        return printable(value)
    if isinstance(value, dict):
        return {k: _printable_tree(path, root, v, (*loc, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable_tree(path, root, v, (*loc, i)) for i, v in enumerate(value)]
    return value


def _node_line(node: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the YAML node at a pydantic error location (as deep as it exists)."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
        if node is None:
            break
        line = node.start_mark.line + 1
    return line


def _field_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for key in loc:
        if isinstance(key, int):
            out += f"[{key}]"
        else:
            out += ("." if out else "") + str(key)
    return out


def parse_user_file(path: Path) -> ClaimDocument:
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(path), raw[: exc.start].count(b"\n") + 1, "not UTF-8 text") from None
    if not text.strip():  # TOML reads an empty file as an empty table: say what is wrong instead
        raise InputError(str(path), 1, "empty file; expected 'question' and 'claims', or a 'lines' list")
    data, root = _load(path, text)
    data = _printable_tree(path, root, data)
    if not isinstance(data, dict):
        raise InputError(str(path), 1, "expected a mapping with 'question' and 'claims', or a 'lines' list")
    shaped = data if "lines" in data else {"lines": [data]}
    offset: tuple[int | str, ...] = () if "lines" in data else ("lines", 0)
    try:
        parsed = UserFile.model_validate(shaped)
    except ValidationError as exc:
        # a misspelt key explains the "missing" error it causes, so it goes first
        err = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
        loc = tuple(err["loc"])
        real = loc[len(offset) :] if loc[: len(offset)] == offset else loc
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise InputError(
            str(path), _node_line(root, real), f"{_field_path(real) or 'file'}: {msg}{more}"
        ) from None
    lines = []
    for i, spec in enumerate(parsed.lines):
        at = ("lines", i) if not offset else ()  # where this line sits in the real file
        lines.append(_line(spec, lambda *loc, at=at: _node_line(root, (*at, *loc))))
    return ClaimDocument(path, hashlib.sha256(raw).hexdigest(), "user", lines)


def _line(spec: UserLine, line_of: Callable[..., int | None]) -> ParsedLine:
    claims = []
    for j, c in enumerate(spec.claims):
        claims.append(
            ParsedClaim(
                text=c.text,
                kind="user",
                source_line=line_of("claims", j),
                title=c.title,
                date=parse_date(c.date) if c.date else None,
                topics=c.topics or list(spec.topics),
            )
        )
    anchors = [
        ParsedAnchor(a.arxiv, line_of("anchors", k), a.date, a.title) for k, a in enumerate(spec.anchors)
    ]
    return ParsedLine(
        question=spec.question,
        kind="user",
        source_line=line_of("question"),
        framing=spec.framing,
        body=spec.body,
        topics=list(spec.topics),
        claims=claims,
        anchors=anchors,
    )
