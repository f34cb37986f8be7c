"""Text charts: pass@k / pass^k against k as sparklines, and a histogram of p̂.

The shape tells more than a single number: a flat pass^k curve means the
suite's tasks either always pass or always fail; a falling one means flaky tasks.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.text import Text
from textual.widgets import Static

from flaketui.app.widgets.themed import theme_colours, themed
from flaketui.output import formatting as fmt

if TYPE_CHECKING:
    from flaketui.stats.curves import KCurve  # the model it draws (the screen's worker computes it)

LEVELS = " ▁▂▃▄▅▆▇█"
"""Sparkline cells from 0 to 1, in eighths (index 0 is an empty cell)."""
SPARK_WIDTH = 16
"""Cells a sparkline aims for (each k gets 1 to 3 cells)."""


def level(value: float) -> str:
    """The sparkline cell for a value in [0, 1] (a dot for a missing value)."""
    if value is None or math.isnan(value):
        return "·"
    return LEVELS[max(1, min(8, round(value * 8)))]


def sparkline(values: np.ndarray, mark: int | None = None, style: str = "", cells: int = 1) -> Text:
    """``cells`` cells per value; the value at index ``mark`` (the current k) is yellow."""
    text = Text()
    for i, v in enumerate(values.tolist()):
        text.append(level(v) * cells, style="bold yellow" if i == mark else style)
    return text


def curve_block(title: str, curve: KCurve | None, k: int) -> list[Text]:
    """Lines: title, a pass@k and a pass^k sparkline with first and last values, the k axis."""
    lines = [Text(title, style="bold")]
    if curve is None or not curve.ks.size:
        lines.append(Text("no trials", style="dim"))
        return lines
    # One set of tasks at every k (stats.curves): those with the curve's last k trials; the
    # others are left out of every point and counted, so no point moves because a task left.
    cells = max(1, min(3, SPARK_WIDTH // len(curve.ks)))
    hits = np.flatnonzero(curve.ks == k)
    mark = int(hits[0]) if hits.size else None
    width = cells * len(curve.ks)
    for label, values, style in (("pass@k", curve.pass_at, "green"),
                                 ("pass^k", curve.pass_hat, "magenta")):
        line = Text(f"{label} {fmt.rate(values[0], 2)} ")
        line.append_text(sparkline(values, mark, style, cells))
        line.append(f" {fmt.rate(values[-1], 2)}")
        lines.append(line)
    first, last = "k=1", f"{int(curve.ks[-1])}"
    axis = first + " " * max(1, width - len(first) - len(last)) + last
    lines.append(Text(" " * 12 + axis, style="dim"))
    last_k = int(curve.ks[-1])
    if curve.left_out:
        lines.append(Text(f"over the {int(curve.tasks[0])} tasks with n ≥ {last_k}; {curve.left_out} left out",
                          style="dim"))
    return lines


def histogram_block(title: str, counts: np.ndarray, height: int = 3) -> list[Text]:
    """Lines: vertical bars of ``counts`` (bins over [0, 1]), ``height`` rows, counts below.

    Each count has two cells: counts of 100 or more are shown in units of 10, 100, …
    (said in the title) rather than running into each other.
    """
    top = int(counts.max()) if counts.size else 0
    unit = 1
    while round(top / unit) >= 100:
        unit *= 10
    lines = [Text(title + (f" (counts ×{unit:,})" if unit > 1 else ""), style="bold")]
    eighths = height * 8
    levels = [0 if top == 0 or c == 0 else max(1, round(c / top * eighths))
              for c in counts.tolist()]
    for row in range(height, 0, -1):
        floor = (row - 1) * 8
        lines.append(Text("".join(LEVELS[min(8, max(0, lv - floor))] * 2 + " " for lv in levels),
                          style="cyan"))
    lines.append(Text("".join(f"{short_count(c, unit):<3}" for c in counts.tolist()), style="dim"))
    lines.append(Text("0" + " " * (len(counts) * 3 - 3) + "1", style="dim"))
    return lines


def short_count(count: int, unit: int) -> str:
    """``count`` in ``unit``s, at most two characters (``<1`` for a few)."""
    shown = round(count / unit)
    return "<1" if count and not shown else str(shown)


def side_by_side(blocks: list[list[Text]], gap: int = 4) -> Text:
    """Blocks of lines next to each other, each padded to its widest line."""
    widths = [max((line.cell_len for line in block), default=0) for block in blocks]
    height = max((len(block) for block in blocks), default=0)
    out = Text()
    for y in range(height):
        if y:
            out.append("\n")
        for block, width in zip(blocks, widths, strict=True):
            line = block[y] if y < len(block) else Text("")
            out.append_text(line)
            out.append(" " * (width - line.cell_len + gap))
    return out


class Curves(Static):
    """Suite and task curves side by side with the p̂ histogram.

    Call :meth:`show_curves` with the suite's and the highlighted task's curves.
    """

    DEFAULT_CSS = """
    Curves { height: auto; padding: 0 1; border-top: solid $primary 30%; }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._blocks: list[list[Text]] = []
        """The charts last given, each as lines; as many as fit the width are shown."""
        self._lines: int | None = None
        """Lines of the charts shown (None: none yet): the same number again needs no new layout."""

    def show_curves(
        self,
        suite: KCurve | None,
        suite_title: str,
        task: KCurve | None,
        task_title: str,
        counts: np.ndarray,
        k: int,
    ) -> None:
        """Render the three charts (the current k is marked on the sparklines)."""
        self._blocks = [
            curve_block(suite_title, suite, k),
            curve_block(task_title, task, k),
            histogram_block(f"p̂ over {int(counts.sum())} tasks", counts),
        ]
        self._fit()

    def _fit(self) -> None:
        """Show the charts that fit side by side (a narrow terminal drops the last ones
        rather than wrapping every line)."""
        # Before its first layout (just shown) the widget has no width yet: the screen's
        # is used, so that the charts never wrap and squeeze the table meanwhile.
        width = self.content_size.width or max(1, self.app.size.width - 4)
        text = side_by_side(fitting(self._blocks, width))
        lines = len(text.plain.split("\n"))
        # A new task's charts have as many lines as the last: redrawn without laying out the
        # screen again (a layout is most of the time a key takes at 100k tasks).
        self.update(themed(text, theme_colours(self.app.theme_variables)), layout=lines != self._lines)
        self._lines = lines

    def on_resize(self) -> None:
        self._fit()


def fitting(blocks: list[list[Text]], width: int, gap: int = 4) -> list[list[Text]]:
    """The leading blocks that fit ``width`` as :func:`side_by_side` lays them out, each
    followed by ``gap`` spaces (always the first; all when the width is not known yet)."""
    if width <= 0:
        return blocks
    used = 0
    for n, block in enumerate(blocks):
        used += max((line.cell_len for line in block), default=0) + gap
        if used > width and n:
            return blocks[:n]
    return blocks
