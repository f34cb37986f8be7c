"""The command line: ``flaketui LOG...`` opens the app; ``report``, ``compare``,
``gate``, ``triage export``, ``plan`` and ``demo`` are subcommands.

One module per command; :mod:`flaketui.cli.common` holds the command group and what
the commands share. Importing this package registers every command (``plan`` is
imported only when run, see :class:`~flaketui.cli.common.DefaultGroup`).

Exit codes: 0 success, 1 gate failed, 2 usage or input error. Input errors are
one line on stderr, never a traceback.
"""

import os

# OpenBLAS starts a thread per core with numpy, and they spin: flaketui does no linear
# algebra worth threads, and its line scanner wants those cores (a tenth of a 2-core
# machine's time went to the spinning). Before numpy is imported; a user's setting stands.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from flaketui.cli import compare, diff, export, gate, quarantine, report, triage, tui  # noqa: E402, F401  (register the commands)
from flaketui.cli.common import main  # noqa: E402

__all__ = ["main"]
