"""Two traces side by side, aligned step by step, with the first divergence highlighted.

Build it with two explicit trials (from one run or from two runs) and a label
for each side; it normalises the steps (:class:`~flaketui.traces.Normaliser`),
aligns them with difflib and shows ``first divergence: step N``. The task trace
screen and the run comparison both use it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from flaketui.model import Trial
from flaketui.traces import Alignment, FieldChange, Normaliser, align, step_changes, word_diff
from flaketui.traces.align import DELETE, EQUAL, INSERT, MISSING
from flaketui.traces.normalise import SUMMARY_KEYS, compact

MAX_LINES = 8
"""Lines of a field's text shown before it is cut (``x`` expands)."""
MAX_CHARS = 600
"""Characters of a field's text shown before it is cut (``x`` expands)."""
MAX_ROWS = 400
"""Aligned rows shown before the rest is cut (``x`` expands)."""

MARKERS = {EQUAL: " ", "replace": "≠", DELETE: "−", INSERT: "+"}
"""What the left margin shows for each kind of aligned row."""

CHANGED = "bold black on #d7af5f"
"""Style of the changed words inside the divergent step."""


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
    number: int,
    step: Any,
    expanded: bool = False,
    highlight: dict[str, list[tuple[str, bool]]] | None = None,
) -> Text:
    """One normalised step: a head (number, role, type, name), then its other fields.

    Args:
        number: 1-based step number.
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
    out.append(head or "step", style="bold")
    for key in SUMMARY_KEYS:
        if key in highlight:
            out.append(f"  ({key} differs)", style=CHANGED)
    for key, value in step.items():
        tokens = highlight.get(key)
        if key in SUMMARY_KEYS or value is None and tokens is None:
            continue  # e.g. ``content: null`` beside an assistant's tool_calls
        out.append("\n")
        out.append(f"{key}: ", style="italic dim")
        calls = tool_calls_text(value) if key == "tool_calls" and tokens is None else None
        text = calls if calls is not None else value if isinstance(value, str) else compact(value)
        _append_field(out, text, tokens, expanded)
    return out


def tool_calls_text(value: Any) -> str | None:
    """OpenAI chat ``tool_calls`` as one line per call, ``name {"arg": value}``; None if not that shape.

    The arguments arrive as a JSON string; shown parsed (with spaces, so long ones wrap)
    rather than as escaped JSON inside JSON.
    """
    if not isinstance(value, list) or not value:
        return None
    lines = []
    for call in value:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            return None
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                lines.append(f"{fn['name']} {args}")
                continue
        lines.append(fn["name"] if args in (None, {}) else
                     f"{fn['name']} {json.dumps(args, ensure_ascii=False)}")
    return "\n".join(lines)


def _append_field(out: Text, text: str, tokens: list[tuple[str, bool]] | None,
                  expanded: bool) -> None:
    shown, cut = clip(text, expanded)
    if tokens is None:
        out.append(shown)
    else:
        used = 0
        for token, changed in tokens:
            if used >= len(shown):
                break
            part = token[: len(shown) - used]
            out.append(part, style=CHANGED if changed else "")
            used += len(part)
    if cut:
        out.append(f" … (+{cut} chars, x: expand)", style="italic dim")


def change_summary(changes: Sequence[FieldChange]) -> str:
    """``content``, ``args.query (only in B)``… for the fields that differ."""
    parts = []
    for c in changes:
        name = c.path or "the step"
        if c.a is MISSING:
            name += " (only in B)"
        elif c.b is MISSING:
            name += " (only in A)"
        parts.append(name)
    return ", ".join(parts)


def highlights(changes: Sequence[FieldChange], step_a: Any = None, step_b: Any = None,
               ) -> tuple[dict[str, list[tuple[str, bool]]], dict[str, list[tuple[str, bool]]]]:
    """Word diffs of the changed top-level fields, as token lists for side A and side B.

    Args:
        changes: The divergent step's changes (:func:`~flaketui.traces.step_changes`).
        step_a: A's normalised step: a nested change (``args.query``) diffs its whole
            top-level field (``args``), which is what the row shows.
        step_b: B's normalised step.
    """
    a: dict[str, list[tuple[str, bool]]] = {}
    b: dict[str, list[tuple[str, bool]]] = {}
    for c in changes:
        top = c.path.split(".")[0].split("[")[0]
        if top in a or top in b:
            continue
        va, vb = c.a, c.b
        if top != c.path:
            if not (isinstance(step_a, dict) and isinstance(step_b, dict)):
                continue
            va, vb = step_a.get(top, MISSING), step_b.get(top, MISSING)
        if va is MISSING or vb is MISSING:
            if va is not MISSING:
                a[top] = [(compact(va), True)]
            if vb is not MISSING:
                b[top] = [(compact(vb), True)]
            continue
        wd = word_diff(va, vb)
        a[top], b[top] = wd.a, wd.b
    return a, b


class TraceDiffView(Vertical):
    """Two trials' traces side by side with the first divergence highlighted.

    Args:
        a: The left trial (e.g. a passing one), or None for none.
        b: The right trial (e.g. a failing one), or None to show only ``a``.
        label_a: Title of the left side, e.g. ``"A: oncall-baseline trial 3 (pass)"``.
        label_b: Title of the right side, e.g. ``"B: oncall-candidate trial 5 (fail)"``.
        normaliser: Which keys to ignore (default: ids, timestamps, durations).
        note: Shown instead of the divergence line when one side is missing,
            e.g. ``"all 12 trials passed: no failing trace to compare"``.
        id: Widget id.

    ``a`` and ``b`` may come from different runs: the view only compares their
    traces. :meth:`set_pair` shows another pair; :meth:`jump_to_divergence`
    scrolls to the divergent step; :attr:`expanded` shows long fields in full.
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
    TraceDiffView #diff-more { color: $text-muted; padding: 0 1; }
    """

    expanded: reactive[bool] = reactive(False, init=False)
    """Show long fields and every row in full."""

    def __init__(
        self,
        a: Trial | None,
        b: Trial | None,
        label_a: str = "A",
        label_b: str = "B",
        normaliser: Normaliser | None = None,
        note: str = "",
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.normaliser = normaliser or Normaliser()
        self.a, self.b = a, b
        self.label_a, self.label_b = label_a, label_b
        self.note = note
        self.alignment: Alignment | None = None
        self.changes: list[FieldChange] = []
        self.divergent_steps: tuple[Any, Any] = (None, None)
        """The two normalised steps of the first divergence (when both sides have one)."""
        self._compute()

    # -- data -------------------------------------------------------------------------------

    @property
    def trace_a(self) -> list[Any]:
        return list(self.a.trace or []) if self.a is not None else []

    @property
    def trace_b(self) -> list[Any]:
        return list(self.b.trace or []) if self.b is not None else []

    @property
    def first_divergence(self) -> int | None:
        """1-based step where the two traces first differ (None: equal or one side)."""
        return self.alignment.first_divergence if self.alignment else None

    def _compute(self) -> None:
        self.changes = []
        self.divergent_steps = (None, None)
        if self.a is None or self.b is None:
            self.alignment = None
            return
        norm = self.normaliser
        self.alignment = align(norm.signatures(self.trace_a), norm.signatures(self.trace_b))
        row = self.alignment.divergence_row
        if row is not None:
            r = self.alignment.rows[row]
            if r.a is not None and r.b is not None:
                self.changes = step_changes(self.trace_a[r.a], self.trace_b[r.b], norm)
                self.divergent_steps = (norm.step(self.trace_a[r.a]), norm.step(self.trace_b[r.b]))

    def set_pair(self, a: Trial | None, b: Trial | None, label_a: str, label_b: str,
                 note: str = "") -> None:
        """Show another pair of trials."""
        self.a, self.b, self.label_a, self.label_b, self.note = a, b, label_a, label_b, note
        self._compute()
        if self.is_mounted:
            self.call_later(self.rebuild)

    # -- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="diff-divergence")
        yield Static(id="diff-labels")
        yield VerticalScroll(id="diff-rows", can_focus=True)

    async def on_mount(self) -> None:
        await self.rebuild()

    def divergence_text(self) -> Text:
        """The line ``first divergence: step N`` and what differs in that step."""
        text = Text()
        if self.a is None or self.b is None:
            text.append("first divergence: none", style="bold")
            text.append(f" — {self.note}" if self.note else " — only one side to show",
                        style="yellow")
            return text
        step = self.first_divergence
        if step is None:
            text.append("first divergence: none", style="bold")
            text.append(" — the traces are equal after normalisation; the outcome was decided "
                        "outside the trace", style="yellow")
            return text
        text.append(f"first divergence: step {step}", style="bold reverse yellow")
        row = self.alignment.rows[self.alignment.divergence_row] if self.alignment else None
        if row is not None and row.a is not None and row.b is not None:
            text.append(f"   differs in: {change_summary(self.changes)}")
            wa, wb = self._changed_word_counts()
            if wa or wb:
                text.append(f" ({wa} words marked on A, {wb} on B)", style="dim")
        elif row is not None and row.a is None:
            text.append(f"   B has an extra step {row.b + 1 if row.b is not None else ''}")
        else:
            text.append("   A goes on where B ends" if row and row.b is None else "")
        text.append("   d: jump here", style="dim")
        return text

    def _changed_word_counts(self) -> tuple[int, int]:
        ha, hb = highlights(self.changes, *self.divergent_steps)
        ca = sum(1 for toks in ha.values() for t, c in toks if c and t.strip())
        cb = sum(1 for toks in hb.values() for t, c in toks if c and t.strip())
        return ca, cb

    def labels_text(self) -> RenderableType:
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(width=1)
        grid.add_column(ratio=1)
        grid.add_column(ratio=1)
        ignored = self.normaliser.ignored_keys_of(self.trace_a + self.trace_b)
        left = Text(self.label_a, style="bold green" if self.a and self.a.passed else "bold red")
        if self.b is None:
            right = Text("")
        else:
            right = Text(self.label_b, style="bold green" if self.b.passed else "bold red")
        grid.add_row("", left, right)
        if ignored:
            grid.add_row("", Text("ignoring " + ", ".join(ignored), style="dim italic"), "")
        return grid

    async def rebuild(self) -> None:
        """Re-render the header lines and every aligned row."""
        self.query_one("#diff-divergence", Static).update(self.divergence_text())
        self.query_one("#diff-labels", Static).update(self.labels_text())
        rows = self.query_one("#diff-rows", VerticalScroll)
        await rows.remove_children()
        widgets = self._row_widgets()
        if widgets:
            await rows.mount_all(widgets)
        rows.scroll_home(animate=False)

    def _row_widgets(self) -> list[Static]:
        ta, tb = self.trace_a, self.trace_b
        norm = self.normaliser
        out: list[Static] = []
        if self.a is not None and self.a.trace is None or self.b is not None and self.b.trace is None:
            missing = [s for s, t in (("A", self.a), ("B", self.b)) if t is not None and t.trace is None]
            out.append(Static(Text(f"trial {' and '.join(missing)} has no trace", style="yellow"),
                              classes="diff-row"))
        if self.b is None or self.alignment is None:
            rows = [(i, None, EQUAL) for i in range(len(ta))]
            div_row = None
        else:
            rows = [(r.a, r.b, r.tag) for r in self.alignment.rows]
            div_row = self.alignment.divergence_row
        limit = len(rows) if self.expanded else MAX_ROWS
        ha, hb = highlights(self.changes, *self.divergent_steps)
        for n, (ia, ib, tag) in enumerate(rows[:limit]):
            is_div = n == div_row
            left = render_step(ia + 1, norm.step(ta[ia]), self.expanded, ha if is_div else None) \
                if ia is not None else Text("")
            right = render_step(ib + 1, norm.step(tb[ib]), self.expanded, hb if is_div else None) \
                if ib is not None else Text("")
            grid = Table.grid(expand=True, padding=(0, 1))
            grid.add_column(width=1)
            grid.add_column(ratio=1, overflow="fold")  # a long word (JSON) wraps, not cut to "…"
            if self.b is not None:
                grid.add_column(ratio=1, overflow="fold")
                marker = "▶" if is_div else MARKERS.get(tag, " ")
                grid.add_row(Text(marker, style="bold yellow" if is_div else "red"), left, right)
            else:
                grid.add_row(" ", left)
            classes = "diff-row"
            if div_row is None or n < div_row:
                classes += " -shared" if self.b is not None and tag == EQUAL else ""
            elif is_div:
                classes += " -divergence"
            elif tag != EQUAL:
                classes += " -after"
            out.append(Static(grid, classes=classes, id=f"diff-row-{n}"))
        if len(rows) > limit:
            out.append(Static(f"… {len(rows) - limit} more steps (x: show all)", id="diff-more"))
        if not rows and not out:
            out.append(Static(Text("(empty trace)", style="dim"), classes="diff-row"))
        return out

    # -- actions ----------------------------------------------------------------------------

    def focus_rows(self) -> None:
        """Give the aligned rows the keyboard focus (↑ ↓ pgup pgdn home end scroll them)."""
        self.query_one("#diff-rows", VerticalScroll).focus()

    def jump_to_divergence(self) -> bool:
        """Scroll the divergent step to the top; False if there is none."""
        if self.alignment is None or self.alignment.divergence_row is None:
            return False
        rows = self.query_one("#diff-rows", VerticalScroll)
        target = rows.query(f"#diff-row-{self.alignment.divergence_row}")
        if not target:
            return False
        rows.scroll_to_widget(target.first(), top=True, animate=False)
        return True

    async def watch_expanded(self) -> None:
        await self.rebuild()

    def summary_lines(self) -> Group:
        """The divergence line and the labels (for export)."""
        return Group(self.divergence_text(), self.labels_text())
