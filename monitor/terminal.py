"""What the commands print, at any width: tables that fit or stack, key/value lines that never split,
and a warning once per cause.

Rich fits a table wider than the terminal by narrowing its columns below their longest word, which
cuts words, and past a point drops a column off the right edge. `print_table` never does either: a
table whose columns each fit their longest word is printed as a table, the spare width shared out
by need; one that cannot fit is printed as stacked records, one block a row, every column kept.

`print_pairs` prints `name: key value, key value` lines: at a terminal packed to its width without
splitting a pair, elsewhere (a pipe, a log) one plain line, so a script or a grep sees the whole line.

`WarningTally` is the command line's log handler for warnings: the same cause (the same message,
whatever paper or exception class it names) is printed once, with its count, `(x10)`, within a window
of seconds, so one unreachable server does not fill the screen with one line per failed call.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

WIDE = 10_000  # a width no table reaches: measured there, a column's maximum is its longest line
SHORT_FIELD = 28  # a stacked record puts a field this short (and on one line) beside its heading
INDENT = 2  # a stacked record's fields, and a packed line's continuation, sit this far in
NARROW = 20  # a field's text narrower than this beside its name goes under the name instead


READABLE = 30  # a column of prose narrower than this reads as a list of words: stack the table instead


@dataclass(frozen=True)
class _Need:
    """What a column's content needs: its longest word (no_wrap: longest line), its longest line, and
    the least it is given in a table (`READABLE`, or all it needs when that is less)."""

    least: int
    most: int

    @property
    def readable(self) -> int:
        return min(self.most, max(self.least, READABLE))


def _cells(table: Table, index: int) -> list[RenderableType]:
    column = table.columns[index]
    return [column.header, *column.cells] if table.show_header else list(column.cells)


def _need(console: Console, table: Table, index: int) -> _Need:
    column = table.columns[index]
    if column.width is not None:
        return _Need(column.width, column.width)
    options = console.options.update_width(WIDE)
    sizes = [Measurement.get(console, options, cell) for cell in _cells(table, index)]
    most = max((s.maximum for s in sizes), default=1)
    least = most if column.no_wrap else max((s.minimum for s in sizes), default=1)
    least = max(least, column.min_width or 0, 1)
    cap = column.max_width if column.max_width is not None else WIDE
    return _Need(least, max(least, min(most, cap)))


def fitted_widths(console: Console, table: Table, width: int | None = None) -> list[int] | None:
    """Each column's content width so that the table fits `width` (default: the console's), no column
    narrower than its longest word nor, for prose, than `READABLE`; None when that cannot be done."""
    width = console.width if width is None else width
    needs = [_need(console, table, i) for i in range(len(table.columns))]
    if not needs:
        return []
    # What the borders and padding take: measured by rich on a copy of the widths set to the minimums.
    saved = [(c.width, c.min_width, c.max_width) for c in table.columns]
    try:
        for column, need in zip(table.columns, needs, strict=True):
            column.width, column.min_width, column.max_width = need.least, None, None
        overhead = Measurement.get(console, console.options.update_width(WIDE), table).minimum
        overhead -= sum(n.least for n in needs)
    finally:
        for column, (w, lo, hi) in zip(table.columns, saved, strict=True):
            column.width, column.min_width, column.max_width = w, lo, hi
    spare = width - overhead - sum(n.readable for n in needs)
    if spare < 0:
        return None
    return _share(needs, spare)


def _share(needs: list[_Need], spare: int) -> list[int]:
    """Give the columns that want more than their readable width the spare width, in proportion to
    what each wants, never past its longest line."""
    widths = [n.readable for n in needs]
    wants = [n.most - n.readable for n in needs]
    total = sum(wants)
    if total <= spare:
        return [n.most for n in needs]
    given = [spare * w // total for w in wants]
    for i in sorted(range(len(needs)), key=lambda i: -wants[i])[: spare - sum(given)]:
        given[i] += 1  # the rounding's remainder, to the columns that want most
    return [w + g for w, g in zip(widths, given, strict=True)]


def print_table(console: Console, table: Table) -> None:
    """Print `table` whole: as a table when it fits the console's width without cutting a word, else
    as stacked records (`stacked`)."""
    widths = fitted_widths(console, table)
    if widths is None:  # its lines are made to fit: rich must not wrap them again
        console.print(stacked(console, table), soft_wrap=True, highlight=False)
        return
    for column, width in zip(table.columns, widths, strict=True):
        column.width, column.min_width, column.max_width = width, None, None
    console.print(table)


def _as_text(console: Console, cell: RenderableType) -> Text:
    if isinstance(cell, Text):
        return cell
    return console.render_str(cell, highlight=False) if isinstance(cell, str) else Text(str(cell))


def _packed(pieces: list[Text], width: int, separator: str = "  ") -> Text:
    """`pieces` joined on lines no wider than `width`, a line breaking only between pieces."""
    out = Text()
    used = 0
    for piece in pieces:
        size = piece.cell_len
        if used and used + len(separator) + size > width:
            out.append("\n" + " " * INDENT)
            used = INDENT
        elif used:
            out.append(separator)
            used += len(separator)
        out.append_text(piece)
        used += size
    return out


def _short(cells: list[Text]) -> bool:
    """A column every cell of which fits on one short line: its field goes beside the heading."""
    return all("\n" not in c.plain and c.cell_len <= SHORT_FIELD for c in cells)


def stacked(console: Console, table: Table) -> Text:
    """The table as records, one a row: the first cell as a heading with the short columns beside it
    (`name value`, packed to the width), then each longer column under it, named, wrapped at words.
    Every record puts the same columns in the same places; an empty cell is left out."""
    width = console.width
    names = [_as_text(console, c.header).plain for c in table.columns]
    cells = [[_as_text(console, cell) for cell in c.cells] for c in table.columns]
    beside = [i for i in range(1, len(cells)) if _short(cells[i])]
    under = [i for i in range(1, len(cells)) if i not in beside]
    label = max((len(names[i]) for i in under), default=0)
    out = Text()
    if table.title:
        out.append_text(_as_text(console, table.title))
        out.append("\n")
    for r, row in enumerate(table.rows):
        if r:
            out.append("\n\n")
        first = cells[0][r].copy()
        if first.plain.isdigit():  # a bare number says nothing without its name ("id 2")
            first = Text.assemble((f"{names[0]} ", "dim"), first)
        pieces = [first]
        pieces += [Text.assemble((f"{names[i]} ", "dim"), cells[i][r]) for i in beside if cells[i][r].plain]
        heading = _packed(pieces, width)
        if row.style:
            heading.stylize(row.style)
        out.append_text(heading)
        for i in under:
            if cells[i][r].plain:
                _field(console, out, names[i], cells[i][r], label, width)
    if table.caption:
        out.append("\n")
        out.append_text(_as_text(console, table.caption))
    return out


def _field(console: Console, out: Text, name: str, cell: Text, label: int, width: int) -> None:
    """Append one named field: beside its name, or, where that leaves under `NARROW` columns, under it."""
    room = width - INDENT - label - 1
    if room >= NARROW:
        first, rest = " " * INDENT + name.ljust(label) + " ", " " * (INDENT + label + 1)
    else:
        out.append("\n" + " " * INDENT)
        out.append(name, style="dim")
        first = rest = " " * (2 * INDENT)
        room = width - 2 * INDENT
    for k, line in enumerate(cell.wrap(console, max(room, 1), overflow="fold")):
        out.append("\n")
        out.append(first if k == 0 else rest, style="dim")
        out.append_text(line.copy())
        out.rstrip()


def print_pairs(console: Console, head: str, pairs: Iterable[str]) -> None:
    """`head: pair, pair, ...` where a pair (`new 4529`) is never split: at a terminal packed to its
    width with continuation lines indented, elsewhere one plain line (a script reads it whole)."""
    items = [p for p in pairs if p]
    line = f"{head}: " + (", ".join(items) or "nothing to do")
    if not console.is_terminal or not items:
        console.print(line, soft_wrap=True, highlight=False, markup=False)
        return
    pieces = [Text(f"{head}: " + items[0] + ("," if len(items) > 1 else ""))]
    pieces += [Text(p + ("," if i < len(items) - 1 else "")) for i, p in enumerate(items[1:], start=1)]
    console.print(_packed(pieces, console.width, separator=" "), soft_wrap=True, highlight=False)


# --- warnings, once per cause --------------------------------------------------------------------

_STAGE = re.compile(r"^(?:[a-z][a-z ]{0,20}: )")  # "judge: ", the stage a logged warning names
_PAPER = re.compile(r"^(?:arXiv:)?\d{4}\.\d{4,5}(?:v\d+)?: ")  # "2403.01197v1: ", the paper it happened on
_EXCEPTION = re.compile(r" \([A-Z]\w*(?:Error|Exception|Timeout)\)")  # " (APIConnectionError)"


def _parts(message: str) -> tuple[str, str]:
    """(stage prefix, the cause): the message without the paper it happened on and without the
    exception class that carried it."""
    message = message.strip()
    stage = m.group(0) if (m := _STAGE.match(message)) else ""
    rest = _PAPER.sub("", message[len(stage) :])
    return stage, _EXCEPTION.sub("", rest).strip()


def cause(message: str) -> str:
    """What makes two messages the same cause (`_parts`), whichever stage logged them."""
    return _parts(message)[1]


def counted(message: str, times: int) -> str:
    """A message that came `times` times: as it was when once, else its cause with the count."""
    if times <= 1:
        return message
    stage, key = _parts(message)
    return f"{stage}{key} (x{times})"


def tally(messages: Iterable[str]) -> list[str]:
    """Each cause once, in order of first appearance, with its count when it came more than once."""
    held: dict[str, list[str]] = {}
    for message in messages:
        held.setdefault(cause(message), []).append(message)
    return [counted(same[0], len(same)) for same in held.values()]


class WarningTally(logging.Handler):
    """A log handler that prints each cause of warning once per `window` seconds, with its count.

    Records are held, grouped by `cause`, and printed by `emit_line` when the window closes (a timer
    thread, so a long step still shows a warning within the window) or on `flush`. `flush(fold=...)`
    leaves out the cause of an error about to be printed and returns its count, so the error line
    carries the count instead of a warning line saying the same thing above it.
    """

    def __init__(self, emit_line: Callable[[str], None], window: float) -> None:
        super().__init__(level=logging.WARNING)
        self.emit_line, self.window = emit_line, window
        self.held: dict[str, list[str]] = {}
        self.guard = threading.Lock()
        self.timer: threading.Timer | None = None

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        with self.guard:
            self.held.setdefault(cause(message), []).append(message)
            if self.timer is None:
                self.timer = threading.Timer(self.window, self.flush)
                self.timer.daemon = True
                self.timer.start()

    def flush(self, fold: str | None = None) -> int:
        """Print what is held; `fold`: an error's message, whose held count is returned, not printed."""
        with self.guard:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            held, self.held = self.held, {}
        folded = len(held.pop(cause(fold), [])) if fold is not None else 0
        for same in held.values():
            self.emit_line(counted(same[0], len(same)))
        return folded

    def close(self) -> None:
        self.flush()
        super().close()
