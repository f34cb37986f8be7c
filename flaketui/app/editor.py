"""Opening a trial's log line in the user's editor: the command, built without a shell, and its run."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from textual.app import App

    from flaketui.model import TrialLog

LINE_EDITORS = {"vi", "vim", "nvim", "nano", "emacs", "emacsclient", "micro", "kak", "hx",
                "helix", "joe", "mg", "jed", "ne"}
"""Editors that take ``+LINE`` before the file name."""
END_OF_OPTIONS_EDITORS = {"vi", "vim", "nvim", "gvim", "view", "nvi"}
"""Editors known to take ``--`` as the end of their options (vim ``:help --``: "Arguments
after this will be handled as a file name"; nvim and nvi the same, through getopt). Others
get no ``--`` (some would open a file named ``--``) and rely on the absolute path alone."""


def editor_command(editor: str, path: str, line: int) -> list[str]:
    """The command that opens ``path`` in ``editor`` (a command line, e.g. ``code -w``),
    at ``line`` when the editor takes ``+LINE`` (``code``: ``--goto path:line``).

    The path is a log's file name, so it is data: it is always passed as one argv element,
    made absolute so that it never starts with ``+`` (vim runs ``+CMD`` as an Ex command,
    and ``+!cmd`` as a shell command) or ``-`` (an option), and after ``--`` for the
    editors of :data:`END_OF_OPTIONS_EDITORS`. No shell ever sees it.
    """
    argv = shlex.split(editor) or ["vi"]
    name = Path(argv[0]).name
    path = os.path.abspath(path)
    end = ["--"] if name in END_OF_OPTIONS_EDITORS else []
    if name in LINE_EDITORS and line > 0:
        return [*argv, f"+{line}", *end, path]
    if name in ("code", "codium", "subl", "zed") and line > 0:
        return [*argv, *(["--goto"] if name in ("code", "codium") else []), f"{path}:{line}"]
    return [*argv, *end, path]


def open_in_editor(app: App[object], log: TrialLog, rows: np.ndarray) -> None:
    """Open the file of the first of ``rows`` (a task's trials) in ``$VISUAL`` / ``$EDITOR`` at its
    line, ``app`` suspended meanwhile; a remote log or a failed start is told, never raised."""
    import subprocess

    from textual.app import SuspendNotSupported

    from flaketui.loading.location import is_url
    from flaketui.sanitize import visible

    if not rows.size:
        return
    path, line = log.sources[int(log.source[int(rows[0])])].path, int(log.line[int(rows[0])])
    if is_url(path):
        app.notify("a remote log cannot be opened in an editor", title="Editor", severity="warning",
                   timeout=8, markup=False)
        return
    command = editor_command(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi", path, line)
    try:
        with app.suspend():
            subprocess.run(command, check=False)
    except (OSError, SuspendNotSupported) as exc:
        app.notify(visible(f"{command[0]}: {exc}"), title="Editor", severity="error", timeout=10, markup=False)
