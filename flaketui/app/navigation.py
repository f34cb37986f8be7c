"""Screens opened by name: the one table of the screens a screen may open, and how the app opens one.

A screen opens another by posting :class:`~flaketui.app.messages.Open` (``Open("plan", run=…,
task=…)``); :class:`~flaketui.app.app.FlakeApp` handles it once, with :func:`open_screen`. No
screen imports another (an import-linter contract in ``pyproject.toml`` says so): a screen is a
view that can change without the others, and this module is the only one that names them all.

Each entry is ``"module:attribute"``, imported when the screen first opens (a screen's module
costs its imports only when it is used, as when each screen was imported inside the function
that opened it). The attribute is a screen class, made from the message's arguments, or an
opener, a function of the app and the arguments that returns the screen to push, or None when
there is nothing to open (it said why) or it opened a dialog first (a pair of runs to pick).
The app is any Textual app here (an opener types it as its own): this module imports neither
the app nor a screen, so it is in no import loop.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.screen import Screen

if TYPE_CHECKING:
    from flaketui.app.messages import Open

SCREENS: dict[str, str] = {
    "traces": "flaketui.app.screens.traces:show_task_traces",
    "inspector": "flaketui.app.screens.inspector:InspectorScreen",
    "compare": "flaketui.app.screens.compare:open_compare",
    "compare-traces": "flaketui.app.screens.compare_traces:CompareTracesScreen",
    "across-runs": "flaketui.app.screens.across_runs:open_across_runs",
    "across-traces": "flaketui.app.screens.compare_traces:AcrossTracesScreen",
    "matrix": "flaketui.app.screens.matrix:open_matrix",
    "plan": "flaketui.app.screens.plan:PlanScreen",
    "history": "flaketui.app.screens.history:HistoryScreen",
    "failure-modes": "flaketui.app.screens.failure_modes:FailureModesScreen",
    "problems": "flaketui.app.screens.problems:ProblemsScreen",
    "run-picker": "flaketui.app.screens.run_picker:RunPicker",
    "export": "flaketui.app.screens.export:ExportPrompt",
}
"""Every screen a screen may open: its name → ``"module:attribute"`` (a screen class, or an
opener: ``f(app, **arguments)`` returning the screen to push, or None; it may be async)."""

Opener = Callable[..., "Screen[Any] | None | Awaitable[Screen[Any] | None]"]
"""A screen class, or a function of the app and the arguments (see :data:`SCREENS`)."""


def factory(name: str) -> Opener:
    """What :data:`SCREENS` names ``name`` (its module imported now).

    Raises:
        KeyError: ``name`` is not a registered screen.
    """
    module, _, attribute = SCREENS[name].partition(":")
    return getattr(import_module(module), attribute)  # type: ignore[no-any-return]


async def make_screen(app: App[Any], name: str, arguments: dict[str, Any]) -> Screen[Any] | None:
    """The screen registered as ``name`` made from ``arguments`` (None: its opener opened
    nothing, and said why, or opened a dialog first)."""
    made = factory(name)
    if isinstance(made, type) and issubclass(made, Screen):
        return made(**arguments)
    screen = made(app, **arguments)
    if inspect.isawaitable(screen):
        screen = await screen
    return screen  # type: ignore[return-value]


async def open_screen(app: App[Any], event: Open) -> None:
    """Push the screen ``event`` names, its result to ``event.callback`` when it is dismissed."""
    screen = await make_screen(app, event.name, event.arguments)
    if screen is not None:
        app.push_screen(screen, event.callback)
