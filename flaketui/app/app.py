"""The flaketui Textual app: :class:`FlakeApp` and :func:`make_app`.

``cli.main(paths) -> make_app(paths).run()``; the default screen is the
:class:`~flaketui.app.screens.tasks.TasksScreen`, which loads the logs in a
thread worker and shows the task table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from flaketui.app.messages import RunsLoaded
from flaketui.app.screens.tasks import TasksScreen
from flaketui.model import FieldMap, TrialLog
from flaketui.traces import Normaliser


class FlakeApp(App[int]):
    """Find flaky tasks, see why they flake, from the keyboard.

    State shared by every screen: :attr:`trial_log` (the loaded trials, None while
    loading), :attr:`k`, :attr:`normaliser` (from ``ignore_keys``), the gate
    thresholds and the paths given on the command line.
    """

    CSS_PATH = "flaketui.tcss"
    TITLE = "flaketui"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit", tooltip="Leave flaketui"),
        Binding("question_mark", "help", "Help", id="help", tooltip="Every key of every screen"),
    ]

    def __init__(
        self,
        paths: Sequence[str],
        k: int | None = None,
        fields: FieldMap | None = None,
        min_pass_hat_k: float | None = None,
        max_flakiness: float | None = None,
        ignore_keys: Sequence[str] = (),
        triage: str | None = None,
        compare: Sequence[str] | None = None,
        watch: bool = False,
    ) -> None:
        super().__init__()
        self.watch = watch
        """Follow the logs while they are written (``--watch``): the table updates live."""
        self.paths = [str(p) for p in paths]
        self.k: int | None = k
        """k for pass@k and pass^k (None until the log is loaded when not given)."""
        self.k_is_default = k is None
        """True while k is the default (the smallest trial count), not chosen by the user."""
        self.fields = fields or FieldMap()
        self.min_pass_hat_k = min_pass_hat_k
        self.max_flakiness = max_flakiness
        self.ignore_keys = tuple(ignore_keys)
        self.normaliser = Normaliser.with_keys(self.ignore_keys)
        """Drops ids, timestamps, durations and ``ignore_keys`` from trace steps."""
        self.trial_log: TrialLog | None = None
        """Every loaded trial (set when loading finishes)."""
        self.triage_path = triage
        """The triage notes file (``--triage``); None: beside the first log."""
        self.compare_on_load: tuple[str, ...] | None = None if compare is None else tuple(compare)
        """Open the comparison pane once loaded: runs (A, B), or () for the first two."""

    def get_default_screen(self) -> Screen:
        return TasksScreen()

    @property
    def tasks_screen(self) -> TasksScreen:
        """The main screen (at the bottom of the screen stack)."""
        screen = self.screen_stack[0]
        assert isinstance(screen, TasksScreen)
        return screen

    @on(RunsLoaded)
    def open_triage(self, event: RunsLoaded) -> None:
        """Once loaded: open the triage notes (telling of a bad file) and, for
        ``compare --tui``, the comparison pane."""
        from flaketui.app.screens.compare import open_compare_on_load

        open_compare_on_load(self)

    def action_help(self) -> None:
        """Show every key of every screen."""
        from flaketui.app.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for target in reversed(self.screen_stack):
            palette = getattr(target, "palette_commands", None)
            if palette is not None:
                for title, help_text, action in palette():
                    yield SystemCommand(title, help_text, partial(target.run_action, action))
                break
        yield SystemCommand("Keys", "Every key of every screen", self.action_help)


def make_app(
    paths: Sequence[str],
    k: int | None = None,
    fields: FieldMap | None = None,
    min_pass_hat_k: float | None = None,
    max_flakiness: float | None = None,
    ignore_keys: Sequence[str] = (),
    triage: str | None = None,
    compare: Sequence[str] | None = None,
    watch: bool = False,
) -> FlakeApp:
    """Build the app for ``paths`` (files, directories, globs of trial logs).

    ``triage`` is the triage notes file (default: beside the first log);
    ``compare`` opens the comparison pane once loaded: two run names, or an
    empty sequence for the first two runs; ``watch`` follows logs still being
    written (new trials appear and the statistics update).
    """
    return FlakeApp(paths, k=k, fields=fields, min_pass_hat_k=min_pass_hat_k,
                    max_flakiness=max_flakiness, ignore_keys=ignore_keys, triage=triage,
                    compare=compare, watch=watch)
