"""p̂ of each task in the recent runs, as ``history status`` reads it (what is not 1, and the tasks a
run lacks), against every result read plainly: tasks missing from runs, tasks with no trial,
runs of no task, new tasks in later runs."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")


from flaketui.history import open_store  # noqa: E402
from tests.helpers.history_checks import check_recent_p_hat  # noqa: E402


def test_recent_p_hat_equals_a_plain_read_on_sqlite(tmp_path: Path) -> None:
    """On SQLite recent p̂ equals a plain read."""
    with open_store(f"sqlite:///{tmp_path / 'h.sqlite'}") as store:
        check_recent_p_hat(store)
