"""The command line: ``flaketui LOG...`` opens the app; ``report``, ``compare``,
``gate``, ``triage export``, ``plan`` and ``demo`` are subcommands.

One module per command, none importing another (an import contract says so):
:mod:`flaketui.cli.options` declares the click options two or more commands take,
:mod:`flaketui.cli.common` holds the command group and what else the commands share
(loading with progress, one-line errors, writing). Importing this package registers every command (``plan`` is
imported only when run, see :class:`~flaketui.cli.common.DefaultGroup`).

Exit codes: 0 success, 1 gate failed, 2 usage or input error. Input errors are
one line on stderr, never a traceback.
"""

from flaketui._runtime import limit_blas_threads, run_then_exit

limit_blas_threads()  # before numpy is imported

from flaketui.cli import compare, diff, export, gate, history, quarantine, report, triage, tui  # noqa: E402, F401  (register the commands)
from flaketui.cli.common import main  # noqa: E402

__all__ = ["main", "run"]


def run() -> None:
    """The ``flaketui`` command (and ``python -m flaketui``): :func:`main`, then the exit
    (at once when nothing else runs: :func:`flaketui._runtime.run_then_exit`)."""
    run_then_exit(main)
