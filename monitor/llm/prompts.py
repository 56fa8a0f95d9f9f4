"""Prompt templates: Jinja2 files in `prompts/`, versioned by a hash of their bytes.

Every prompt family (judge, screen, research questions, rewording) is versioned by the same formula,
`prompt_version`: any edit to a template gives a new version, which is part of the cache key of what
the prompt produced, so changed prompts redo what they should and nothing else. Paper and claim text
is untrusted: the `untrusted` filter defuses anything in it that looks like a delimiter tag or a chat
template's special token, and drops invisible characters.
"""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from monitor.errors import ConfigError


def _shipped_prompts_dir() -> Path:
    """The repository's prompts/ folder; a non-editable install carries a copy under share/."""
    in_repo = Path(__file__).resolve().parents[2] / "prompts"
    if in_repo.is_dir():
        return in_repo
    return Path(sys.prefix) / "share" / "claim-monitor" / "prompts"


DEFAULT_PROMPTS_DIR = _shipped_prompts_dir()

# Tags the user prompt uses as delimiters; in paper text they are escaped so the text cannot close them.
_DELIMITER = r"<\s*/?\s*(?:paper|title|abstract|claims?|first_reading)\b[^<>]*>?"
# Chat templates' special tokens, which a server that tokenizes the rendered template with special tokens
# on (llama.cpp) would read as turn boundaries: ChatML, Llama 3 and Phi `<|...|>`, Llama 2 and Mistral
# `[INST]`, `<<SYS>>`, `<s>`, `</s>`, Gemma's turns. Escaped like the delimiters, they reach the model
# as text.
_SPECIAL_TOKEN = (
    r"<\|[^<>|\s]{1,40}\|>"
    r"|</?(?:s|bos|eos|pad|unk|start_of_turn|end_of_turn)>"
    r"|\[/?(?:INST|SYS|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS)\]"
    r"|<</?SYS>>"
)
_DEFUSE = re.compile(f"{_DELIMITER}|{_SPECIAL_TOKEN}", re.IGNORECASE)


# Invisible characters a paper could slip into a tag (`</pa\u200bper>`) that a model reads past, or hide
# instructions in (Unicode tag characters U+E0000..U+E007F spell ASCII invisibly): format characters
# (category Cf: zero-width spaces and joiners, bidi controls, soft hyphens, BOM, tag characters), the
# combining grapheme joiner and variation selectors. They are dropped from untrusted text.
_INVISIBLE = frozenset({"\u034f", *map(chr, range(0xFE00, 0xFE10))})


def _invisible(char: str) -> bool:
    return char in _INVISIBLE or unicodedata.category(char) == "Cf"


def _plain(text: str) -> bool:
    """Whether `text` is its own view (`_folded`): every character visible and NFKC-stable on its own.

    Checked once per distinct character: an abstract with a few accents or math symbols then takes the
    fast path instead of a per-character walk (a prompt estimate renders thousands of abstracts).
    """
    return all(
        char.isascii() or (not _invisible(char) and unicodedata.normalize("NFKC", char) == char)
        for char in set(text)
    )


def _escape(tag: str) -> str:
    return tag.replace("<", "&lt;").replace(">", "&gt;").replace("[", "&#91;").replace("]", "&#93;")


def _folded(text: str) -> tuple[str, list[int]]:
    """`text` as a model reads it (NFKC per character, invisible characters dropped), and for each
    character of that view the index of the character of `text` it came from."""
    view: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if _invisible(char):
            continue
        plain = unicodedata.normalize("NFKC", char)  # full-width `＜／ｐａｐｅｒ＞` -> `</paper>`
        view.append(plain)
        origin.extend([index] * len(plain))
    return "".join(view), origin


def defuse(text: str) -> str:
    """Escape delimiter-like tags (`</paper>`, `<claim ...>`) and chat-template special tokens
    (`<|im_end|>`, `[INST]`, `</s>`) inside untrusted text, and drop invisible characters.

    Tags and tokens are looked for in the normalised view of the text, so look-alike forms
    (`＜/paper＞`, `<\u200b/paper>`, `<｜im_end｜>`) are caught too. Only a match's own span is rewritten,
    as its plain escaped form; the rest of the text reaches the model as it was, less invisible characters.
    """
    if text.isascii() or _plain(text):  # nothing to normalise or drop: the common case, kept fast
        return _DEFUSE.sub(lambda m: _escape(m.group(0)), text)
    view, origin = _folded(text)
    out: list[str] = []
    done = 0  # text[:done] is already in `out`
    for match in _DEFUSE.finditer(view):
        start = max(origin[match.start()], done)  # one character may expand to several (NFKC)
        end = origin[match.end() - 1] + 1
        out += [text[done:start], _escape(match.group(0))]
        done = end
    out.append(text[done:])
    return "".join(char for char in "".join(out) if not _invisible(char))


def prompt_version(directory: Path, names: tuple[str, ...]) -> str:
    """First 12 hex digits of sha256 over the templates' names and bytes, in a fixed order."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0")
        digest.update((directory / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def template_environment(directory: Path, names: tuple[str, ...], what: str) -> jinja2.Environment:
    """A Jinja2 environment over `directory` with every template in `names` present and compiling.

    `what` names the templates in errors ("judge", "relevance screen").
    """
    missing = [name for name in names if not (directory / name).is_file()]
    if missing:
        raise ConfigError(f"{directory}: missing {what} prompt template(s): {', '.join(missing)}")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # the output is a chat message, not HTML; untrusted text goes through `untrusted`
        keep_trailing_newline=False,
    )
    env.filters["untrusted"] = defuse
    try:
        for name in names:
            env.get_template(name)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(
            f"{directory / (exc.name or '?')}:{exc.lineno}: template error: {exc.message}"
        ) from None
    return env


def untrusted_filter(tags: tuple[str, ...]) -> Callable[[object], str]:
    """An `untrusted` filter for a prompt with delimiter tags of its own beyond the judge's (`tags`):
    whitespace collapsed, the judge's tags and these defused."""
    own = re.compile(r"<\s*/?\s*(?:" + "|".join(tags) + r")\b[^<>]*>?", re.IGNORECASE)

    def escape(text: object) -> str:
        defused = defuse(" ".join(str(text or "").split()))
        return own.sub(lambda m: _escape(m.group(0)), defused)

    return escape


@dataclass(frozen=True)
class Templates:
    """One prompt family's loaded templates and their version."""

    directory: Path
    version: str
    env: jinja2.Environment

    def render(self, name: str, **values: Any) -> str:
        return self.env.get_template(name).render(**values).strip()


def load_templates(
    directory: Path | None,
    names: tuple[str, ...],
    what: str,
    prefix: str = "",
    fallback: bool = False,
    untrusted: Callable[[Any], str] = defuse,
) -> Templates:
    """Load `names` from `directory` (default: the shipped prompts/), versioned `prefix + prompt_version`.

    With `fallback`, a folder that lacks any of them (a user's prompts from before that family existed)
    gives way to the shipped one; without, it is a ConfigError naming `what`.
    """
    folder = Path(directory) if directory else DEFAULT_PROMPTS_DIR
    if fallback and not all((folder / name).is_file() for name in names):
        folder = DEFAULT_PROMPTS_DIR
    env = template_environment(folder, names, what)
    env.filters["untrusted"] = untrusted
    return Templates(folder, prefix + prompt_version(folder, names), env)
