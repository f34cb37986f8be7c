"""Every key of every screen, at 80×24 and 200×50, on real harness logs: a τ²-bench log whose
task ids look like Rich markup, a Terminal-Bench run with errored trials and a Harbor job.

From the task table the walk opens every screen a key reaches and, on each, presses every key
its bindings list (the screen's, the focused widget's and the app's) and then goes back: no key
raises, no error is notified, and what is left on top is a flaketui screen. At 80×24 the trace
and the flip list keep at least half the rows."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from textual.binding import Binding
from textual.pilot import Pilot
from textual.screen import ModalScreen, Screen
from textual.widgets import Input

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens import triage_dialogs
from flaketui.app.screens.base import FlakeScreen
from flaketui.app.screens.compare import CompareScreen
from flaketui.app.screens.compare_traces import CompareTracesScreen
from flaketui.app.screens.run_picker import RunPicker
from flaketui.app.screens.tasks import TasksScreen
from flaketui.app.screens.traces import TaskTraceScreen
from tests.conftest import ROOT, settle

pytestmark = pytest.mark.slow

DATA = ROOT / "tests" / "data"
SIZES = {"80x24": (80, 24), "200x50": (200, 50)}

SKIPPED_ACTIONS = {
    "quit",  # q ends the process: nothing would be left to press keys on
    "open_in_editor",  # o suspends the app to run $EDITOR, which needs a real terminal (headless cannot suspend)
}
"""Actions whose keys the walk never presses, and why. Textual's own App keys (ctrl+q quits,
ctrl+c says how to quit) are not flaketui's and not pressed, nor is a screenshot (no key takes
one: the palette's command does). The task table's ctrl+c is pressed: once loaded it must not quit."""

LEAVING = {"back", "close", "dismiss", "dismiss_none", "cancel", "app.pop_screen", "example"}
"""Actions that leave the screen: pressed last (each after re-entering the screen)."""
NARROWING = {"toggle_flaky", "toggle_all", "toggle_unreviewed", "filter", "next_filter"}
"""Actions that narrow what a screen lists: pressed after the others, so that a key that needs
a highlighted row (traces, a label, a note, the history) still has one."""
DEEP = {"show_traces", "matrix", "compare", "select"}
"""Actions that open a screen with screens of its own: pressed after the dialogs' keys, so that
a dialog both reach (help, a label, a note) is walked from the cheaper one to re-enter."""
EXTRA_KEYS: dict[type, tuple[tuple[str, str], ...]] = {
    TasksScreen: (("ctrl+p", ""),),
    triage_dialogs.RunPicker: (("enter", "pick(runs)"),),
    RunPicker: (("enter", "pick(run)"),),
}
"""Keys outside flaketui's BINDINGS, with what they do: the command palette (on the task table
only: it is Textual's, the same on every screen) and ``enter`` in the run pickers (their option
lists'), which picks."""


def bracketed_tau2(tmp_path: Path) -> list[str]:
    """Two real τ²-bench logs (one airline suite, two agents) whose task ids are made to look
    like Rich markup in a copy: ``[b]3[/b]``, ``[red]5``, ``[/]7``… must show as written."""
    ids = {"3": "[b]3[/b]", "5": "[red]5", "7": "[/]7", "9": "[link=x]9[/link]", "27": "[bold red]27",
           "46": "46[/]", "40": "[i]40"}
    out = []
    for name in ("airline_context_agent_gemini-2.5-flash_2trials.json",
                 "airline_langchain_agent_gpt-oss-120b_1trial.json"):
        doc = json.loads((DATA / "tau2" / name).read_text())
        for task in doc["tasks"]:
            task["id"] = ids.get(task["id"], f"[b]{task['id']}")
        for sim in doc["simulations"]:
            sim["task_id"] = ids.get(sim["task_id"], f"[b]{sim['task_id']}")
            for message in sim["messages"][:2]:
                if isinstance(message.get("content"), str):
                    message["content"] = "[bold red]" + message["content"] + " [/] [link=file:///etc]x[/link]"
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        out.append(str(path))
    return out


