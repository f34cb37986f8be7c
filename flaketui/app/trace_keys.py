"""What both trace screens share (the task's traces, and A vs B in the comparison): their keys
(mode, inspector, search, hunks, folding) as the :class:`TraceKeys` mixin, and how a side's
trial is labelled. A module of its own, not a screen's: no screen imports another."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.widgets import Input, Static

from flaketui.app.messages import Open
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from flaketui.app.widgets.trace_view import TraceDiffView
    from flaketui.model import Trial


def trial_label(side: str, trial: Trial, position: int, total: int, kind: str) -> str:
    """``A: trial 3 (pass) · 1 of 10 passing``."""
    outcome = "pass" if trial.passed else "fail"
    return f"{side}: {trial.run} trial {trial.trial} ({outcome}) · {position + 1} of {total} {kind}"


class TraceKeys:
    """The keys both trace screens share: mode, inspector, search, hunks, folding.

    Mixed into a :class:`FlakeScreen` whose :attr:`trace_view` is the shown view.
    """

    trace_view: TraceDiffView | None

    def deferred(self, action: str) -> bool:
        """True when ``action`` (the name of a key's action, with its arguments) cannot run yet
        because the traces are still being read: it is then queued, and said so. A view
        always shown answers False."""
        return False

    def _search_input(self) -> Input:
        return self.query_one("#trace-search", Input)  # type: ignore[attr-defined, no-any-return]

    def action_search(self) -> None:
        """Show the search box."""
        box = self._search_input()
        box.display = True
        box.focus()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        """The search box's enter: find the text in both traces."""
        if event.input.id != "trace-search":
            return
        event.stop()
        box = self._search_input()
        box.display = False
        view = self.trace_view
        if view is None:
            return
        await view.search(event.value)
        view.focus_rows()
        self.search_changed()  # the counter line says when no step holds the text

    @property
    def searching(self) -> bool:
        """A search is active (found or not): ``n`` / ``N`` go to its matches, ``escape`` clears it."""
        try:
            view = self.trace_view
        except NoMatches:  # not composed yet
            return False
        return view is not None and bool(view.query_text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``next_match`` (the footer's ``n Next match``) only while a search is active; the
        screen's own ``n`` otherwise."""
        if action == "next_match":
            return self.searching
        return super().check_action(action, parameters)  # type: ignore[misc, no-any-return]

    def search_changed(self) -> None:
        """Show the match counter (``3/17``) and the keys of the search, or neither."""
        line = self.query_one("#trace-match", Static)  # type: ignore[attr-defined]
        view = self.trace_view
        if view is None or not view.query_text:
            line.display = False
        else:
            line.update(match_text(view.query_text, view.matches, view.current))
            line.display = True
        self.refresh_bindings()  # type: ignore[attr-defined]

    async def clear_search(self) -> bool:
        """Clear an active search (its marks and its counter); True if there was one."""
        view = self.trace_view
        if view is None or not view.query_text:
            return False
        await view.search("")
        self._search_input().value = ""
        self.search_changed()
        return True

    def close_search(self) -> bool:
        """Hide the search box if shown; True if it was."""
        box = self._search_input()
        if box.display:
            box.display = False
            if self.trace_view is not None:
                self.trace_view.focus_rows()
            return True
        return False

    async def next_match(self, step: int) -> bool:
        view = self.trace_view
        moved = view is not None and await view.jump_match(step)
        self.search_changed()
        return moved

    async def action_next_match(self, step: int) -> None:
        """Next (or previous) search match."""
        if not await self.next_match(step):
            view = self.trace_view
            query = "" if view is None else view.query_text
            self.notify(f"no step holds {visible(query)!r} (escape: clear the search)" if query  # type: ignore[attr-defined]
                        else "no search: / searches both traces", timeout=3, markup=False)

    async def action_next_hunk(self, step: int) -> None:
        """Next (or previous) run of differing steps."""
        if self.deferred(f"next_hunk({step})"):
            return
        view = self.trace_view
        if view is None or not await view.jump_hunk(step):
            self.notify("no more differing steps that way", timeout=3)  # type: ignore[attr-defined]
        elif view.query_text:
            self.search_changed()

    def action_toggle_fold(self) -> None:
        """Fold runs of identical steps, or show them all."""
        if self.deferred("toggle_fold"):
            return
        view = self.trace_view
        if view is not None:
            view.folded = not view.folded

    def action_toggle_expand(self) -> None:
        """Show long step contents in full, or cut them again."""
        if self.deferred("toggle_expand"):
            return
        view = self.trace_view
        if view is not None:
            view.expanded = not view.expanded

    def action_inspect(self, side: str) -> None:
        """Open the trial inspector on side A's (or B's) trial."""
        if self.deferred(f"inspect({side!r})"):
            return
        view = self.trace_view
        trial = None if view is None else view.a if side == "a" else view.b
        if trial is None:
            self.notify(f"no trial on side {side.upper()}", timeout=3)  # type: ignore[attr-defined]
            return
        self.open_inspector(trial)

    def open_inspector(self, trial: Trial) -> None:
        """Open the trial inspector on ``trial``."""
        self.post_message(Open("inspector", trial=trial, row=self.row_of(trial)))  # type: ignore[attr-defined]

    def row_of(self, trial: Trial) -> int | None:
        """The log row of ``trial`` (None: unknown)."""
        return None


def match_text(query: str, matches: Sequence[int], current: int | None) -> Text:
    """The search's counter: ``search "turn 3": 3/17`` (``–/17`` away from a match; ``0/0`` and
    how to clear it when nothing matched), with the keys of the search."""
    text = Text("search ", style="dim")
    text.append(f'"{visible(query)}"', style="bold")
    if matches:
        pos = str(matches.index(current) + 1) if current in matches else "–"
        text.append(f": {pos}/{len(matches)}", style="bold")
        text.append("   n / N: next / previous match · escape: clear", style="dim")
    else:
        text.append(": 0/0 no step holds it", style="bold yellow")
        text.append("   escape: clear the search", style="dim")
    return text


TRACE_KEYS = [
    Binding("v", "toggle_mode", "Mode", id="divergence-mode",
            tooltip="Divergence mode: the agent's actions only, or every step (toggle)"),
    Binding("i", "inspect('a')", "Inspect", id="inspect-a",
            tooltip="The trial inspector: outcome, score, error, metrics, grader details, raw JSON (side A)"),
    Binding("I", "inspect('b')", "Inspect B", id="inspect-b", show=False,
            tooltip="The trial inspector of side B's trial"),
    Binding("slash", "search", "Search", id="trace-search",
            tooltip="Search the text of both traces (n / N: next / previous match)"),
    Binding("right_square_bracket", "next_hunk(1)", "Next diff", id="next-hunk",
            tooltip="Next run of differing steps"),
    Binding("left_square_bracket", "next_hunk(-1)", "Prev diff", id="prev-hunk", show=False,
            tooltip="Previous run of differing steps"),
    Binding("z", "toggle_fold", "Fold", id="toggle-fold", show=False,
            tooltip="Unfold the runs of identical steps, or fold them again"),
]
"""Keys both trace screens add to their own (the actions are :class:`TraceKeys`')."""

SEARCH_KEYS = [
    Binding("n", "next_match(1)", "Next match", id="next-match",
            tooltip="Next search match (shown while a search is active)"),
    Binding("N", "next_match(-1)", "Prev match", id="prev-match", show=False,
            tooltip="Previous search match"),
]
"""The search's keys, active while a search is (:meth:`TraceKeys.check_action`); both trace
screens put them early in their keys, so that the footer shows ``n Next match``."""
