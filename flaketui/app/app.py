"""The flaketui Textual app: :class:`AppOptions`, :class:`FlakeApp` and :func:`make_app`.

``cli`` runs ``FlakeApp(AppOptions(paths, k=…))``; the default screen is the
:class:`~flaketui.app.screens.tasks.TasksScreen`, which loads the logs in a
thread worker and shows the task table.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import var
from textual.screen import Screen

from flaketui._runtime import freeze, unfreeze
from flaketui.app import navigation
from flaketui.app.messages import Open, Recorded, RunsLoaded
from flaketui.app.screens import triage_dialogs
from flaketui.app.screens.tasks import TasksScreen
from flaketui.loading.options import LoadOptions
from flaketui.model import FieldMap, TrialLog
from flaketui.sanitize import visible
from flaketui.session.state import Session
from flaketui.traces import Normaliser
from flaketui.triage import TriageStore

if TYPE_CHECKING:
    from flaketui.history.owners import Rule
    from flaketui.loading.options import LoadOptions


@dataclass(frozen=True)
class AppOptions:
    """What the command line asks of the app (``make_app``'s keyword arguments)."""

    paths: tuple[str, ...]
    """Files, directories and globs of trial logs."""
    k: int | None = None
    """k for pass@k and pass^k; None: the trials most tasks have (the mode of trials per task,
    errored included), which follows the mode up as trials arrive with ``watch``."""
    fields: FieldMap = field(default_factory=FieldMap)
    """Which JSON fields hold what."""
    min_pass_hat_k: float | None = None
    """The gate's floor on suite pass^k (shown in the summary when set)."""
    max_flakiness: float | None = None
    """The gate's cap on any task's flakiness."""
    ignore_keys: tuple[str, ...] = ()
    """Step keys dropped before traces are compared (``--ignore-key``)."""
    triage: str | None = None
    """The triage notes file (``--triage``); None: beside the first log."""
    compare: tuple[str, ...] | None = None
    """Open the comparison pane once loaded: runs (A, B), or () for the first two."""
    watch: bool = False
    """Follow the logs while they are written (``--watch``): the table updates live."""
    divergence: str | None = None
    """Divergence mode of every trace comparison (``--divergence``): ``actions`` (the agent's
    tool calls and final answer) or ``all`` (every step); None: ``actions`` when a trace has a
    user role besides the agent (:func:`flaketui.traces.default_mode`), else ``all``."""
    sources_roots: tuple[str, ...] = ()
    """Folders or URL prefixes a Parquet trial table's ``source`` may point into besides the
    table's own folder (``--sources-root``; :mod:`flaketui.loading.formats.parquet_checks`):
    put into :attr:`load`."""
    load: LoadOptions | None = None
    """How the logs are read (``--sources-root``, ``--timeout``, ``--no-cache``, ``--scheduler``):
    passed to every load, never set for the process; None: the defaults."""
    history: str | None = None
    """The history ``H`` reads a task's timeline from, the ``state`` column its states and
    ``record`` records into (``--history URL``); None: the one ``flaketui history`` uses
    (:func:`flaketui.history.default_url`)."""
    record: bool = False
    """Once loaded, record every run in the history, in a thread worker (``--record``): the
    app starts as fast as without it; a notification says what was recorded, or why not."""
    owners: tuple[Rule, ...] = ()
    """An owners file's rules (``--owners``): the task table's ``owner`` column, ``H``'s owner."""
    flaky_cap: float | None = None
    """The flakiness cap the task classes are stated against (``--flaky-cap``); None: the default."""

    def __post_init__(self) -> None:
        # Callers pass lists (and fields=None for the defaults); the options keep tuples.
        object.__setattr__(self, "paths", tuple(str(p) for p in self.paths))
        object.__setattr__(self, "fields", self.fields or FieldMap())
        object.__setattr__(self, "ignore_keys", tuple(self.ignore_keys))
        object.__setattr__(self, "owners", tuple(self.owners))
        from flaketui.loading.options import LoadOptions

        load = self.load or LoadOptions()
        if self.sources_roots:
            load = replace(load, sources_roots=tuple(self.sources_roots))
        object.__setattr__(self, "load", load)
        if self.compare is not None:
            object.__setattr__(self, "compare", tuple(self.compare))


class FlakeApp(App[int]):
    """Find flaky tasks, see why they flake, from the keyboard.

    State shared by every screen: :attr:`options` (the command line's) and :attr:`session`
    (the loaded trials, each run's state, the normaliser from ``options.ignore_keys``, the
    triage notes), read through :attr:`trial_log`, :attr:`normaliser` and
    :attr:`triage_store`; :attr:`k` and :attr:`divergence_mode` are reactives the screens watch.
    """

    CSS_PATH = "flaketui.tcss"
    TITLE = "flaketui"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit",
                tooltip="Leave flaketui"),
        Binding("question_mark", "help", "Help", id="help",
                tooltip="Every key of every screen"),
    ]

    k: var[int | None] = var(None, init=False)
    """k for pass@k and pass^k (None until the log is loaded when not given). The task
    table's ``+`` / ``-`` set it; the screens that show k watch it (the session keeps it too,
    for the headless parts)."""
    divergence_mode: var[str | None] = var(None, init=False)
    """The divergence mode of every trace comparison: ``v``'s choice, else ``--divergence``
    (None: each pair's default). The task table watches it: its ``div`` column is found again."""

    def __init__(self, options: AppOptions) -> None:
        super().__init__()
        self.options = options
        """What the command line asked for."""
        self.session = Session.with_keys(
            options.ignore_keys, options.flaky_cap, k=options.k, k_is_default=options.k is None,
            divergence=options.divergence, owners=options.owners, history_url=options.history,
            load=options.load)
        """What the screens show and the workers fill: the loaded log, each run's state, k, the
        divergence mode, the normaliser and the triage notes (:class:`~flaketui.session.state.Session`)."""
        self.set_reactive(FlakeApp.k, options.k)
        self.set_reactive(FlakeApp.divergence_mode, options.divergence)
        self.compare_pending: tuple[str, ...] | None = options.compare
        """The comparison pane still to open once loaded (``options.compare``, used once)."""
        self.triage_error_shown: str | None = None
        """The last triage save error told to the user (each distinct reason is told once)."""
        self.triage_first_note: str | None = None
        """Where the notes file will be, told when the first note is saved (None: told, or it exists)."""
        self.recorded: str | None = None
        """What ``options.record`` 's recording said (None: not recorded, or not yet)."""

    def watch_k(self, k: int | None) -> None:
        """The session's k follows the reactive (the headless parts read it there)."""
        self.session.k = k

    def watch_divergence_mode(self, mode: str | None) -> None:
        """The session's divergence mode follows the reactive."""
        self.session.divergence = mode

    @property
    def k_is_default(self) -> bool:
        """True while k is the default (the trials most tasks have), not chosen by the user."""
        return self.session.k_is_default

    @k_is_default.setter
    def k_is_default(self, value: bool) -> None:
        self.session.k_is_default = value

    @property
    def trial_log(self) -> TrialLog | None:
        """Every loaded trial (the session's; None while loading)."""
        return self.session.log

    @trial_log.setter
    def trial_log(self, log: TrialLog) -> None:
        self.session.set_log(log)

    @property
    def normaliser(self) -> Normaliser:
        """Drops ids, timestamps, durations and ``ignore_keys`` from trace steps (the session's)."""
        return self.session.normaliser

    @property
    def triage_store(self) -> TriageStore:
        """The triage notes (opened on first use, see :meth:`open_triage_store`)."""
        store = self.session.triage_store
        return self.open_triage_store() if store is None else store

    def get_default_screen(self) -> Screen:
        return TasksScreen()

    @property
    def tasks_screen(self) -> TasksScreen:
        """The main screen (at the bottom of the screen stack)."""
        screen = self.screen_stack[0]
        assert isinstance(screen, TasksScreen)
        return screen

    def open_triage_store(self) -> TriageStore:
        """Open the triage notes if not yet open; what opening found is told once.

        See :func:`flaketui.app.screens.triage_dialogs.open_store` for where the file is.
        """
        if self.session.triage_store is None:
            store = self.session.triage_store = triage_dialogs.open_store(self.options)
            self.triage_first_note = triage_dialogs.first_note_notice(self.options, store)
            for message in store.messages:
                self.notify(message, title="Triage notes", severity="warning", timeout=20,
                            markup=False)
        return self.session.triage_store

    @on(RunsLoaded)
    def open_triage(self, event: RunsLoaded) -> None:
        """Once loaded: open the triage notes (telling of a bad file) and, for
        ``compare --tui``, the comparison pane; freeze what is loaded; with ``--record``, record it."""
        from flaketui.app.screens.compare import open_compare_on_load

        self.open_triage_store()
        open_compare_on_load(self)
        if self.options.record and self.recorded is None:
            self.recorded = ""
            self.record_runs(event.log)
        freeze()  # what is loaded stays for the app's life (flaketui._runtime)

    @work(thread=True, exit_on_error=False, group="history-record", description="Recording the runs in the history")
    def record_runs(self, log: TrialLog) -> None:
        """Record ``log`` 's runs in the history (:func:`flaketui.history.recording.record_said`)."""
        from flaketui.history.recording import record_said

        self.post_message(Recorded(*record_said(log, self.options.history)))

    @on(Recorded)
    def told_recorded(self, event: Recorded) -> None:
        self.recorded = event.said
        self.tasks_screen.read_states()  # with this run's record in
        self.notify(event.said, title="History", severity="information" if event.ok else "error",
                    timeout=5 if event.ok else 15, markup=False)

    def on_unmount(self) -> None:
        """The app has ended: what :meth:`open_triage` froze may be collected again."""
        unfreeze()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the logs load, only quitting works (no help, no palette, no hidden filter)."""
        screen = self.screen
        if isinstance(screen, TasksScreen) and screen.loading_logs and action != "quit":
            return False
        return super().check_action(action, parameters)

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """Save a screenshot (the palette's command) to ``path`` or the current folder, not
        Textual's ~/Downloads (which may not exist), and name the file written."""
        stamp = datetime.now().strftime(time_format or "%Y-%m-%dT%H_%M_%S")
        name = filename or f"{self.title}_{stamp}.svg"
        try:
            written = self.save_screenshot(name, path or os.getcwd())
        except OSError as exc:
            self.notify(visible(f"{name}: {exc.strerror or exc}"), title="Screenshot not saved",
                        severity="error", timeout=10, markup=False)
            return None
        self.notify(f"Saved screenshot to {visible(written)}", title="Screenshot", timeout=8,
                    markup=False)
        return None

    def save_screenshot(self, filename: str | None = None, path: str | None = None,
                        time_format: str | None = None) -> str:
        """Textual's ``save_screenshot``, written without following a link: Textual opens
        ``PATH/flaketui_TIMESTAMP.svg`` with ``open(…, "w")``, so a link planted at that
        predictable name was written through. Here the picture goes to a temp
        file that :func:`tempfile.mkstemp` creates with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and a
        random name, then :func:`os.replace` puts it at the name (a link there is replaced, its
        target untouched): :func:`flaketui.safefile.atomic_write`.

        Returns:
            The path written.
        """
        from pathlib import Path

        from flaketui.safefile import atomic_write

        stamp = datetime.now().strftime(time_format or "%Y-%m-%dT%H_%M_%S")
        name = filename or f"{self.title}_{stamp}.svg"
        target = Path(os.path.expanduser(os.path.join(path or "./", name)))
        atomic_write(target, self.export_screenshot().encode("utf-8"))
        return str(target)

    def action_help(self) -> None:
        """Show every key of every screen."""
        from flaketui.app.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Textual's commands (less its own "Keys", the help panel: flaketui's "Keys" is the
        help screen of every key of every screen), the screen's own and "Keys", each once."""
        yield from (command for command in super().get_system_commands(screen) if command.title != "Keys")
        for target in reversed(self.screen_stack):
            palette = getattr(target, "palette_commands", None)
            if palette is not None:
                for title, help_text, action in palette():
                    yield SystemCommand(title, help_text, partial(target.run_action, action))
                break
        yield SystemCommand("Keys", "Every key of every screen", self.action_help)

    @on(Open)
    async def open_by_name(self, event: Open) -> None:
        """A screen asked for another by name: open it (:func:`flaketui.app.navigation.open_screen`)."""
        await navigation.open_screen(self, event)


def make_app(paths: Sequence[str], **options: Any) -> FlakeApp:
    """Build the app for ``paths`` (files, directories, globs of trial logs).

    The keyword arguments are the fields of :class:`AppOptions` (``k``, ``fields``,
    ``triage``, ``compare``, ``watch``, …).
    """
    return FlakeApp(AppOptions(tuple(paths), **options))
