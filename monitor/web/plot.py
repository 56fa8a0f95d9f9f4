"""The claim page's plot: evidence strength per side over time, with the verdict changes marked.

Drawn on the server as SVG (no script, no CDN). Every text in it is escaped by the template that
embeds the returned markup's data, never by string concatenation of paper text: the plot carries only
dates, numbers and status names.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

SIDES = ("SUPPORTS", "AGAINST", "OVERTURNS")
COLOURS = {"SUPPORTS": "#2e7d32", "AGAINST": "#ef6c00", "OVERTURNS": "#c62828"}
WIDTH, HEIGHT, PAD = 640, 220, 36
RIGHT = 96  # room for the threshold labels right of the plot


@dataclass
class Series:
    """Strength per side (rules.strengths over what moves the verdict) at each day the evidence changed."""

    days: list[dt.date] = field(default_factory=list)
    strength: dict[str, list[float]] = field(default_factory=lambda: {side: [] for side in SIDES})
    changes: list[tuple[dt.date, str]] = field(default_factory=list)  # (day, new status)
    move: float = 0.8
    overturn: float = 0.9


@dataclass(frozen=True)
class Point:
    x: float
    y: float


@dataclass
class Plot:
    """What the SVG template draws: polylines per side, markers, axis labels."""

    width: int
    height: int
    lines: dict[str, str]  # side -> "x,y x,y ..." points
    colours: dict[str, str]
    markers: list[tuple[float, str, str, str]]  # (x, day, status, text-anchor)
    thresholds: list[tuple[float, str]]  # (y, label)
    ticks: list[tuple[float, str]]  # (x, day)
    empty: bool
    left: float  # the plot area's x range
    right: float


def layout(series: Series) -> Plot:
    """Scale the series into the SVG's box: x by date, y from 0 to 1."""
    days = sorted(set(series.days) | {day for day, _ in series.changes})
    if not days:
        return Plot(WIDTH, HEIGHT, {}, COLOURS, [], [], [], True, PAD, WIDTH - RIGHT)
    first, last = days[0], days[-1]
    span = max((last - first).days, 1)

    def x(day: dt.date) -> float:
        return round(PAD + (WIDTH - PAD - RIGHT) * (day - first).days / span, 1)

    def y(value: float) -> float:
        return round(HEIGHT - PAD - (HEIGHT - 2 * PAD) * value, 1)

    lines = {}
    for side in SIDES:
        points: list[str] = []
        previous = 0.0
        for day, value in zip(series.days, series.strength[side], strict=True):
            points.append(f"{x(day)},{y(previous)}")  # a step: strength holds until the next paper
            points.append(f"{x(day)},{y(value)}")
            previous = value
        points.append(f"{x(last)},{y(previous)}")
        lines[side] = " ".join(points)
    middle = WIDTH / 2
    markers = [
        (x(day), day.isoformat(), status, "end" if x(day) > middle else "start")
        for day, status in series.changes
    ]
    thresholds = [
        (y(series.move), f"move {series.move:g}"),
        (y(series.overturn), f"overturn {series.overturn:g}"),
    ]
    ticks = (
        [(x(first), first.isoformat()), (x(last), last.isoformat())]
        if first != last
        else [(x(first), first.isoformat())]
    )
    return Plot(WIDTH, HEIGHT, lines, COLOURS, markers, thresholds, ticks, False, PAD, WIDTH - RIGHT)
