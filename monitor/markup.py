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
    "LaTeX": "LaTeX", "TeX": "TeX", "textasciitilde": "~", "ell": "ℓ",
}  # fmt: skip
_ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
            ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306", "H": "\u030b"}  # fmt: skip
_ESCAPED = {"%": "%", "&": "&", "_": "_", "#": "#", "$": "$", "{": "{", "}": "}", ",": " ", ";": " ",
            " ": " ", "!": ""}  # fmt: skip

# {\"o}, \"o, \'{e}, \c{c}: a letter with an accent (a letter-named accent needs a brace or a space).
_ACCENT = re.compile(
    r"\{\\([`'^\"~=.])\s*([A-Za-z])\}"
    r"|\\([`'^\"~=.]|[cvuH](?=[{ ]))\s*(?:\{([A-Za-z])\}|([A-Za-z]))"
)
_COMMAND_ARG = re.compile(r"\\(?:" + "|".join(_TEXT_COMMANDS) + r")\s*\{([^{}]*)\}")
_COMMAND = re.compile(r"\\([A-Za-z]+)")
_ESCAPE = re.compile(r"\\([%&_#${},; !])")
_LINE_BREAK = re.compile(r"\\\\")
# Inline math as pandoc reads it: an opening $ with no space after it, a closing $ with no space before
# it and no digit after it, so "$5 and $10" stays money.
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$")
_MATH = re.compile(r"(?<![\\$])\$(?=\S)([^$]*?)(?<=[^\s\\])\$(?!\d)")
_BRACES = re.compile(r"(?<!\\)[{}]")
# Markdown emphasis around words: **x**, *x*, __x__, _x_ (not snake_case, not a lone "*").
_STRONG = re.compile(r"(?<![\w*])(\*\*|__)(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_EMPHASIS = re.compile(r"(?<![\w*])([*_])(?=[^\s*_])(.+?)(?<=[^\s*_])\1(?![\w*])")


def _accent(m: re.Match[str]) -> str:
    accent = m.group(1) or m.group(3)
    letter = m.group(2) or m.group(4) or m.group(5)
    return unicodedata.normalize("NFC", letter + _ACCENTS[accent])


def _command(m: re.Match[str]) -> str:
    name = m.group(1)
    return _SYMBOLS.get(name, name)


def _math(m: re.Match[str]) -> str:
    # Inside math, braces only group (10^{-3}) and spaces are the author's layout.
    return _BRACES.sub("", m.group(1))


def _latex(text: str) -> str:
    if "\\" not in text and "$" not in text and "{" not in text:
        return text
    text = _MATH.sub(_math, _DISPLAY_MATH.sub(_math, text))
    text = _LINE_BREAK.sub(" ", text)
    text = _ACCENT.sub(_accent, text)
    for _ in range(3):  # nested: \textbf{\emph{x}}
        text, n = _COMMAND_ARG.subn(r"\1", text)
        if not n:
            break
    text = _ESCAPE.sub(lambda m: _ESCAPED[m.group(1)], _protect(text))
    text = _COMMAND.sub(_command, text)
    text = _BRACES.sub("", text)  # {BERT}: capitalisation kept by BibTeX, nothing to a reader
    return _unprotect(text)


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
