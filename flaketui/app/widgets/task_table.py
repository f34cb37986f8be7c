"""The task table: a virtual table that renders only the rows on screen.

Textual's DataTable takes about 2 s to fill with 10,000 rows and 1 s to refill
on every filter keystroke (measured in ``benchmarks/bench_table.py``), so this
widget draws rows with the Line API instead: sorting and filtering replace one
numpy array of row indexes, and only the visible lines are rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from flaketui.app.widgets.themed import theme_colours, themed
from flaketui.output.cells import middle_cut

GAP = 1
"""Blank cells between two columns."""


def _blank(row: int) -> Text:
    return Text("")


@dataclass(frozen=True)
class Column:
    """A column of the table, declared once by the screen that owns the table.

    Args:
        key: What the column shows (the sort key), e.g. ``flakiness``.
        label: Header text, e.g. ``pass^5``.
        width: Cells wide (at least the label's width).
        align: ``left`` or ``right`` (numbers).
        tooltip: One line that explains the column (shown in the command palette).
        render: One cell: data row -> Text (with its style).
        sort: The values to sort the rows by, one per data row (floats; NaN sort
            last); None: the column does not sort.
        descending: Whether the first sort by this column puts the largest first
            (numbers); text reads best A→Z (False).
    """

    key: str
    label: str
    width: int
    align: str = "right"
    tooltip: str = ""
    render: Callable[[int], Text] = _blank
    sort: Callable[[], np.ndarray] | None = None
    descending: bool = True
    cut: str = "end"
    """How a cell too long for the column is cut: ``end`` (``abc…``) or ``middle``
    (``hypothesis_…/mystery_func_7``, for names whose two ends both tell)."""


class TaskTable(ScrollView, can_focus=True):
    """A table of tasks with a fixed header, a cursor and sort arrows.

    The owner gives the columns (each renders its own cells) and the order
    of data rows to show (:meth:`show`); the table keeps its cursor on the same
    data row across re-orderings when it is still shown.
    """

    DEFAULT_CSS = """
    TaskTable {
        height: 1fr;
        background: $surface;
        scrollbar-gutter: stable;
        scrollbar-size-vertical: 1;
    }
    TaskTable > .task-table--header { text-style: bold; background: $panel; color: $text; }
    TaskTable > .task-table--sorted { text-style: bold underline; color: $accent; background: $panel; }
    TaskTable > .task-table--cursor { background: $block-cursor-blurred-background; }
    TaskTable:focus > .task-table--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    """

    COMPONENT_CLASSES = {
        "task-table--header",
        "task-table--sorted",
        "task-table--cursor",
    }

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    cursor_row: reactive[int] = reactive(0, always_update=True)
    """Position of the cursor in the shown order (not a data row index)."""
    sort_key: reactive[str | None] = reactive(None)
    """The column whose header shows the sort arrow (data-bound to the owner's ``sort_key``)."""
    sort_reverse: reactive[bool] = reactive(False)
    """The arrow points down (descending) when True (data-bound to the owner's ``sort_reverse``)."""

    class TableMessage(Message):
        """Base of the table's messages: ``control`` is the table."""

        def __init__(self, table: TaskTable) -> None:
            super().__init__()
            self.table = table

        @property
        def control(self) -> TaskTable:
            return self.table

    class TaskHighlighted(TableMessage):
        """The cursor moved to another task; ``row`` is its data row (None: table empty)."""

        def __init__(self, table: TaskTable, row: int | None) -> None:
            super().__init__(table)
            self.row = row

    class TaskSelected(TableMessage):
        """``enter`` (or a double click) on the task at data row ``row``."""

        def __init__(self, table: TaskTable, row: int) -> None:
            super().__init__(table)
            self.row = row

    class HeaderClicked(TableMessage):
        """A click on the header of column ``key``."""

        def __init__(self, table: TaskTable, key: str) -> None:
            super().__init__(table)
            self.key = key

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns: list[Column] = []
        self.order: np.ndarray = np.empty(0, dtype=np.int64)
        self.empty_text = "no tasks"
        self._lines: dict[int, Strip] = {}
        self._width = 0
        self.pinned = 1
        """How many leading columns stay in view when the table scrolls right (the task)."""

    # -- data -------------------------------------------------------------------------------

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Replace the columns (clears the rendered-line cache)."""
        self.columns = [
            c if c.width >= cell_len(c.label) else replace(c, width=cell_len(c.label))
            for c in columns
        ]
        self._width = sum(c.width for c in self.columns) + GAP * (len(self.columns) + 1)
        self.invalidate()
        # A wider table may gain a horizontal scrollbar, one row less: keep the cursor in view.
        self.call_after_refresh(self._scroll_cursor_visible)

    def invalidate(self) -> None:
        """Forget rendered lines (the data behind the cells changed) and redraw."""
        self._lines.clear()
        self._update_size()
        self.refresh()

    def show(self, order: np.ndarray, keep: int | None = None) -> None:
        """Show data rows ``order`` (in this order).

        Args:
            order: Data row indexes.
            keep: Data row to keep the cursor on if it is shown; else the cursor
                stays at its position (clamped).
        """
        self.order = np.asarray(order, dtype=np.int64)
        pos = None
        if keep is not None:
            hits = np.flatnonzero(self.order == keep)
            pos = int(hits[0]) if hits.size else None
        self._update_size()
        self.cursor_row = self._clamp(pos if pos is not None else self.cursor_row)
        self.refresh()

    @property
    def cursor_data_row(self) -> int | None:
        """The data row under the cursor (None when nothing is shown)."""
        if not len(self.order):
            return None
        return int(self.order[self._clamp(self.cursor_row)])

    def move_cursor_to_row(self, row: int) -> bool:
        """Put the cursor on data row ``row``; False if it is not shown."""
        hits = np.flatnonzero(self.order == row)
        if not hits.size:
            return False
        self.cursor_row = int(hits[0])
        return True

    def column(self, key: str) -> Column | None:
        """The shown column ``key`` (None when not shown)."""
        return next((c for c in self.columns if c.key == key), None)

    def row_text(self, position: int) -> list[str]:
        """The plain text of each cell of the row shown at ``position`` (for tests and export)."""
        row = int(self.order[position])
        return [c.render(row).plain for c in self.columns]

    # -- geometry ---------------------------------------------------------------------------

    def _update_size(self) -> None:
        self.virtual_size = Size(self._width, len(self.order) + 1)

    def _clamp(self, pos: int) -> int:
        return max(0, min(pos, len(self.order) - 1)) if len(self.order) else 0

    @property
    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_visible(self) -> None:
        top = int(self.scroll_y)
        page = self._page
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + page:
            self.scroll_to(y=self.cursor_row - page + 1, animate=False)

    def watch_cursor_row(self, old: int, new: int) -> None:
        self._scroll_cursor_visible()
        self.refresh()
        self.post_message(self.TaskHighlighted(self, self.cursor_data_row))

    # -- actions ----------------------------------------------------------------------------

    def action_cursor(self, delta: int) -> None:
        """Move the cursor by ``delta`` rows."""
        self.cursor_row = self._clamp(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        """Move the cursor a page up or down."""
        self.cursor_row = self._clamp(self.cursor_row + direction * self._page)

    def action_jump(self, pos: int) -> None:
        """Move to the first (0) or last (-1) row."""
        self.cursor_row = self._clamp(len(self.order) - 1 if pos < 0 else pos)

    def action_select(self) -> None:
        """Open the task under the cursor."""
        row = self.cursor_data_row
        if row is not None:
            self.post_message(self.TaskSelected(self, row))

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            x = offset.x if offset.x < self._pinned_width else offset.x + int(self.scroll_x)
            key = self._column_at(x)
            if key is not None:
                self.post_message(self.HeaderClicked(self, key))
            return
        pos = int(self.scroll_y) + offset.y - 1
        if 0 <= pos < len(self.order):
            self.cursor_row = pos
            if event.chain >= 2:
                self.action_select()

    @property
    def _pinned_width(self) -> int:
        """Cells of the pinned columns (with the gaps before and after them)."""
        return GAP + sum(c.width + GAP for c in self.columns[:self.pinned])

    def _view(self, strip: Strip, scroll_x: int, width: int, style: Style) -> Strip:
        """The visible part of a whole line: the pinned columns, then the part scrolled to."""
        fixed = self._pinned_width
        if not scroll_x or fixed >= width:
            return strip.crop_extend(scroll_x, scroll_x + width, style)
        return Strip.join([strip.crop_extend(0, fixed, style),
                           strip.crop_extend(fixed + scroll_x, scroll_x + width, style)])

    def _column_at(self, x: int) -> str | None:
        left = GAP
        for col in self.columns:
            if left <= x < left + col.width + GAP:
                return col.key
            left += col.width + GAP
        return None

    # -- rendering --------------------------------------------------------------------------

    def _fit(self, text: Text, col: Column) -> Text:
        text = text.copy()
        if text.cell_len > col.width and col.cut == "middle":
            text = Text(middle_cut(text.plain, col.width), style=text.style)
        if text.cell_len > col.width:
            text.truncate(col.width, overflow="ellipsis")
        pad = col.width - text.cell_len
        if col.align == "right":
            text = Text(" " * pad) + text
        else:
            text.append(" " * pad)
        return text

    def _join(self, cells: Sequence[Text], base: Style) -> Strip:
        line = Text(" " * GAP)
        for cell in cells:
            line.append_text(cell)
            line.append(" " * GAP)
        segments = [
            Segment(s.text, base + s.style if s.style else base)
            for s in line.render(self.app.console)
        ]
        return Strip(segments, line.cell_len)

    def _header(self) -> Strip:
        """The header line: each label, the sorted one highlighted with ▲ / ▼.

        The arrow goes beside the label, in the column when there is room, else in the
        blank gap after it, so that showing it never widens the table. Always after: an
        arrow in the gap before a right-aligned label read as the previous column's
        (``1:clau▼ 2:azur`` for a sort by the second run).
        """
        header = self.get_component_rich_style("task-table--header")
        sorted_style = self.get_component_rich_style("task-table--sorted")
        line = Text(" " * GAP)
        for col in self.columns:
            if col.key != self.sort_key:
                cell = self._fit(Text(col.label), col)
            else:
                arrow = "▼" if self.sort_reverse else "▲"
                label = Text(col.label, style=sorted_style)
                if cell_len(col.label) < col.width:
                    cell = self._fit(label + Text(arrow, style=sorted_style), col)
                else:
                    cell = self._fit(label, col) + Text(arrow, style=sorted_style)
                    line.append_text(cell)
                    line.append(" " * (GAP - 1))
                    continue
            line.append_text(cell)
            line.append(" " * GAP)
        segments = [Segment(s.text, header + s.style if s.style else header)
                    for s in line.render(self.app.console)]
        return Strip(segments, line.cell_len)

    def _row(self, row: int) -> Strip:
        line = self._lines.get(row)
        if line is None:
            colours = theme_colours(self.app.theme_variables)
            cells = [self._fit(themed(col.render(row), colours), col) for col in self.columns]
            line = self._join(cells, self.rich_style)
            if len(self._lines) > 4096:
                self._lines.clear()
            self._lines[row] = line
        return line

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            return self._view(self._header(), scroll_x, width,
                              self.get_component_rich_style("task-table--header"))
        pos = scroll_y + y - 1
        if not len(self.order):
            if y == 1:
                return Strip([Segment(f" {self.empty_text}", base + Style(dim=True))]).crop_extend(
                    0, width, base)
            return Strip.blank(width, base)
        if pos >= len(self.order):
            return Strip.blank(width, base)
        strip = self._row(int(self.order[pos]))
        if pos == self.cursor_row:
            cursor = self.get_component_rich_style("task-table--cursor")
            # The cursor's colours go on top of each cell's own (post_style wins).
            strip = strip.extend_cell_length(max(width, self._width), base)
            strip = Strip(Segment.apply_style(list(strip), post_style=cursor), strip.cell_length)
            return self._view(strip, scroll_x, width, base + cursor)
        return self._view(strip, scroll_x, width, base)

    def on_resize(self) -> None:
        self._scroll_cursor_visible()

    def notify_style_update(self) -> None:
        """A new theme (or CSS): rows rendered in the old colours are drawn again."""
        super().notify_style_update()
        self._lines.clear()
