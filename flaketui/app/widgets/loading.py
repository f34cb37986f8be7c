"""The loading pane: reads the logs in a thread worker, shows the bytes read, then the error if any.

It owns the load: the task table's screen composes it, starts :meth:`LoadingPane.load` and
receives :class:`~flaketui.app.messages.RunsLoaded` (or ``LoadFailed``) as it bubbles up; with
``--watch`` the pane also follows the logs (:meth:`LoadingPane.follow`) and posts
:class:`~flaketui.app.messages.LogsGrew`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, ProgressBar
from textual.worker import Worker, WorkerState, get_current_worker

from flaketui.app.messages import LoadFailed, LoadProgress, LogsGrew, RunsLoaded
from flaketui.model import InputError
from flaketui.sanitize import visible

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widget import Widget

    from flaketui.app.app import FlakeApp
    from flaketui.app.screens.base import FlakeScreen
    from flaketui.loading.watch import LogWatcher

WATCH_INTERVAL = 1.0
"""Seconds between looks at the logs with ``--watch``."""


class LoadCancelled(Exception):
    """Raised in the loading thread when the user quit while the logs were loading."""


class LoadingPane(Vertical):
    """"Loading logs…" with a progress bar while the logs load; the error if they could not be."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._last_progress = 0.0
        self._watcher: LogWatcher | None = None
        """Follows the logs with ``--watch`` (set by the loading worker)."""

    def compose(self) -> ComposeResult:
        yield Label("Loading logs…", id="loading-label")
        yield ProgressBar(total=None, show_eta=False, id="load-progress")

    @work(thread=True, exclusive=True, exit_on_error=False, group="load", description="Loading runs")
    def load(self) -> None:
        """Read the logs in a thread; post progress, then the log or the error."""
        from flaketui.loading import load_logs

        options, worker = cast("FlakeApp", self.app).options, get_current_worker()

        def progress(done: int, total: int) -> None:
            if worker.is_cancelled:  # q while loading: stop reading rather than finish
                raise LoadCancelled
            if done >= total or time.monotonic() - self._last_progress > 0.05:
                self._last_progress = time.monotonic()
                self.post_message(LoadProgress(done, total))

        try:
            if options.watch:
                from flaketui.loading.watch import LogWatcher

                self._watcher = LogWatcher(options.paths, options.fields, options.load)
                log = self._watcher.load()
            else:  # the index cache is written behind the first paint, not before it
                log = load_logs(options.paths, options.fields, progress=progress, store_later=True,
                                options=options.load)
        except InputError as exc:
            self.post_message(LoadFailed(str(exc)))
            return
        except LoadCancelled:
            return
        self.post_message(RunsLoaded(log))

    def follow(self) -> None:
        """With ``--watch``: look at the logs each :data:`WATCH_INTERVAL` seconds."""
        self.set_interval(WATCH_INTERVAL, self.poll)

    @work(thread=True, exclusive=True, exit_on_error=False, group="watch", description="Following the logs")
    def poll(self) -> None:
        """Look at the logs again; post the trials if they changed."""
        watcher = self._watcher
        if watcher is not None and watcher.poll():
            try:
                log = watcher.log()
            except InputError:
                return
            self.post_message(LogsGrew(log))

    @on(Worker.StateChanged)
    def worker_changed(self, event: Worker.StateChanged) -> None:
        """A worker of the pane raised: the screen tells of it as of its own (a worker's state
        messages do not bubble), and the load's error replaces "Loading logs…"."""
        if event.state == WorkerState.ERROR:
            cast("FlakeScreen[object]", self.screen).show_worker_error(event.worker)

    @on(LoadProgress)
    def progress(self, event: LoadProgress) -> None:
        """``done`` of ``total`` bytes of the logs read."""
        event.stop()
        self.show_progress(cast("FlakeApp", self.app).options.paths, event.done, event.total)

    def show_progress(self, paths: Sequence[str], done: int, total: int) -> None:
        """``done`` of ``total`` bytes of ``paths`` read."""
        self.query_one(ProgressBar).update(total=total, progress=done)
        self.query_one(Label).update(f"Loading {', '.join(paths)}: {done / 1e6:,.1f} of {total / 1e6:,.1f} MB")

    def failed(self, error: str) -> None:
        """Loading stopped with ``error`` (one line): it replaces the progress."""
        self.query_one(Label).update(Text(f"flaketui: error: {error}", style="bold red"))
        self.query_one(ProgressBar).display = False


class LoadingKeys:
    """The keys of a screen with a :class:`LoadingPane` while its logs load: only quitting works
    (``q``, and ``ctrl+c`` then only); any other key is answered, not dropped without a word.

    Mixed into the task table's screen, whose class ``-loading`` is set until the logs are shown.
    """

    _told_loading = 0.0
    """When a key pressed while loading was last answered (:meth:`on_key`)."""

    @property
    def loading_logs(self) -> bool:
        """True until the logs are loaded (or failed to load): only quitting works then."""
        return cast("Widget", self).has_class("-loading")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While loading, every key but ``q`` and ``ctrl+c`` does nothing; ``ctrl+c`` quits
        only then (after, it copies selected text as everywhere in Textual)."""
        return self.loading_logs if action == "quit_loading" else not self.loading_logs

    def on_key(self, event: events.Key) -> None:
        """A key pressed while the logs load is answered (at most once a second), not dropped
        without a word; only q and ctrl+c act then."""
        if not self.loading_logs or event.key in ("q", "ctrl+c"):
            return
        if time.monotonic() - self._told_loading > 1.0:
            self._told_loading = time.monotonic()
            cast("Widget", self).notify("still loading the logs…; the table takes keys once it is shown", timeout=2)

    def action_quit_loading(self) -> None:
        """Stop loading (the reading thread stops at its next progress report) and leave."""
        pane = cast("Widget", self).query_one(LoadingPane)
        pane.workers.cancel_group(pane, "load")
        pane.app.exit()

    def show_worker_error(self, worker: Worker[object]) -> None:
        """A failed worker is told (by the screen); when it is the load, its error also replaces
        "Loading logs…"."""
        super().show_worker_error(worker)  # type: ignore[misc]
        if worker.group == "load":
            cast("Widget", self).post_message(LoadFailed(str(worker.error)))

    def on_load_failed(self, event: LoadFailed) -> None:
        """The logs could not be loaded: the error replaces the progress, and is told."""
        screen = cast("Screen[object]", self)
        screen.query_one(LoadingPane).failed(event.error)
        screen.sub_title = "error"
        screen.notify(visible(event.error), title="Could not load", severity="error", timeout=30, markup=False)