INPUTS: dict[str, tuple[Callable[[Path], list[str]], str, tuple[str, ...]]] = {
    "tau2-bracketed": (bracketed_tau2, "[", ()),
    "terminal-bench": (lambda tmp: [str(DATA / "terminal_bench")], "e", ()),
    "harbor": (lambda tmp: [str(DATA / "harbor" / "hello-world-job")], "hello", ()),
}
"""Input name → (the log paths, written under tmp_path when made; the text typed into a
filter or search box; the keys that highlight the task the walk starts from: on the Harbor job
``hello-world``, whose trials have trajectories, the first row: counted as Harbor counts its
timed-out trial, it is the job's flaky task)."""



def keys_of(screen: Screen[Any], app: FlakeApp) -> list[tuple[str, bool]]:
    """(key, whether it leaves) for every key the bindings of ``screen`` (its classes, the focused
    widget's) and of the app list, flaketui's own, less :data:`SKIPPED_ACTIONS`: the app's keys
    first, then the screen's, the deep ones, the narrowing ones and the leaving ones. ``?`` is
    pressed on the task table only: the help screen is one, the same from every screen."""
    own: list[type] = list(type(screen).__mro__)
    focused = app.focused
    if focused is not None and focused.screen is screen:
        own += type(focused).__mro__
    classes = [c for c in (*type(app).__mro__, *own) if c.__module__.startswith("flaketui")]
    found: dict[str, str] = {}
    for cls in classes:
        for raw in cls.__dict__.get("BINDINGS", []):
            binding = raw if isinstance(raw, Binding) else Binding(*raw)
            for key in binding.key.split(","):
                found.setdefault(key.strip(), binding.action)
    for key, action in EXTRA_KEYS.get(type(screen), ()):
        found.setdefault(key, action)

    def leaves(action: str) -> bool:
        return action in LEAVING or action.startswith("pick(")

    def rank(key: str) -> int:
        action = found[key]
        return 3 if leaves(action) else 2 if action in NARROWING else 1 if action in DEEP else 0

    skipped = SKIPPED_ACTIONS if isinstance(screen, TasksScreen) else SKIPPED_ACTIONS | {"help"}
    keys = sorted((k for k, action in found.items() if action not in skipped), key=rank)
    return [(key, leaves(found[key])) for key in keys]


