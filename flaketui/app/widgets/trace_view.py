"""Two traces side by side, aligned step by step, with the first divergence highlighted.

Build it with two explicit trials (from one run or from two runs), a label for
each side and, best, their :class:`~flaketui.traces.trace_diff.PairDiff` built in
the caller's worker: the model normalises and aligns the steps in a divergence mode
(``actions``: only the agent's tool calls and final answer count; ``all``: every
step) and finds each row's changes, folds, hunks and search matches; the view only
renders it, ``first divergence: step N`` first.
Under every differing pair of steps a structural diff names each changed field
(``tool_calls.0.arguments.reservation_id: "NM1VX1" → "KC18K6"``), tool calls read
``name(arg=value, …)``. Runs of identical steps are folded, a system prompt the
two sides share is shown once, and rows are drawn a few hundred at a time: a jump
(divergence, hunk, search match) draws what it needs. The task trace screen and
the run comparison both use it.

Every string from a log goes through :func:`flaketui.sanitize.visible` into
:class:`rich.text.Text` objects: never parsed as markup, no control character drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from flaketui.model import Trial
from flaketui.sanitize import visible
from flaketui.traces.normalise import SUMMARY_KEYS, Normaliser, compact, json_text
from flaketui.traces.steps import ALL
from flaketui.traces.trace_diff import (
    DELETE,
    EQUAL,
    FOLD_KEEP,
    FOLD_MIN,
    INSERT,
    MISSING,
    FieldChange,
    Item,
    PairDiff,
    action_first,
    header_changes,
    highlights,
    is_system,
    pair_diff,
    tool_calls_text,
)

if TYPE_CHECKING:
    from flaketui.traces.align import Alignment

__all__ = [
    "FOLD_KEEP", "FOLD_MIN", "Item", "TraceDiffView", "change_summary", "changes_text", "clip", "highlights",
    "render_step", "tool_calls_text",
]

MAX_LINES = 8
"""Lines of a field's text shown before it is cut (``x`` expands)."""
MAX_CHARS = 600
"""Characters of a field's text shown before it is cut (``x`` expands)."""
MAX_ROWS = 400
"""Rows drawn in all when a pair opens; scrolling to an edge draws more, a far jump draws a window
round its target."""
FIRST_ROWS = 12
"""Fewest rows drawn in the first frame of a pair (a screenful): rows are drawn in it until their
steps hold :data:`FIRST_CHARS` characters. Each row of two long steps costs a few milliseconds to
lay out, so the rest of a long pair (up to :data:`MAX_ROWS`) is drawn in the next frames and the
first screenful is read at once; a pair of short steps is drawn whole in the first frame."""
FIRST_CHARS = 20_000
"""Characters of steps (as compact JSON) drawn in the first frame beyond :data:`FIRST_ROWS` rows."""
DRAW_CHUNK = 24
"""Fewest rows drawn in a frame after the first; each later frame draws twice as many as are
drawn (every frame lays out every drawn row again: equal chunks would lay out the first rows a
dozen times)."""
OPEN_ABOVE = 1
"""Shared rows drawn above the first divergence when a pair opens there."""
DRAW_AHEAD = 60
"""Rows drawn past a jump's target, so that the screen below it is filled."""

MARKERS = {EQUAL: " ", "replace": "≠", DELETE: "−", INSERT: "+"}
"""What the left margin shows for each kind of aligned row."""

CHANGED = "bold black on #d7af5f"
"""Style of the changed words inside the divergent step."""
MATCH = "bold black on #5fafd7"
"""Style of a search match."""


def clip(text: str, expanded: bool) -> tuple[str, int]:
    """``text`` cut to :data:`MAX_LINES` lines / :data:`MAX_CHARS` chars; returns (text, chars cut)."""
    if expanded:
        return text, 0
    lines = text.split("\n")
    cut = "\n".join(lines[:MAX_LINES])
    if len(cut) > MAX_CHARS:
        cut = cut[:MAX_CHARS]
    return cut, len(text) - len(cut)


