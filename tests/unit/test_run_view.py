"""The task table's state of one run (RunView): statistics at k, sorted orders with the one
tie-break, the flaky mask, the name filter, and the div and cause? columns' values — headless,
pinned to what the task table showed."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from subprocess import run

import numpy as np
import pytest

from flaketui.app.run_view import PENDING, RunView
from flaketui.loading import load_logs
from flaketui.model import TrialLog, natural_ranks
from flaketui.output.stream import flakiest_order
from flaketui.session.state import Session
from flaketui.stats import summarise, task_stats
from flaketui.stats.curves import k_curve
from flaketui.stats.estimators import FLAKY
from tests.conftest import BASELINE
from tests.helpers.logs import write_log


@pytest.fixture
def log(tmp_path: Path) -> TrialLog:
    """60 tasks of 1 to 6 trials with names that sort naturally, ties everywhere, and traces on
    some trials."""
    rng = random.Random(7)
    lines = []
    for i in range(60):
        task = f"suite{i % 3}/case-{i}"
        for trial in range(rng.randint(1, 6)):
            line = {"task": task, "trial": trial, "passed": rng.random() < 0.6, "metrics": {"tokens": 10 + trial}}
            if i % 4 == 0:
                line["trace"] = ["a", "b", str(trial)]
            lines.append(line)
    return load_logs([write_log(tmp_path / "many.jsonl", lines)])


def view_of(log: TrialLog, k: int = 1) -> RunView:
    session = Session()
    session.set_log(log)
    view = RunView(session.run(log.runs[0]))
    view.at_k(k)
    return view


class TestStatistics:
    def test_the_first_k_is_task_stats(self, log: TrialLog) -> None:
        """The run view's statistics at its first k equal task_stats."""
        view = view_of(log, 3)
        fresh = task_stats(view.outcomes, 3)
        assert view.stats is not None and view.summary == summarise(fresh)
        assert np.array_equal(view.stats.pass_hat_k, fresh.pass_hat_k, equal_nan=True)

    def test_a_k_change_moves_only_the_k_figures(self, log: TrialLog) -> None:
        """Changing k recomputes only the k-dependent figures."""
        view = view_of(log, 1)
        before = view.stats
        assert before is not None
        after = view.at_k(4)
        fresh = task_stats(view.outcomes, 4)
        for name in ("pass_at_k", "pass_hat_k"):
            assert np.array_equal(getattr(after, name), getattr(fresh, name), equal_nan=True), name
        assert after.classes is before.classes and after.k == 4 and view.summary == summarise(fresh)

    def test_the_flaky_mask_is_the_classes_and_kept_while_they_are(self, log: TrialLog) -> None:
        """The flaky mask follows the classes and is kept while they are unchanged."""
        view = view_of(log, 2)
        st = view.stats
        assert st is not None
        mask = view.flaky_mask()
        assert mask.tolist() == [c == FLAKY for c in st.classes]
        view.at_k(3)
        assert view.flaky_mask() is mask  # a k change keeps the classes

    def test_the_curves_of_the_suite_and_the_row(self, log: TrialLog) -> None:
        """The view gives the suite's curves and the cursor row's."""
        view = view_of(log, 2)
        st = view.stats
        assert st is not None
        suite, spread, task = view.curves(5)
        assert np.array_equal(suite.pass_at, k_curve(st.n, st.passes, include=2).pass_at, equal_nan=True)
        assert task is not None and np.array_equal(task.ks, k_curve(st.n[5], st.passes[5], include=2).ks)
        assert view.curves(None)[0] is suite and view.curves(None)[2] is None


