"""Resource sparklines of the selected job: CPU, RSS and output rate over the last minutes.

:class:`TrendBar` is the one-line strip under the detail title that draws the sampler's
:class:`~.trends.Trend` with the unicode blocks ``▁▂▃▄▅▆▇█``: one widget rendering one
:class:`~rich.text.Text` (cheaper than three Textual ``Sparkline`` widgets and their labels, see
docs/internals.md). Its height is fixed, so an update repaints the strip and asks for no layout
pass.

Each column of a sparkline is the maximum of a span of samples (a spike stays visible): one
sample per column while they fit, and as the history grows, spans of N samples counted from the
first sample ever recorded, so the columns do not shift as samples arrive (only when the span
grows, a few times in the first minutes of a selection).
"""

from __future__ import annotations

import math

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from .jobs_table import fmt_bytes
from .trends import HISTORY, Trend

__all__ = ["BLOCKS", "TrendBar", "spark"]

BLOCKS = "▁▂▃▄▅▆▇█"


def spark(values: tuple[float, ...], first: int, width: int, top: float) -> tuple[str, list[bool]]:
    """`values` as at most `width` block characters (each the maximum of a span of samples,
    spans counted from sample number 0, `first` being the number of values[0]) scaled to `top`,
    and for each character whether its value is above zero."""
    if not values or width <= 0:
        return "", []
    span = max(1, math.ceil(len(values) / width))
    columns: dict[int, float] = {}
    for i, value in enumerate(values):
        key = (first + i) // span
        columns[key] = max(columns.get(key, 0.0), value)
    keys = sorted(columns)[-width:]
    top = top if top > 0 else 1.0
    chars, lit = [], []
    for key in keys:
        value = columns[key]
        chars.append(BLOCKS[min(len(BLOCKS) - 1, max(0, math.ceil(value / top * len(BLOCKS)) - 1))])
        lit.append(value > 0)
    return "".join(chars), lit


# name, style, width of its latest value
_METRICS = (("cpu", "green", 5), ("rss", "cyan", 6), ("out", "yellow", 7))
_TAIL = 16  # room kept for "last 2m (ended)"


class TrendBar(Widget):
    """``cpu   34% ▁▂▅█▃   rss   120M ▃▃▄▅   out  2.1K/s ▁▇▁▁   last 2m``: the selected job's
    last minutes, each field at a fixed place."""

    DEFAULT_CSS = """
    TrendBar { height: 1; background: $panel; padding: 0 1; }
    """

    trend: reactive[Trend | None] = reactive(None)

    def render(self) -> Text:
        trend = self.trend
        if trend is None:
            return Text("")
        if not trend.cpu:
            return Text("cpu · rss · output rate: sampling…" if trend.running else "not running: no live figures",
                        style="dim")
        values = {"cpu": trend.cpu, "rss": trend.rss, "out": trend.rate}
        latest = {"cpu": f"{trend.cpu[-1]:.0f}%", "rss": fmt_bytes(trend.rss[-1]),
                  "out": f"{fmt_bytes(int(trend.rate[-1]))}/s"}
        tops = {"cpu": max(100.0, *trend.cpu), "rss": float(max(trend.rss)), "out": max(trend.rate)}
        fixed = sum(len(name) + 1 + 1 + room + 3 for name, _style, room in _METRICS)
        width = max(4, min(HISTORY, (self.size.width - 2 - fixed - _TAIL) // 3))
        text = Text(no_wrap=True, overflow="crop")
        for name, style, room in _METRICS:
            chars, lit = spark(values[name], trend.first, width, tops[name])
            text.append(f"{name} ", style="dim")
            text.append(f"{latest[name]:>{room}} ", style="bold")
            for on, run in _runs(chars, lit):
                text.append(run, style=style if on else "dim")
            text.append(" " * (width - len(chars) + 3))
        text.append(f"last {_span(trend.seconds)}" + ("" if trend.running else " (ended)"), style="dim")
        return text


def _runs(chars: str, lit: list[bool]) -> list[tuple[bool, str]]:
    """The characters in runs of the same `lit` (one styled span each, not one per character)."""
    runs: list[tuple[bool, str]] = []
    start = 0
    for i in range(1, len(chars) + 1):
        if i == len(chars) or lit[i] != lit[start]:
            runs.append((lit[start], chars[start:i]))
            start = i
    return runs


def _span(seconds: float) -> str:
    """``40s``, ``2m``."""
    return f"{max(1, round(seconds))}s" if seconds < 90 else f"{seconds / 60:.0f}m"