def render_step(
    number: int | str,
    step: Any,
    expanded: bool = False,
    highlight: dict[str, list[tuple[str, bool]]] | None = None,
) -> Text:
    """One normalised step: a head (number, role, type, name), then its other fields.

    Args:
        number: The step's name: its harness id, else its 1-based row.
        step: The normalised step (an object, a string, anything JSON).
        expanded: Show long fields in full.
        highlight: Field path -> word tokens marked changed (the divergent step).
    """
    highlight = highlight or {}
    out = Text()
    out.append(f"{number} ", style="bold cyan")
    if not isinstance(step, dict):
        body = step if isinstance(step, str) else compact(step)
        _append_field(out, body, highlight.get(""), expanded)
        return out
    head = " ".join(str(step[k]) for k in SUMMARY_KEYS if step.get(k) is not None)
    out.append(visible(head) or "step", style="bold")
    for key in SUMMARY_KEYS:
        if key in highlight:
            out.append(f"  ({key} differs)", style=CHANGED)
    for key, value in step.items():
        tokens = highlight.get(key)
        if key in SUMMARY_KEYS or value is None and tokens is None:
            continue  # e.g. ``content: null`` beside an assistant's tool_calls
        out.append("\n")
        out.append(f"{visible(key)}: ", style="italic dim")
        calls = tool_calls_text(value) if key == "tool_calls" and tokens is None else None
        text = calls if calls is not None else value if isinstance(value, str) else compact(value)
        _append_field(out, text, tokens, expanded)
    return out


def _append_field(out: Text, text: str, tokens: list[tuple[str, bool]] | None,
                  expanded: bool) -> None:
    shown, cut = clip(text, expanded)
    if tokens is None:
        out.append(visible(shown, multiline=True))
    else:
        used = 0
        for token, changed in tokens:
            if used >= len(shown):
                break
            part = token[: len(shown) - used]
            out.append(visible(part, multiline=True), style=CHANGED if changed else "")
            used += len(part)
    if cut:
        out.append(f" … (+{cut} chars, x: expand)", style="italic dim")


def change_summary(changes: Sequence[FieldChange]) -> str:
    """``content``, ``args.query (only in B)``… for the fields that differ: the agent's action
    first, at most a few, then what is folded (``+2 more, 12 metadata fields``)."""
    shown, more, meta = header_changes(changes)
    parts = []
    for c in shown:
        name = c.path or "the step"
        if c.a is MISSING:
            name += " (only in B)"
        elif c.b is MISSING:
            name += " (only in A)"
        parts.append(name)
    folded = [f"+{more} more"] if more else []
    if meta:
        folded.append(f"{meta} metadata field{'s' if meta != 1 else ''}")
    return visible(", ".join(parts) + (f" ({', '.join(folded)})" if folded else ""))


def _value_text(value: Any) -> str:
    if value is MISSING:
        return "(none)"
    return value if isinstance(value, str) else json_text(value)


LONG_TEXT = 80
"""A changed text longer than this (or of several lines) is marked in the row, not repeated below."""


def _long_text(value: Any) -> bool:
    return isinstance(value, str) and (len(value) > LONG_TEXT or "\n" in value)


CUT_VALUE = 160
"""Characters of a changed value shown under a row before it is cut (``x`` shows it whole)."""
CUT_META = 3
"""Changed metadata fields named under a row before the rest are counted (``x`` names them all)."""


def _cut_value(value: str, expanded: bool) -> str:
    """``value`` on one line of at most :data:`CUT_VALUE` characters, saying how much is cut."""
    if expanded or (len(value) <= CUT_VALUE and "\n" not in value):
        return value
    head = value.split("\n", 1)[0][:CUT_VALUE]
    return f"{head} … ({len(value) - len(head):,} more chars; x shows them)"


