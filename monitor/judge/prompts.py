"""The judge's prompts: Jinja2 templates in `prompts/`, versioned by a hash of their bytes.

Any edit to a template gives a new `prompt_version`, which is part of every assessment's cache key, so
changed prompts re-judge what they should and nothing else. Paper text is untrusted: the `untrusted`
filter defuses anything in it that looks like one of the prompt's own delimiter tags.
"""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import jinja2

from monitor.errors import ConfigError
from monitor.judge.base import ClaimText, PaperText


def _shipped_prompts_dir() -> Path:
    """The repository's prompts/ folder; a non-editable install carries a copy under share/."""
    in_repo = Path(__file__).resolve().parents[2] / "prompts"
    if in_repo.is_dir():
        return in_repo
    return Path(sys.prefix) / "share" / "claim-monitor" / "prompts"


DEFAULT_PROMPTS_DIR = _shipped_prompts_dir()
TEMPLATE_NAMES = ("judge_system.j2", "judge_user.j2", "judge_correction.j2")

# Tags the user prompt uses as delimiters; in paper text they are escaped so the text cannot close them.
_DELIMITER_TAG = re.compile(r"<\s*/?\s*(?:paper|title|abstract|claims?)\b[^<>]*>?", re.IGNORECASE)


# Invisible characters a paper could slip into a tag (`</pa\u200bper>`) that a model reads past: format
# characters (zero-width spaces and joiners, bidi controls, soft hyphens, BOM), the combining grapheme
# joiner and variation selectors.
_INVISIBLE = frozenset({"\u034f", *map(chr, range(0xFE00, 0xFE10))})


def _escape(tag: str) -> str:
    return tag.replace("<", "&lt;").replace(">", "&gt;")


def _folded(text: str) -> tuple[str, list[int]]:
    """`text` as a model reads it (NFKC per character, invisible characters dropped), and for each
    character of that view the index of the character of `text` it came from."""
    view: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if char in _INVISIBLE or unicodedata.category(char) == "Cf":
            continue
        plain = unicodedata.normalize("NFKC", char)  # full-width `＜／ｐａｐｅｒ＞` -> `</paper>`
        view.append(plain)
        origin.extend([index] * len(plain))
    return "".join(view), origin


def defuse(text: str) -> str:
    """Escape delimiter-like tags (`</paper>`, `<claim ...>`) inside untrusted text.

    Tags are looked for in the normalised view of the text, so look-alike forms (`＜/paper＞`,
    `<\u200b/paper>`) are caught too. Only a tag's own span is rewritten, as its plain escaped form;
    the rest of the text reaches the model unchanged.
    """
    if text.isascii():  # nothing to normalise: the common case, kept fast
        return _DELIMITER_TAG.sub(lambda m: _escape(m.group(0)), text)
    view, origin = _folded(text)
    out: list[str] = []
    done = 0  # text[:done] is already in `out`
    for match in _DELIMITER_TAG.finditer(view):
        start = max(origin[match.start()], done)  # one character may expand to several (NFKC)
        end = origin[match.end() - 1] + 1
        out += [text[done:start], _escape(match.group(0))]
        done = end
    out.append(text[done:])
    return "".join(out)


def prompt_version(directory: Path, names: tuple[str, ...] = TEMPLATE_NAMES) -> str:
    """First 12 hex digits of sha256 over the templates' names and bytes, in a fixed order."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0")
        digest.update((directory / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class JudgePrompts:
    """The loaded judge templates and their version; renders the messages of one call."""

    directory: Path
    version: str
    env: jinja2.Environment

    def system(self) -> str:
        return self.env.get_template("judge_system.j2").render().strip()

    def user(self, paper: PaperText, claims: list[ClaimText]) -> str:
        return self.env.get_template("judge_user.j2").render(paper=paper, claims=claims).strip()

    def correction(self, problem: str, claim_ids: list[str]) -> str:
        template = self.env.get_template("judge_correction.j2")
        return template.render(problem=problem, claim_ids=claim_ids).strip()

    def messages(self, paper: PaperText, claims: list[ClaimText]) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system()},
            {"role": "user", "content": self.user(paper, claims)},
        ]


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


def load_prompts(directory: Path | None = None) -> JudgePrompts:
    """Load the judge templates from `directory` (default: the shipped prompts/)."""
    directory = Path(directory) if directory else DEFAULT_PROMPTS_DIR
    env = template_environment(directory, TEMPLATE_NAMES, "judge")
    return JudgePrompts(directory=directory, version=prompt_version(directory), env=env)
