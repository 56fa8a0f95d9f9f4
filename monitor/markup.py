"""Markup in stored text as plain text: LaTeX in arXiv titles and abstracts, Markdown emphasis in claims.

arXiv metadata is written in LaTeX (`\\emph{sparse}`, `20\\%`, `$O(n^2)$`) and the research library's
claims in Markdown (`preference tuning *reduces* diversity`). Every place that shows such text to a
reader (the Markdown, HTML and text digests, `monitor show`, `monitor verdicts`) passes it through
`plain_text` first and then escapes it for its own format, so no format prints the other's syntax.
"""

from __future__ import annotations

import re
import unicodedata

# Commands whose argument is the text itself: \emph{x} -> x.
_TEXT_COMMANDS = (
    "emph", "textit", "textbf", "textsc", "texttt", "textrm", "textsf", "textup", "textnormal", "text",
    "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "mathcal", "mathbb", "mathfrak", "boldsymbol",
    "operatorname", "underline", "mbox", "url", "hbox",
)  # fmt: skip
_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ",
    "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ",
    "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "times": "×", "cdot": "·", "pm": "±", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "neq": "≠",
    "approx": "≈", "sim": "~", "simeq": "≃", "infty": "∞", "to": "→", "rightarrow": "→",
    "leftarrow": "←", "Rightarrow": "⇒", "in": "∈", "sum": "Σ", "prod": "∏", "partial": "∂",
    "nabla": "∇", "sqrt": "√", "ll": "≪", "gg": "≫", "propto": "∝", "circ": "∘", "ldots": "…",
    "dots": "…", "cdots": "⋯", "log": "log", "exp": "exp", "min": "min", "max": "max",
    "LaTeX": "LaTeX", "TeX": "TeX", "textasciitilde": "~", "ell": "ℓ", "mid": "|", "langle": "⟨",
    "rangle": "⟩", "textendash": "–", "textemdash": "—", "quad": " ", "qquad": " ",
    # sizing and spacing: nothing to a reader
    "left": "", "right": "", "big": "", "Big": "", "bigl": "", "bigr": "", "Bigl": "", "Bigr": "",
    "displaystyle": "", "limits": "", "nolimits": "", "noindent": "", "centering": "",
    "rm": "", "bf": "", "it": "", "sf": "", "tt": "", "em": "", "sc": "",  # old font switches: {\bf x}
}  # fmt: skip
_ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
            ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306", "H": "\u030b"}  # fmt: skip
# \% -> %; \, and \; are spaces; \( \) \[ \] delimit math. (\{ and \} are kept by _protect.)
_ESCAPED = {"%": "%", "&": "&", "_": "_", "#": "#", "$": "$", ",": " ", ";": " ",
            " ": " ", "!": "", "(": "", ")": "", "[": "", "]": ""}  # fmt: skip