def changes_text(changes: Sequence[FieldChange], step_a: Any = None, step_b: Any = None,
                 expanded: bool = True) -> Text:
    """The structural diff of two aligned steps, one changed field a line.

    Each change reads ``tool_calls.0.arguments.reservation_id: NM1VX1 → KC18K6`` with the
    key in bold and both values marked; two long texts are not repeated (the row marks their
    changed words). ``expanded``: every value whole (long ones wrap in the caller's folding
    column); else each value is cut to one line (:data:`CUT_VALUE`) and, after the fields of the
    agent's action, at most :data:`CUT_META` metadata fields are named and the rest counted: a
    Harbor step's metadata repeats whole files in a dozen fields, and laying out tens of
    thousands of characters under each row kept the view from opening.
    """
    shown = list(changes)
    hidden = 0
    if not expanded:
        action, meta = action_first(changes)
        keep = meta[:CUT_META]
        hidden = len(meta) - len(keep)
        shown = [c for c in changes if c in action or any(c is k for k in keep)]
    out = Text()
    for i, c in enumerate(shown):
        if i:
            out.append("\n")
        head, _, key = c.path.rpartition(".")
        if head:
            out.append(visible(head) + ".", style="dim")
        out.append(visible(key or "the step"), style="bold")
        out.append(": ")
        if _long_text(c.a) and _long_text(c.b):
            out.append("the text differs (changed words marked above)", style="italic")
            continue
        out.append(visible(_cut_value(_value_text(c.a), expanded), multiline=True),
                   style=CHANGED if c.a is not MISSING else "dim")
        out.append(" → ")
        out.append(visible(_cut_value(_value_text(c.b), expanded), multiline=True),
                   style=CHANGED if c.b is not MISSING else "dim")
    if hidden:
        out.append(f"\n… and {hidden} more metadata field(s) differ (x: show them)", style="dim italic")
    return out


