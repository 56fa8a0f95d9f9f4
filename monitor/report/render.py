"""Rendering digests with Jinja2: Markdown (the source of truth), HTML for mail, plain text for mail.

Templates come from settings.report.templates_dir first (same file names override) and then the
shipped `monitor/templates/`. Everything in a digest that came from a paper or a claim is untrusted
text: HTML templates autoescape it; Markdown templates pass it through `md` (inline), `md_cell` (inside
a table) or `md_quote` (a blockquote), which neutralise Markdown and HTML syntax.

Such text also carries markup of its own (LaTeX in arXiv titles and abstracts, Markdown emphasis in
claims): every format shows it as text through `monitor.markup.plain_text`, which the Markdown and
plain-text filters (`md`, `md_cell`, `md_quote`, `one_line`) apply first and HTML templates apply to
every `{{ ... }}` they print (the environment's `finalize`).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes
import markupsafe

from monitor.config import Settings
from monitor.errors import ConfigError
from monitor.judge_names import shown_judge
from monitor.markup import plain_text
from monitor.sources.base import arxiv_url

SHIPPED_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
TEMPLATE_FOR = {"md": "digest.md.j2", "html": "digest.html.j2", "txt": "digest.txt.j2"}

# ASCII punctuation CommonMark lets a backslash escape, minus those that are harmless mid-text
# ('.', ',', '-', ':', ';', '?', '!', '"', "'", '/', '%', '=', '@', '$', '+', '^', '(', ')').
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~&])")
# A leading "1." or "-" would start a list, a leading ">" a quote, "===" a heading underline.
_MD_LINE_START = re.compile(r"^(\s*)(\d+)([.)])|^(\s*)([-+=])")


def one_line(text: object) -> str:
    """The text's markup as plain text, all whitespace (newlines included) collapsed to single spaces."""
    return " ".join(plain_text(text).split())


def md(text: object) -> str:
    """Untrusted text made safe for inline Markdown: no markup, no HTML, no line breaks."""
    escaped = _MD_SPECIAL.sub(r"\\\1", one_line(text))
    return _MD_LINE_START.sub(lambda m: _escape_start(m), escaped)


def _escape_start(m: re.Match[str]) -> str:
    if m.group(2) is not None:
        return f"{m.group(1)}{m.group(2)}\\{m.group(3)}"
    return f"{m.group(4)}\\{m.group(5)}"


def md_cell(text: object) -> str:
    """Inline Markdown safe inside a pipe table cell (pipes are already escaped by `md`)."""
    return md(text) or " "


def md_quote(text: object) -> str:
    """A Markdown blockquote of untrusted text."""
    return "> " + (md(text) or "(no quote)")


@jinja2.pass_eval_context
def _finalize(eval_ctx: jinja2.nodes.EvalContext, value: object) -> object:
    """What an HTML template prints: untrusted text as plain text (then autoescaped). Markdown and text
    templates print their filters' output, already plain, so it is left alone there."""
    if eval_ctx.autoescape and isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return plain_text(value)
    return value


def fmt_date(day: dt.date | dt.datetime | None, missing: str = "—") -> str:
    if day is None:
        return missing
    return day.strftime("%Y-%m-%d %H:%M UTC") if isinstance(day, dt.datetime) else day.isoformat()


def environment(templates_dir: Path | None = None) -> jinja2.Environment:
    """The Jinja2 environment: user templates first, then the shipped ones; HTML autoescaped."""
    searchpath = [str(SHIPPED_TEMPLATES)]
    if templates_dir is not None:
        if not Path(templates_dir).is_dir():
            raise ConfigError(f"report.templates_dir {templates_dir}: not a directory")
        searchpath.insert(0, str(templates_dir))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(searchpath),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2", "html"), default=False),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize,
    )
    env.filters.update(
        md=md,
        md_cell=md_cell,
        md_quote=md_quote,
        one_line=one_line,
        arxiv_url=arxiv_url,
        date=fmt_date,
        judge=shown_judge,
    )
    env.globals["STATUS_COLOURS"] = {
        "OVERTURNED": "#b42318",
        "CONTESTED": "#9e1f63",
        "PERISHABLE": "#b54708",
        "DURABLE": "#027a48",
        "UNSETTLED": "#475467",
        "UNTESTED": "#667085",
    }
    return env


def render(digest: Any, fmt: str, settings: Settings) -> str:
    """The digest in one format: md, html or txt."""
    env = environment(settings.report.templates_dir)
    try:
        template = env.get_template(TEMPLATE_FOR[fmt])
        text = template.render(d=digest)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"{exc.filename or exc.name}:{exc.lineno}: template error: {exc.message}") from None
    except jinja2.UndefinedError as exc:
        raise ConfigError(f"{TEMPLATE_FOR[fmt]}: template uses something the digest lacks: {exc}") from None
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
