"""The command line: ``flaketui LOG...`` opens the app; ``report``, ``compare``,
``gate``, ``triage export``, ``plan`` and ``demo`` are subcommands.

One module per command; :mod:`flaketui.cli.common` holds the command group and what
the commands share. Importing this package registers every command (``plan`` is
imported only when run, see :class:`~flaketui.cli.common.DefaultGroup`).

Exit codes: 0 success, 1 gate failed, 2 usage or input error. Input errors are
one line on stderr, never a traceback.
"""

import os
import sys

# OpenBLAS starts a thread per core with numpy, and they spin: flaketui does no linear
# algebra worth threads, and its line scanner wants those cores (a tenth of a 2-core
# machine's time went to the spinning). Before numpy is imported; a user's setting stands.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from flaketui.cli import compare, diff, export, gate, history, quarantine, report, triage, tui  # noqa: E402, F401  (register the commands)
from flaketui.cli.common import main  # noqa: E402

__all__ = ["main", "run"]


def run() -> None:
    """The ``flaketui`` command (and ``python -m flaketui``): :func:`main`, then the exit.

    Once the command is done and nothing else runs (no other thread, no child process,
    nothing for :mod:`atexit`), the process ends at once (:func:`os._exit`) with the
    command's exit code, its output flushed to whoever still reads it: the interpreter's
    teardown would free every object of the log one by one for nothing (a warm 200k-task
    report: 14 ms of 160). Anything else running, or an exit that is not a plain code,
    exits as usual.
    """
    try:
        main()
    except SystemExit as done:
        if (done.code is None or isinstance(done.code, int)) and _alone():
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):  # its reader has gone (or it is closed): nothing to tell it
                    pass
            os._exit(done.code or 0)
        raise


def _alone() -> bool:
    """Nothing but this thread runs, and nothing waits for the interpreter's exit."""
    import atexit
    import threading

    callbacks = getattr(atexit, "_ncallbacks", None)  # CPython's count of atexit functions
    children = sys.modules.get("multiprocessing")
    return (threading.active_count() == 1 and callbacks is not None and callbacks() == 0
            and not (children is not None and children.active_children()))