class TraceDiffView(Vertical):
    """Two trials' traces side by side with the first divergence highlighted.

    Args:
        a: The left trial (e.g. a passing one), or None for none.
        b: The right trial (e.g. a failing one), or None to show only ``a``.
        label_a: Title of the left side, e.g. ``"A: oncall-baseline trial 3 (pass)"``.
        label_b: Title of the right side, e.g. ``"B: oncall-candidate trial 5 (fail)"``.
        normaliser: Which keys to ignore (default: ids, timestamps, durations, noise).
        note: Shown instead of the divergence line when one side is missing,
            e.g. ``"all 12 trials passed: no failing trace to compare"``.
        mode: Divergence mode, ``actions`` or ``all``; None: :func:`~flaketui.traces.default_mode`.
        tolerance: Numbers this close are equal.
        id: Widget id.

    ``a`` and ``b`` may come from different runs: the view only compares their
    traces. :meth:`set_pair` shows another pair; :meth:`jump_to_divergence`,
    :meth:`jump_hunk` and :meth:`search` / :meth:`jump_match` scroll; :attr:`expanded`
    shows long fields in full; :attr:`folded` folds runs of identical steps.
    """

    DEFAULT_CSS = """
    TraceDiffView { height: 1fr; }
    TraceDiffView #diff-divergence { height: auto; padding: 0 1; }
    TraceDiffView #diff-labels { height: auto; padding: 0 1; background: $boost; }
    TraceDiffView #diff-rows { height: 1fr; }
    TraceDiffView .diff-row { height: auto; padding: 0 1; }
    TraceDiffView .diff-row.-shared { text-opacity: 55%; }
    TraceDiffView .diff-row.-divergence {
        background: $warning 15%;
        outline-left: thick $warning;
    }
    TraceDiffView .diff-row.-after { background: $error 5%; }
    TraceDiffView .diff-row.-current { background: $accent 20%; }
    TraceDiffView .diff-fold { color: $text-muted; padding: 0 1; text-style: italic; }
    TraceDiffView #diff-more { color: $text-muted; padding: 0 1; }
    """

    expanded: reactive[bool] = reactive(False, init=False)
    """Show long fields in full."""
    folded: reactive[bool] = reactive(True, init=False)
    """Fold runs of more than :data:`FOLD_MIN` identical steps."""
    compact: reactive[bool] = reactive(False, init=False)
    """The labels in one line, each cut to its column (a small terminal's compact header);
    the divergence line is cut to one line by the stylesheet (``.-compact-head``)."""

    def __init__(
        self,
        a: Trial | None,
        b: Trial | None,
        label_a: str = "A",
        label_b: str = "B",
        normaliser: Normaliser | None = None,
        note: str = "",
        *,
        mode: str | None = None,
        tolerance: float = 0.0,
        id: str | None = None,
        diff: PairDiff | None = None,
    ) -> None:
        super().__init__(id=id)
        self.normaliser = normaliser or Normaliser()
        self.a, self.b = a, b
        self.label_a, self.label_b = label_a, label_b
        self.note = note
        self.mode_choice = mode
        """The mode asked for (None: each pair's default)."""
        self.tolerance = tolerance
        self.items: list[Item] = []
        """What the rows show, in order: aligned rows and folds."""
        self.lo = 0
        self.drawn = 0
        """Items ``lo``..``drawn`` of :attr:`items` are mounted."""
        self.current: int | None = None
        """The aligned row a jump went to last (hunks and matches go on from it)."""
        self.query_text = ""
        self.matches: list[int] = []
        """Aligned rows whose text holds :attr:`query_text`."""
        self._unfolded: set[int] = set()
        self._fills = 0
        self._open_at: Static | None = None
        """The row the view opens at, scrolled to once it is laid out."""
        self._opened_y = 0.0
        self._filling = False
        """Rows are being drawn frame by frame after the first (:meth:`_fill`): the marker below says so."""
        """Where that scroll left the view (scrolled elsewhere since: it is not scrolled again)."""
        """How many times :meth:`rebuild` has drawn the rows (a fill of an earlier one stops)."""
        self._take(diff if diff is not None else self._diff_of(a, b))

    # -- data -------------------------------------------------------------------------------

    def _diff_of(self, a: Trial | None, b: Trial | None) -> PairDiff:
        """The pair's model, when the caller did not build it (in its worker)."""
        return pair_diff(a, b, self.normaliser, self.mode_choice, self.tolerance)

    @property
    def mode(self) -> str:
        """The mode in use for the shown pair."""
        return self.diff.mode

    @property
    def alignment(self) -> Alignment | None:
        """The shown pair's :class:`~flaketui.traces.align.Alignment` (None: one side only)."""
        return self.diff.alignment

    @property
    def changes(self) -> list[FieldChange]:
        """The fields the divergent step differs in."""
        return self.diff.changes

    @property
    def divergent_steps(self) -> tuple[Any, Any]:
        """The two normalised steps of the first divergence (when both sides have one)."""
        return self.diff.divergent_steps

    @property
    def trace_a(self) -> list[Any]:
        return self.diff.trace_a

    @property
    def trace_b(self) -> list[Any]:
        return self.diff.trace_b

    @property
    def first_divergence(self) -> int | None:
        """1-based step where the two traces first differ (None: equal or one side)."""
        return self.diff.first_divergence

    @property
    def rows(self) -> list[tuple[int | None, int | None, str, bool]]:
        """Every aligned row as (A's index, B's index, tag, counts); one side: A's steps."""
        return self.diff.rows

    def _take(self, diff: PairDiff) -> None:
        """Show ``diff``: nothing unfolded, no row current, the search found again."""
        self.diff = diff
        """The shown pair's model (built in a worker, or by :meth:`_diff_of`)."""
        self.current = None
        self._unfolded = set()
        self.items = self._items()
        if self.query_text:
            self.matches = self.diff.find(self.query_text)

    def _items(self) -> list[Item]:
        return self.diff.items(self.folded, self._unfolded)

    def set_pair(self, a: Trial | None, b: Trial | None, label_a: str, label_b: str,
                 note: str = "", diff: PairDiff | None = None) -> None:
        """Show another pair of trials (``diff``: its model, built in a worker)."""
        self.a, self.b, self.label_a, self.label_b, self.note = a, b, label_a, label_b, note
        self._take(diff if diff is not None else self._diff_of(a, b))
        if self.is_mounted:
            self.call_later(self.rebuild)

    def set_mode(self, mode: str | None, diff: PairDiff | None = None) -> None:
        """Align the pair again in ``mode`` (None: the pair's default; ``diff``: its model)."""
        self.mode_choice = mode
        self._take(diff if diff is not None else self._diff_of(self.a, self.b))
        if self.is_mounted:
            self.call_later(self.rebuild)

    # -- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="diff-divergence")
        yield Static(id="diff-labels")
        yield VerticalScroll(id="diff-rows", can_focus=True)

    async def on_mount(self) -> None:
        await self.rebuild()
        self.watch(self.query_one("#diff-rows", VerticalScroll), "scroll_y", self._scrolled, init=False)

    def divergence_text(self) -> Text:
        """The line ``first divergence: step N`` and what differs in that step."""
        text = Text()
        if self.a is None or self.b is None:
            text.append("first divergence: none", style="bold")
            text.append(f" — {visible(self.note)}" if self.note else " — only one side to show",
                        style="yellow")
            return text
        step = self.first_divergence
        if step is None:
            text.append("first divergence: none", style="bold")
            what = "agent's actions" if self.mode != ALL else "traces"
            text.append(f" — the {what} are equal after normalisation ({self.mode} mode)", style="yellow")
            if self.a.outcome != self.b.outcome:
                text.append("; the outcome was decided outside the trace", style="yellow")
            return text
        assert self.alignment is not None
        step_b = self.alignment.divergence_b
        name_a = visible(str(self.diff.step_name(0, step - 1)))  # a harness's step id is log text
        name_b = None if step_b is None else visible(str(self.diff.step_name(1, step_b - 1)))
        where = f"step {name_a}" if name_b in (None, name_a) else f"step {name_a} (B: step {name_b})"
        text.append(f"first divergence: {where}", style="bold reverse yellow")
        text.append(f"  [{self.mode}]", style="dim")
        row = self.alignment.rows[self.alignment.divergence_row] if self.alignment.divergence_row is not None \
            else None
        if row is not None and row.a is not None and row.b is not None:
            text.append(f"   differs in: {change_summary(self.changes)}")
            wa, wb = self.diff.changed_word_counts()
            if wa or wb:
                text.append(f" ({wa} words marked on A, {wb} on B)", style="dim")
        elif row is not None and row.a is None:
            text.append(f"   B has an extra step {visible(str(self.diff.step_name(1, row.b))) if row.b is not None else ''}")
        else:
            text.append("   A goes on where B ends" if row and row.b is None else "   A has an extra step")
        text.append("   d: jump here", style="dim")
        return text

    def labels_text(self) -> RenderableType:
        """Both sides' labels, then the divergence mode and the ignored keys (:attr:`compact`:
        the labels only, each cut to one line)."""
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(width=1)
        cut = {"no_wrap": True, "overflow": "ellipsis"} if self.compact else {}
        grid.add_column(ratio=1, **cut)  # type: ignore[arg-type]
        grid.add_column(ratio=1, **cut)  # type: ignore[arg-type]
        ignored = self.diff.ignored
        left = Text(visible(self.label_a), style="bold green" if self.a and self.a.passed else "bold red")
        if self.b is None:
            right = Text("")
        else:
            right = Text(visible(self.label_b), style="bold green" if self.b.passed else "bold red")
        grid.add_row("", left, right)
        if self.compact:
            return grid
        mode = Text(f"divergence mode: {self.mode}", style="dim italic")
        if ignored:
            grid.add_row("", Text("ignoring " + visible(", ".join(ignored)), style="dim italic"), mode)
        else:
            grid.add_row("", mode, "")
        return grid

    async def rebuild(self, at_divergence: bool = True) -> None:
        """Re-render the header lines and a screenful of rows, from the first divergence (with
        :data:`OPEN_ABOVE` shared rows above it) when the pair has one and ``at_divergence``,
        else from the first row; the rows after it are drawn in the next frames (:meth:`_fill`)."""
        self.query_one("#diff-divergence", Static).update(self.divergence_text())
        self.query_one("#diff-labels", Static).update(self.labels_text())
        row = self.alignment.divergence_row if self.alignment is not None and self.b is not None \
            and at_divergence else None
        index = self.item_of(row) if row is not None else None
        top = 0 if index is None else max(0, index - OPEN_ABOVE)
        # from the divergence, or from a screenful before the end when it is near the end
        lo = 0 if top < FIRST_ROWS // 2 else max(0, min(top, len(self.items) - FIRST_ROWS))
        self._fills += 1
        self._filling = True
        await self._draw_window(lo, self._first_end(lo), self._head_widgets() if lo == 0 else ())
        scroll = self.query_one("#diff-rows", VerticalScroll)
        first = self.items[top] if top < len(self.items) else None
        found = scroll.query(f"#diff-{'fold' if first.fold else 'row'}-{first.first}") if first and top else None
        scroll.scroll_home(animate=False)
        # Opened at the divergence, without making it the current row (the hunk and search
        # keys still go from the start): scrolled there once the rows are laid out (:meth:`_fill`).
        self._open_at = found.first() if found else None
        self._opened_y = scroll.scroll_y
        self.call_after_refresh(self._fill, self._fills)

    def _first_end(self, lo: int) -> int:
        """Where the first frame's rows from item ``lo`` end: at least :data:`FIRST_ROWS` rows,
        more while their steps hold fewer than :data:`FIRST_CHARS` characters, at most
        :data:`MAX_ROWS`."""
        size, end = 0, lo
        last = min(len(self.items), lo + MAX_ROWS)
        while end < last and (end - lo < FIRST_ROWS or size < FIRST_CHARS):
            item = self.items[end]
            if not item.fold:
                ia, ib, _, _ = self.rows[item.first]
                size += sum(len(compact(t[i])) for t, i in ((self.trace_a, ia), (self.trace_b, ib)) if i is not None)
            end += 1
        return end

    async def _fill(self, fill: int) -> None:
        """Draw :data:`DRAW_CHUNK` more rows below the drawn ones, and again after the next
        frame, until :data:`MAX_ROWS` are drawn (``fill``: the :meth:`rebuild` this began in;
        a later one stops it)."""
        if fill != self._fills or not self.is_attached:
            return
        scroll = self.query_one("#diff-rows", VerticalScroll)
        target = self._open_at
        if target is not None:
            if not target.is_attached or scroll.scroll_y != self._opened_y:
                self._open_at = None  # moved away from (a key, a jump): leave the view there
            elif not target.virtual_region.height:
                self.call_after_refresh(self._fill, fill)  # not laid out yet
                return
            else:
                # again after each frame of rows: the rows below it may not have filled a screen
                scroll.scroll_to_widget(target, top=True, animate=False, immediate=True)
                self._opened_y = scroll.scroll_y
        if self.drawn - self.lo < MAX_ROWS and self.drawn < len(self.items):
            drawn = self.drawn - self.lo
            await self.draw_more(min(max(DRAW_CHUNK, 2 * drawn), MAX_ROWS - drawn))
            self.call_after_refresh(self._fill, fill)
            return
        self._filling = False
        if target is not None and self._open_at is not None:
            self._open_at = None
            self.call_after_refresh(scroll.scroll_to_widget, target, top=True, animate=False)

    async def _draw_window(self, lo: int, hi: int, head: Sequence[Static] = ()) -> None:
        """Mount exactly items ``lo``..``hi`` (with the markers of what is left above and below)."""
        rows = self.query_one("#diff-rows", VerticalScroll)
        await rows.remove_children()
        self.lo, self.drawn = max(0, lo), min(len(self.items), hi)
        widgets = [*head, *self._above_widget(), *self._item_widgets(self.lo, self.drawn), *self._more_widget()]
        if widgets:
            await rows.mount_all(widgets)

    def _above_widget(self) -> list[Static]:
        if self.lo <= 0:
            return []
        return [Static(f"… {self.lo} rows above (scroll up to draw them)", id="diff-above")]

    def _head_widgets(self) -> list[Static]:
        out: list[Static] = []
        if self.a is not None and self.a.trace is None or self.b is not None and self.b.trace is None:
            missing = [s for s, t in (("A", self.a), ("B", self.b)) if t is not None and t.trace is None]
            out.append(Static(Text(f"trial {' and '.join(missing)} has no trace", style="yellow"),
                              classes="diff-row"))
        elif not self.items:
            out.append(Static(Text("(empty trace)", style="dim"), classes="diff-row"))
        return out

    def _more_widget(self) -> list[Static]:
        left = len(self.items) - self.drawn
        if left <= 0:
            return []
        if self._filling and self.drawn - self.lo < MAX_ROWS:
            return [Static(f"… {left} more rows (drawing them…)", id="diff-more")]
        return [Static(f"… {left} more rows (scroll down to draw them)", id="diff-more")]

    async def draw_until(self, index: int) -> None:
        """Make item ``index`` drawn: draw on to it (and :data:`DRAW_AHEAD` more) when it is
        near the drawn rows, else draw a window of rows around it (a 5,000-step trace never
        mounts thousands of rows)."""
        if self.lo <= index < self.drawn:
            return
        if self.drawn <= index < self.drawn + MAX_ROWS:
            await self.draw_more(index + 1 + DRAW_AHEAD - self.drawn)
        else:
            await self._draw_window(index - DRAW_AHEAD, index + 1 + DRAW_AHEAD)

    async def draw_more(self, count: int = DRAW_AHEAD) -> None:
        """Mount ``count`` more items below the drawn ones."""
        rows = self.query_one("#diff-rows", VerticalScroll)
        upto = min(len(self.items), self.drawn + count)
        if upto <= self.drawn:
            return
        await rows.query("#diff-more").remove()
        widgets = self._item_widgets(self.drawn, upto)
        self.drawn = upto
        widgets += self._more_widget()
        await rows.mount_all(widgets)

    async def draw_above(self, count: int = MAX_ROWS // 2) -> None:
        """Mount ``count`` more items above the drawn ones, keeping the view where it was."""
        if self.lo <= 0:
            return
        rows = self.query_one("#diff-rows", VerticalScroll)
        first = [w for w in rows.children if w.id != "diff-above"]
        new_lo = max(0, self.lo - count)
        widgets = self._item_widgets(new_lo, self.lo)
        await rows.query("#diff-above").remove()
        self.lo = new_lo
        widgets = self._above_widget() + widgets
        if first:
            await rows.mount_all(widgets, before=first[0])
            rows.scroll_to_widget(first[0], top=True, animate=False)
        else:
            await rows.mount_all(widgets)

    async def _scrolled(self, _old: float, new: float) -> None:
        """Scrolled to an edge of the drawn rows: draw the next ones."""
        rows = self.query_one("#diff-rows", VerticalScroll)
        if new <= 0 and self.lo > 0:
            await self.draw_above()
        elif new >= rows.max_scroll_y and self.drawn < len(self.items) and rows.max_scroll_y > 0:
            await self.draw_more(MAX_ROWS // 2)

    def _item_widgets(self, start: int, stop: int) -> list[Static]:
        return [self._item_widget(self.items[i]) for i in range(start, stop)]

    def _item_widget(self, item: Item) -> Static:
        if item.fold:
            n = item.last - item.first + 1
            return Static(Text(f"   … {n} identical steps …  (z: unfold)"), classes="diff-fold",
                          id=f"diff-fold-{item.first}")
        return self._row_widget(item.first)

    def _row_widget(self, n: int) -> Static:
        diff = self.diff
        ia, ib, tag, counts = self.rows[n]
        div_row = diff.divergence_row
        is_div = n == div_row
        sa, sb = diff.steps(n)
        changes = diff.row_changes(n)
        ha, hb = diff.row_highlights(n, changes, (sa, sb))
        left = self._side(ia, sa, ha) if ia is not None else Text("")
        right = self._side(ib, sb, hb, ta_side=False) if ib is not None else Text("")
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(width=1)
        grid.add_column(ratio=1, overflow="fold")  # a long word (JSON) wraps, not cut to "…"
        if self.b is not None:
            marker = "▶" if is_div else MARKERS.get(tag, " ")
            marker_text = Text(marker, style="bold yellow" if is_div else ("red" if counts else "dim"))
            if tag == EQUAL and is_system(sa):
                # A system prompt both sides share: shown once, across both columns.
                left.append("  (the same on both sides)", style="dim italic")
                grid.add_row(marker_text, left)
            else:
                grid.add_column(ratio=1, overflow="fold")
                grid.add_row(marker_text, left, right)
        else:
            grid.add_row(" ", left)
        classes = "diff-row"
        if div_row is None or n < div_row:
            classes += " -shared" if self.b is not None and tag == EQUAL else ""
        elif is_div:
            classes += " -divergence"
        elif tag != EQUAL:
            classes += " -after"
        if n == self.current:
            classes += " -current"
        content: RenderableType = grid
        if changes:
            # The structural diff under the pair, across both columns: long values wrap, never cut.
            body = changes_text(changes, sa, sb, self.expanded)
            if not counts:
                body.append(f"\n(not counted in {self.mode} mode)", style="dim italic")
            body.overflow = "fold"
            content = Group(grid, Padding(body, (0, 0, 0, 2)))
        return Static(content, classes=classes, id=f"diff-row-{n}")

    def _side(self, index: int, step: Any, highlight: dict[str, list[tuple[str, bool]]],
              ta_side: bool = True) -> Text:
        if is_system(step):
            earlier = self.diff.same_system(0 if ta_side else 1, index)
            if earlier is not None:
                side = 0 if ta_side else 1
                return Text.assemble((f"{visible(str(self.diff.step_name(side, index)))} ", "bold cyan"),
                                     ("system", "bold"), (f"  (the same system prompt as step "
                                                          f"{visible(str(self.diff.step_name(side, earlier)))})",
                                                          "dim italic"))
        text = render_step(visible(str(self.diff.step_name(0 if ta_side else 1, index))), step, self.expanded,
                           highlight or None)
        if self.query_text:
            text.highlight_words([visible(self.query_text, multiline=True)], style=MATCH, case_sensitive=False)
        return text

    # -- jumps ------------------------------------------------------------------------------

    def focus_rows(self) -> None:
        """Give the aligned rows the keyboard focus (↑ ↓ pgup pgdn home end scroll them), at once:
        a screen showing them first shows them focused, not its first focusable widget."""
        self.screen.set_focus(self.query_one("#diff-rows", VerticalScroll))

    def item_of(self, row: int) -> int | None:
        """Index in :attr:`items` of the item that shows aligned row ``row``."""
        lo, hi = 0, len(self.items)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.items[mid].last < row:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(self.items) and self.items[lo].first <= row else None

    async def jump_to_row(self, row: int) -> bool:
        """Scroll aligned row ``row`` to the top: unfold it, draw it, mark it current."""
        index = self.item_of(row)
        if index is None:
            return False
        if self.items[index].fold:
            await self.unfold(self.items[index].first)
            index = self.item_of(row)
            assert index is not None
        await self.draw_until(index)
        previous, self.current = self.current, row
        rows = self.query_one("#diff-rows", VerticalScroll)
        for old in rows.query(f"#diff-row-{previous}") if previous is not None else ():
            old.remove_class("-current")
        target = rows.query(f"#diff-row-{row}")
        if not target:
            return False
        widget = target.first()
        widget.add_class("-current")
        self.call_after_refresh(rows.scroll_to_widget, widget, top=True, animate=False)
        rows.scroll_to_widget(widget, top=True, animate=False)
        return True

    async def jump_to_divergence(self) -> bool:
        """Scroll the divergent step to the top; False if there is none."""
        if self.alignment is None or self.b is None or self.alignment.divergence_row is None:
            return False
        return await self.jump_to_row(self.alignment.divergence_row)

    def hunks(self) -> list[int]:
        """The first aligned row of each run of differing rows."""
        return self.diff.hunks()

    async def jump_hunk(self, step: int) -> bool:
        """Go to the next (``step`` 1) or previous (-1) run of differing rows; False: none that way."""
        return await self._jump_along(self.hunks(), step)

    async def _jump_along(self, targets: list[int], step: int) -> bool:
        here = -1 if self.current is None else self.current
        if step > 0:
            ahead = [t for t in targets if t > here]
            target = ahead[0] if ahead else None
        else:
            back = [t for t in targets if t < here]
            target = back[-1] if back else None
        return target is not None and await self.jump_to_row(target)

    async def search(self, query: str) -> int:
        """Find ``query`` (any case) in both traces' steps, mark it, go to the first match after
        the current row; returns the number of matching rows."""
        self.query_text = query
        self.matches = self.diff.find(query) if query else []
        start = self.current
        await self.rebuild(at_divergence=False)  # the jump below places the view
        self.current = start
        if self.matches:
            if not await self._jump_along(self.matches, 1):
                await self.jump_to_row(self.matches[0])
        return len(self.matches)

    async def jump_match(self, step: int) -> bool:
        """Next (1) or previous (-1) search match, wrapping round; False: no search or no match."""
        if not self.matches:
            return False
        if not await self._jump_along(self.matches, step):
            await self.jump_to_row(self.matches[0] if step > 0 else self.matches[-1])
        return True

    async def unfold(self, first: int | None = None) -> None:
        """Unfold the fold starting at aligned row ``first`` (None: every fold)."""
        if first is None:
            self.folded = False
            return
        run_start = first - FOLD_KEEP
        self._unfolded.add(run_start)
        self.items = self._items()
        await self.rebuild_keeping()

    async def rebuild_keeping(self) -> None:
        """Rebuild the rows, the current row kept (and drawn, if there is one)."""
        current = self.current
        await self.rebuild(at_divergence=False)
        self.current = current
        if current is not None:
            await self.jump_to_row(current)

    async def watch_expanded(self) -> None:
        await self.rebuild()

    def watch_compact(self) -> None:
        if self.is_mounted:
            self.query_one("#diff-labels", Static).update(self.labels_text())

    async def watch_folded(self) -> None:
        self.items = self._items()
        await self.rebuild_keeping()

    def summary_lines(self) -> Group:
        """The divergence line and the labels (for export)."""
        return Group(self.divergence_text(), self.labels_text())
