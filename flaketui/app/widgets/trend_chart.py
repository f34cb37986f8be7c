"""The trend chart: lines of text drawn by :func:`flaketui.output.trend.text_chart` (y ticks,
each run numbered, named and dated, changes marked), shown as plain text (no markup: run and
task names are made visible before they get here). It draws what a worker made; it computes nothing."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static


class TrendChart(Static):
    """An axis-labelled text chart of rates over recorded runs."""

    DEFAULT_CSS = """
    TrendChart { height: auto; max-height: 24; padding: 0 1; overflow-y: auto; }
    """

    def show(self, lines: Sequence[str]) -> None:
        """Draw ``lines`` (an empty sequence hides the chart)."""
        self.display = bool(lines)
        self.update(Text("\n".join(lines), no_wrap=True))