class TestOrders:
    def test_flakiness_descending_is_the_cli_reports_order(self, log: TrialLog) -> None:
        """Flakiness descending is the CLI report's order."""
        view = view_of(log, 2)
        st = view.stats
        assert st is not None
        order = view.shown_order("flakiness", True, lambda: np.asarray(st.flakiness, dtype=float))
        assert order.tolist() == flakiest_order(st, natural_ranks(st.tasks)).tolist()

    def test_the_ties_of_every_sort_are_that_order(self, log: TrialLog) -> None:
        """Every sort breaks ties in that order."""
        view = view_of(log, 2)
        st = view.stats
        assert st is not None
        same = np.zeros(len(st))
        assert view.full_order("same", False, lambda: same).tolist() == view.ties().tolist()

    def test_an_order_is_kept_until_forgotten(self, log: TrialLog) -> None:
        """A column's order is computed once and kept until forgotten."""
        view = view_of(log, 2)
        calls: list[int] = []

        def values() -> np.ndarray:
            calls.append(1)
            return np.arange(len(view.outcomes.tasks), dtype=float)

        first = view.full_order("n", True, values)
        assert view.full_order("n", True, values) is first and len(calls) == 1
        view.forget_order("n")
        view.full_order("n", True, values)
        assert len(calls) == 2

    def test_only_the_most_recent_orders_are_kept(self, log: TrialLog) -> None:
        """Sorting by every column in turn keeps the ORDERS_KEPT most recently asked for; one asked
        for again is kept (and counts as recent), an older one is sorted again, to the same order."""
        from flaketui.app.run_view import ORDERS_KEPT

        view = view_of(log, 2)
        rows = len(view.outcomes.tasks)
        calls: list[str] = []

        def values(key: str) -> np.ndarray:
            calls.append(key)
            return np.arange(rows, dtype=float) * (1 + len(key))

        keys = [f"col{i}" for i in range(ORDERS_KEPT + 2)]
        first = {k: view.full_order(k, False, lambda k=k: values(k)).copy() for k in keys}
        assert len(view._orders) == ORDERS_KEPT
        assert [k for k, _ in view._orders] == keys[-ORDERS_KEPT:]
        view.full_order(keys[-ORDERS_KEPT], False, lambda: values("again"))  # kept: not sorted again
        assert calls.count("again") == 0 and next(reversed(view._orders)) == (keys[-ORDERS_KEPT], False)
        again = view.full_order(keys[0], False, lambda: values(keys[0]))  # let go: sorted again
        assert calls.count(keys[0]) == 2 and np.array_equal(again, first[keys[0]])

    def test_a_k_change_keeps_the_shown_columns_order_only_if_its_values_stay(self, log: TrialLog) -> None:
        """A k change keeps a column's order only if its values stay."""
        view = view_of(log, 2)
        ones = np.ones(len(view.outcomes.tasks))
        view.full_order("flakiness", True, lambda: ones)
        view.full_order("n", True, lambda: ones)
        kept = view.take_orders()
        view.keep_orders(kept, "flakiness", lambda: ones)
        assert ("flakiness", True) in view._orders and ("n", True) not in view._orders
        kept = view.take_orders()
        view.keep_orders(kept, "flakiness", lambda: ones * 2)
        assert not view._orders

    def test_the_filter_and_flaky_only_pick_from_the_order(self, log: TrialLog) -> None:
        """The name filter and flaky-only pick rows from the sorted order."""
        view = view_of(log, 2)
        st = view.stats
        assert st is not None

        def values() -> np.ndarray:
            return np.asarray(st.flakiness, dtype=float)

        full = view.shown_order("flakiness", True, values).tolist()
        named = view.shown_order("flakiness", True, values, filter_text="SUITE1/")
        assert named.tolist() == [r for r in full if st.tasks[r].startswith("suite1/")]
        flaky = view.shown_order("flakiness", True, values, "suite1/", flaky_only=True)
        assert flaky.tolist() == [r for r in named.tolist() if st.classes[r] == FLAKY]


class TestTraceColumns:
    def test_divergence_of_a_flaky_traced_task_is_pending_until_found(self, log: TrialLog) -> None:
        """A flaky traced task's divergence is pending until found."""
        view = view_of(log, 2)
        st = view.stats
        assert st is not None
        traced_flaky = [r for r in range(len(st)) if view.has_traces[r] and st.classes[r] == FLAKY]
        assert traced_flaky
        row = traced_flaky[0]
        assert view.divergence_of(row, {}) == PENDING
        assert view.divergence_of(row, {st.tasks[row]: 3}) == 3
        values = view.divergence_values({st.tasks[row]: 3})
        assert values[row] == 3 and np.isnan(np.delete(values, row)).all()
        other = next(r for r in range(len(st)) if not view.has_traces[r])
        assert view.divergence_of(other, {}) is None

    def test_cause_values_rank_the_suggestions_alphabetically(self, log: TrialLog) -> None:
        """The cause column sorts the suggestions alphabetically."""
        view = view_of(log, 2)
        st = view.stats
        assert st is not None
        found = {st.tasks[0]: "ordering", st.tasks[1]: "environment", "not-a-task": "user-sim"}
        values = view.cause_values(found)
        assert values[0] == 1 and values[1] == 0 and np.isnan(values[2:]).all()
        assert view.flaky_tasks_in({}) == []


def test_the_fixture_run_as_the_table_showed_it() -> None:
    """The fixture run's view holds what the table shows."""
    log = load_logs([BASELINE])
    view = view_of(log, 5)
    st = view.stats
    assert st is not None and view.summary is not None
    assert len(st) == 25 and [st.tasks[r] for r in np.flatnonzero(~view.has_traces)] == ["pingHealthcheck"]
    order = view.shown_order("flakiness", True, lambda: np.asarray(st.flakiness, dtype=float), flaky_only=True)
    assert [st.tasks[r] for r in order] == []  # 10 of 12 is undetermined at the default cap
    order = view.shown_order("flakiness", True, lambda: np.asarray(st.flakiness, dtype=float),
                             mask=view.mixed_mask())
    assert [st.tasks[r] for r in order] == ["searchRunbook"]
    assert (view.name_width, view.group_width) == (22, 13)  # the task and group columns' widths


def test_the_run_view_imports_no_textual_or_rich() -> None:
    """The run view imports neither Textual nor Rich."""
    code = ("import sys, flaketui.app.run_view\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]")
    assert run([sys.executable, "-c", code]).returncode == 0