@dataclass
class Walk:
    """One app's walk through its screens; what went wrong is kept, the walk goes on."""

    app: FlakeApp
    pilot: Pilot
    probe: str
    """Typed into each filter or search box a key focuses."""
    visited: set[type] = field(default_factory=set)
    notified: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(where, severity, title, message) of every notification."""
    where: str = "loading"
    pressed: int = 0
    reached: dict[str, str] = field(default_factory=dict)
    """Each screen walked → the keys that reached it from the task table."""
    stuck: list[str] = field(default_factory=list)
    """Screens that escape did not leave."""
    eaten: list[str] = field(default_factory=list)
    """Keys a screen lists that a box it focused took as text instead."""

    def watch_notifications(self, monkeypatch: pytest.MonkeyPatch) -> None:
        notify = self.app.notify

        def record(message: str, **kwargs: Any) -> None:
            self.notified.append((self.where, str(kwargs.get("severity", "information")),
                                  str(kwargs.get("title", "")), str(message)))
            notify(message, **kwargs)

        monkeypatch.setattr(self.app, "notify", record)

    async def press(self, key: str, where: str) -> None:
        self.where = where
        await self.pilot.press(key)
        self.pressed += 1
        await quick_settle(self.pilot)
        self.check()

    def check(self) -> None:
        error = self.app._exception
        if error is not None:
            raise AssertionError(f"{self.where}: {type(error).__name__}: {error}") from error
        assert self.app.is_running, f"{self.where}: the app ended (return code {self.app.return_code})"
        assert isinstance(self.app.screen, Screen), self.where

    async def type_into(self, screen: Screen[Any]) -> None:
        """A key focused a box of ``screen``: type the probe (a number into the budget) and enter;
        escape if the box keeps the focus."""
        box = self.app.focused
        if not isinstance(box, Input) or box.screen is not screen:
            return
        where = self.where
        text = "3" if box.id == "budget" else self.probe
        self.where = f"{where}, typing {text!r}"
        await self.pilot.press(*text)
        await self.pilot.press("enter")
        await settle(self.pilot)
        self.check()
        if self.app.focused is box and self.app.screen is screen:
            await self.press("escape", f"{where}, escape from the box")

    async def back_to(self, depth: int) -> None:
        """Escape until ``depth`` screens are left (popped if escape does not leave)."""
        for _ in range(4):
            if len(self.app.screen_stack) <= depth:
                return
            await self.press("escape", f"{self.where}, then escape")
        while len(self.app.screen_stack) > depth:
            self.stuck.append(f"{self.where}: escape does not leave {type(self.app.screen).__name__}")
            self.app.pop_screen()
            await settle(self.pilot)

    async def reenter(self, path: tuple[str, ...], kind: type) -> Screen[Any]:
        await self.back_to(1)
        tasks = self.app.tasks_screen
        if tasks.filter_text:
            await self.press("escape", "clearing the filter")
        for key in path:
            await self.press(key, f"re-entering {kind.__name__} by {path_text(path)}")
        assert isinstance(self.app.screen, kind), f"{path_text(path)} no longer reaches {kind.__name__}"
        return self.app.screen

    async def explore(self, path: tuple[str, ...]) -> None:
        """Press every key of the screen on top (reached by ``path`` from the task table), opening
        and walking each screen not yet walked that a key pushes."""
        screen = self.app.screen
        kind = type(screen)
        self.visited.add(kind)
        self.reached[kind.__name__] = path_text(path)
        depth = len(self.app.screen_stack)
        drawn = False
        for key, leaves in keys_of(screen, self.app):
            if self.app.screen is not screen:
                screen = await self.reenter(path, kind)
            if leaves and not drawn:
                await settle(self.pilot)  # drawn in full after the other keys
                self.check()
                drawn = True
            box = self.app.focused
            before = box.value if isinstance(box, Input) and not isinstance(screen, ModalScreen) else None
            await self.press(key, f"{kind.__name__} {key!r} (by {path_text(path)})")
            if before is not None and isinstance(box, Input) and box.value != before:
                self.eaten.append(f"{self.where}: typed into #{box.id} ({before!r} -> {box.value!r})")
            await self.type_into(screen)
            top = self.app.screen
            if top is screen:
                continue
            if screen in self.app.screen_stack and len(self.app.screen_stack) > depth:
                if type(top) not in self.visited and type(top).__module__.startswith("flaketui"):
                    await self.explore((*path, key))
                await self.back_to(depth)
            else:
                assert is_flaketui(self.app.screen), \
                    f"{self.where}: left for {type(self.app.screen).__name__}, not a flaketui screen"


async def quick_settle(pilot: Pilot) -> None:
    """:func:`~tests.conftest.settle` without waiting for the CPU to go idle (up to a second a
    pause on a busy machine) nor forcing a redraw: the workers, every message, the workers they
    started. The screen is drawn in full once its keys are pressed (:meth:`Walk.explore`)."""
    await pilot.app.workers.wait_for_complete()
    await pilot._wait_for_screen()  # a finished worker may post work that starts another
    await pilot.app.workers.wait_for_complete()


def is_flaketui(screen: Screen[Any]) -> bool:
    """A screen of flaketui's (the full ones are :class:`FlakeScreen`, see
    :func:`test_every_full_screen_is_a_flake_screen`), not Textual's."""
    return isinstance(screen, FlakeScreen) or type(screen).__module__.startswith("flaketui.app.screens.")


def path_text(path: tuple[str, ...]) -> str:
    return " ".join(path) or "start"


EVERYWHERE = {"TasksScreen", "HelpScreen", "PlanScreen", "LabelPicker", "NoteEditor", "ExportPrompt",
              "HistoryScreen", "ProblemsScreen", "FailureModesScreen", "TaskTraceScreen", "InspectorScreen"}
"""The screens the walk reaches on every input."""
WITH_TWO_RUNS = {"RunPicker", "MatrixScreen", "CompareScreen", "CompareTracesScreen"}
"""And where two runs or more are loaded (the Harbor job has one)."""


