"""One tie-break rule for task tables: the app's task table and the CLI report
order equally flaky tasks the same way, by p̂ ascending and then natural task order, not
alphabetically (``failoverDatabase 0.000`` among the passes)."""

from __future__ import annotations

import numpy as np

from flaketui.app.app import make_app
from flaketui.app.widgets.task_table import TaskTable
from flaketui.loading import load_logs
from flaketui.output.stream import flakiest_order
from flaketui.stats import task_stats
from tests.conftest import BASELINE, SIZE


async def test_the_task_table_orders_ties_as_the_report_does() -> None:
    """The task table orders ties as the report does."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.tasks_screen
        st = screen.stats
        assert st is not None
        shown = [st.tasks[i] for i in screen.query_one(TaskTable).order.tolist()]
    log = load_logs([BASELINE])
    cli = task_stats(log.run_outcomes(log.runs[0]), 5)
    assert shown == [cli.tasks[i] for i in flakiest_order(cli).tolist()]
    # The stable-fail tasks (p̂ = 0) come right after the flaky one, before every pass.
    p = {t: float(v) for t, v in zip(st.tasks, st.p_hat, strict=True)}
    assert shown[0] == "searchRunbook"
    assert [p[t] for t in shown[1:]] == sorted(p[t] for t in shown[1:])
    assert shown.index("failoverDatabase") < shown.index("checkCertificateExpiry")


async def test_ties_of_another_column_follow_the_same_rule() -> None:
    """Ties of another column follow the same rule."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.tasks_screen
        screen.action_sort_by("n")  # every task has n = 12: all tied
        await pilot.pause()
        st = screen.stats
        assert st is not None
        order = screen.query_one(TaskTable).order
        np.testing.assert_array_equal(order, flakiest_order(st))