# {\"o}, \"o, \'{e}, \c{c}: a letter with an accent (a letter-named accent needs a brace or a space).
_ACCENT = re.compile(
    r"\{\\([`'^\"~=.])\s*([A-Za-z])\}"
    r"|\\([`'^\"~=.]|[cvuH](?=[{ ]))\s*(?:\{([A-Za-z])\}|([A-Za-z]))"
)
_COMMAND_ARG = re.compile(r"\\(?:" + "|".join(_TEXT_COMMANDS) + r")\s*\{([^{}]*)\}")
# A command and what it does not show: \cite{key}, \ref{fig:1}.
_DROPPED = re.compile(r"\s*\\(?:cite[pt]?|ref|eqref|autoref|label)\s*\{[^{}]*\}")
# Any other command: a symbol, or nothing before its argument (\hat{x} -> x), or its name (\GPT -> GPT).
_COMMAND = re.compile(r"\\([A-Za-z]+)(\s*(?=\{))?( ?)")
_ESCAPE = re.compile(r"\\([%&_#$,; !()\[\]])")
_LINE_BREAK = re.compile(r"\\\\")
_UNICODE = re.compile(r"\\unicode\s*\{\s*x?([0-9A-Fa-f]{2,6})\s*\}")  # MathJax: \unicode{x2014}
_HREF = re.compile(r"\\href\s*\{[^{}]*\}\s*\{([^{}]*)\}")
# A tie (Optimization~(DGO)) after a letter or punctuation; "~2025" after a space means "about".
_TIE = re.compile(r"(?<=[A-Za-z.,;:)\]}])~(?=\S)")
# Inline math: an opening $ with no space after it, a closing $ with no space before it. A digit after
# the closing $ ends math only when the span looks like LaTeX ($\sim$200M); else it is money ($5-$10).
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$")
_MATH = re.compile(r"(?<![\\$])\$(?=\S)([^$]*?)(?<=[^\s\\])\$")
_TEX_SIGNS = re.compile(r"[\\^_{}<>]")
_BRACES = re.compile(r"(?<!\\)[{}]")
# Markdown emphasis around words: **x**, *x*, __x__, _x_ (not snake_case, not a lone "*").
_STRONG = re.compile(r"(?<![\w*])(\*\*|__)(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_EMPHASIS = re.compile(r"(?<![\w*])([*_])(?=[^\s*_])(.+?)(?<=[^\s*_])\1(?![\w*])")


def _accent(m: re.Match[str]) -> str:
    accent = m.group(1) or m.group(3)
    letter = m.group(2) or m.group(4) or m.group(5)
    return unicodedata.normalize("NFC", letter + _ACCENTS[accent])


def _command(m: re.Match[str]) -> str:
    name, before_argument, space = m.groups()
    shown = _SYMBOLS.get(name, "" if before_argument is not None else name)
    return shown + space if shown else shown  # {\bf x}: the space that ends a command goes with it


def _math(m: re.Match[str]) -> str:
    if m.string[m.end() : m.end() + 1].isdigit() and not _TEX_SIGNS.search(m.group(1)):
        return m.group(0)
    # A math span's commands end where it does ($\\rightarrow$RL), so they are read on their own.
    return _commands(m.group(1))


def _commands(text: str) -> str:
    """Accents, commands and their arguments, escapes and grouping braces as the text they stand for."""
    text = _ACCENT.sub(_accent, _UNICODE.sub(lambda m: chr(int(m.group(1), 16)), text))
    text = _DROPPED.sub("", _HREF.sub(r"\1", text))
    for _ in range(3):  # nested: \textbf{\emph{x}}
        text, n = _COMMAND_ARG.subn(r"\1", text)
        if not n:
            break
    text = _ESCAPE.sub(lambda m: _ESCAPED[m.group(1)], text)
    text = _COMMAND.sub(_command, text)
    return _BRACES.sub("", text)  # {BERT}: capitalisation kept by BibTeX, nothing to a reader


def _latex(text: str) -> str:
    if "\\" not in text and "$" not in text and "{" not in text:
        return text
    text = _protect(_TIE.sub(" ", _LINE_BREAK.sub(" ", text)))
    text = _MATH.sub(_math, _DISPLAY_MATH.sub(_math, text))
    return _unprotect(_commands(text))


# Escaped braces must survive the removal of grouping braces: hidden behind private-use characters.
_OPEN, _CLOSE = "\ue000", "\ue001"


def _protect(text: str) -> str:
    return text.replace("\\{", _OPEN).replace("\\}", _CLOSE)


def _unprotect(text: str) -> str:
    return text.replace(_OPEN, "{").replace(_CLOSE, "}")


def _markdown(text: str) -> str:
    if "*" not in text and "_" not in text:
        return text
    return _EMPHASIS.sub(r"\2", _STRONG.sub(r"\2", text))


def plain_text(text: object) -> str:
    """The text a reader should see: LaTeX commands, math delimiters and escapes, and Markdown emphasis
    replaced by their text (`\\emph{x}` -> x, `20\\%` -> 20%, `$O(n^2)$` -> O(n^2), `*x*` -> x)."""
    if text is None:
        return ""
    return _markdown(_latex(str(text)))