def record_history(paths: list[str], tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    from flaketui.cli import main

    result = CliRunner().invoke(main, ["history", "record", *paths, "--history", url])
    assert result.exit_code == 0, result.output
    return url


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("name", list(INPUTS))
async def test_every_key_of_every_screen(name: str, size: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every screen reached, every key pressed: nothing raises or is notified as an error, no key is
    typed into a box, escape leaves every screen it should, and the task table is left on top."""
    make_paths, probe, start = INPUTS[name]
    paths = make_paths(tmp_path)
    monkeypatch.chdir(tmp_path)  # ctrl+s writes its file into the current folder
    url = record_history(paths, tmp_path)
    app = make_app(paths, triage=str(tmp_path / "notes.json"), history=url)
    async with app.run_test(size=SIZES[size]) as pilot:
        walk = Walk(app, pilot, probe)
        walk.watch_notifications(monkeypatch)
        await settle(pilot)
        walk.check()
        assert isinstance(app.screen, TasksScreen)
        for key in start:
            await walk.press(key, f"start {key!r}")
        await walk.explore(())
        await walk.back_to(1)
        assert isinstance(app.screen, TasksScreen)
    assert app.return_code in (None, 0)
    failed = [n for n in walk.notified if n[1] == "error" or "failed" in n[2].lower()]
    assert not failed, failed
    assert not walk.eaten, walk.eaten
    assert not walk.stuck, walk.stuck
    expected = EVERYWHERE | (WITH_TWO_RUNS if name != "harbor" else set())
    assert expected <= set(walk.reached), (expected - set(walk.reached), walk.reached)


HALF_ROWS_PANES = [
    ("tau2-bracketed", ("enter",), TaskTraceScreen, "#trace-diff #diff-rows"),
    ("terminal-bench", ("enter",), TaskTraceScreen, "#trial-list"),  # no trial has a trace: the list is the pane
    ("harbor", ("enter",), TaskTraceScreen, "#trace-diff #diff-rows"),  # hello-world: its trajectories
    ("tau2-bracketed", ("c",), CompareScreen, "#flip-table"),
    ("terminal-bench", ("c", "enter"), CompareScreen, "#flip-table"),  # enter in the run picker: the first two runs
    ("tau2-bracketed", ("c", "enter"), CompareTracesScreen, "#compare-trace-diff #diff-rows"),
]
"""(input, keys from the task table, the screen they open, its main pane). The Harbor job has
one run (no comparison pane); the Terminal-Bench results have no traces (no A vs B traces)."""


@pytest.mark.parametrize(("name", "keys", "kind", "pane"), HALF_ROWS_PANES,
                         ids=[f"{n}-{k.__name__}" for n, _, k, _ in HALF_ROWS_PANES])
async def test_at_80x24_the_main_pane_gets_half_the_rows(name: str, keys: tuple[str, ...], kind: type, pane: str,
                                                         tmp_path: Path) -> None:
    """At 80x24 the main pane of each screen gets half the rows."""
    make_paths, _, _ = INPUTS[name]
    app = make_app(make_paths(tmp_path), triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=SIZES["80x24"]) as pilot:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        assert isinstance(app.screen, kind)
        rows = app.screen.query_one(pane).region.height
        assert rows >= app.size.height / 2, f"{pane}: {rows} of {app.size.height} rows"


def test_every_full_screen_is_a_flake_screen() -> None:
    """Every screen that is not a dialog subclasses FlakeScreen: it reaches the app typed and shows
    a failed worker's error instead of a silent "reading…"."""
    import importlib
    import pkgutil

    import flaketui.app.screens as screens

    full = []
    for module in pkgutil.iter_modules(screens.__path__):
        loaded = importlib.import_module(f"{screens.__name__}.{module.name}")
        full += [cls for cls in vars(loaded).values() if isinstance(cls, type) and issubclass(cls, Screen)
                 and not issubclass(cls, ModalScreen) and cls.__module__ == loaded.__name__]
    assert full
    assert [cls.__name__ for cls in full if not issubclass(cls, FlakeScreen)] == []


async def test_the_matrix_names_the_key_that_chooses_run_x(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """enter when run X is the last run: the hint names the key that chooses run X."""
    from flaketui.app.screens.matrix import MatrixScreen
    from tests.helpers.app import record_notifications

    app = make_app(bracketed_tau2(tmp_path), triage=str(tmp_path / "notes.json"))
    (key,) = [b.key for b in MatrixScreen.BINDINGS if isinstance(b, Binding) and b.action == "next_since"]
    async with app.run_test(size=SIZES["200x50"]) as pilot:
        shown = record_notifications(app, monkeypatch)
        await settle(pilot)
        for press in ("m", key, "enter"):  # two runs: one press of the key makes run X the last
            await pilot.press(press)
            await settle(pilot)
        assert isinstance(app.screen, MatrixScreen)
        hints = [m for m in shown if m.startswith("run X is the last run")]
        assert hints and all(f"{key} chooses another" in m for m in hints), shown
