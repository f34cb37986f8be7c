"""How the history's task lifecycle states show in the app: the colour of each, and the order the
task table's ``state`` column sorts them in. Read by the history screen and the task table (a
module of its own, not a screen's: no screen imports another)."""

from __future__ import annotations

STATE_STYLES = {"stable": "green", "failing": "red", "flaky": "bold yellow", "undetermined": "yellow",
                "fixed": "bold green", "regressed": "bold red", "quarantined": "magenta"}
"""Colour of each lifecycle state."""
STATE_ORDER = {state: i for i, state in enumerate(("regressed", "flaky", "failing", "undetermined", "quarantined",
                                                        "fixed", "stable"))}
"""The task table's ``state`` column sorts most urgent first."""
