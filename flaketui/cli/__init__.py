"""The command line: ``flaketui LOG...`` opens the app; ``report``, ``compare``,
``gate``, ``triage export``, ``plan`` and ``demo`` are subcommands.

One module per command; :mod:`flaketui.cli.common` holds the command group and what
the commands share. Importing this package registers every command (``plan`` is
imported only when run, see :class:`~flaketui.cli.common.DefaultGroup`).

Exit codes: 0 success, 1 gate failed, 2 usage or input error. Input errors are
one line on stderr, never a traceback.
"""

from flaketui.cli import compare, diff, export, gate, quarantine, report, triage, tui  # noqa: F401  (register the commands)
from flaketui.cli.common import main

__all__ = ["main"]
