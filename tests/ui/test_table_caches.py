"""What the task table keeps between keys (sorted orders, the filter's last matches, the
statistics a k change keeps, the footer's keys) never shows anything a fresh app would not."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from textual.widgets._footer import FooterKey

from flaketui.app.app import FlakeApp, make_app
from flaketui.app.screens.tasks import TasksScreen
from flaketui.app.widgets.footer import KeyFooter
from flaketui.app.widgets.task_table import TaskTable
from flaketui.stats import task_stats
from tests.conftest import SIZE


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """80 tasks with 1 to 6 trials (so that k moves the figures), names that sort naturally
    (``case-9`` before ``case-10``) and not only in ASCII, two metrics and ties everywhere."""
    rng = random.Random(3)
    lines = []
    for i in range(80):
        task = f"suite{i % 3}/case-{i}" if i % 7 else f"Äpfel-{i}"
        for trial in range(rng.randint(1, 6)):
            lines.append({"task": task, "trial": trial, "passed": rng.random() < 0.6,
                          "metrics": {"tokens": rng.randint(10, 20), "cost_usd": rng.choice([0.5, 0.25])}})
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def rows(app: FlakeApp) -> list[list[str]]:
    table = app.tasks_screen.query_one(TaskTable)
    return [table.row_text(i) for i in range(len(table.order))]


def sorted_tables(screen: TasksScreen) -> dict[tuple[str, bool], np.ndarray]:
    """The order shown for every column, both ways."""
    shown = {}
    for key in screen.sort_keys():
        for reverse in (False, True):
            screen.sort_key, screen.sort_reverse = key, reverse
            shown[(key, reverse)] = screen.query_one(TaskTable).order.copy()
    return shown


@pytest.mark.slow
async def test_a_k_change_shows_what_a_fresh_app_shows_at_that_k(log: Path) -> None:
    """After a k change the table shows what a fresh app shows at that k."""
    changed, fresh = make_app([str(log)]), make_app([str(log)], k=3)
    async with changed.run_test(size=SIZE) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert changed.k == 5  # the trials most tasks have (once the smallest n, 1)
        await pilot.press("minus", "minus", "minus", "plus")
        assert changed.k == 3
        screen = changed.tasks_screen
        assert screen.stats is not None and screen.outcomes is not None
        expected = task_stats(screen.outcomes, 3)
        for field in ("n", "passes", "p_hat", "pass_at_k", "pass_hat_k", "flakiness", "rule_of_three"):
            np.testing.assert_array_equal(getattr(screen.stats, field), getattr(expected, field))
        for field in ("p_hat_ci", "pass_hat_k_ci"):
            np.testing.assert_array_equal(getattr(screen.stats, field).low, getattr(expected, field).low)
            np.testing.assert_array_equal(getattr(screen.stats, field).high, getattr(expected, field).high)
        assert screen.stats.classes == expected.classes
        shown, summary, orders = rows(changed), screen.summary, sorted_tables(screen)
    async with fresh.run_test(size=SIZE) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert rows(fresh) == shown
        assert fresh.tasks_screen.summary == summary
        again = sorted_tables(fresh.tasks_screen)
        assert again.keys() == orders.keys()
        for key, order in again.items():
            assert order.tolist() == orders[key].tolist(), key


@pytest.mark.slow
async def test_the_filter_typed_letter_by_letter_shows_every_name_holding_it(log: Path) -> None:
    """A filter typed letter by letter shows every name holding it."""
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.tasks_screen
        assert screen.stats is not None
        everyone = rows(app)
        await pilot.press("slash")
        for typed in ("c", "a", "s", "e", "-", "1", "backspace", "backspace", "backspace", "backspace",
                      "backspace", "backspace", "ä", "P"):
            await pilot.press(typed)
            needle = screen.filter_text.lower()
            assert [r[0] for r in rows(app)] == [r[0] for r in everyone if needle in r[0].lower()], needle
        await pilot.press("enter", "f")  # the filter kept, and flaky-only too
        flaky = {t for t, c in zip(screen.stats.tasks, screen.stats.classes, strict=True) if c == "flaky"}
        assert [r[0] for r in rows(app)] == [r[0] for r in everyone if "äp" in r[0].lower() and r[0] in flaky]


@pytest.mark.slow
async def test_a_new_review_sorts_at_once(log: Path, tmp_path: Path) -> None:
    """A new review sorts at once."""
    app = make_app([str(log)], triage=str(tmp_path / "notes.json"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.tasks_screen
        await pilot.press("down", "down", "space")  # the review column appears
        task = screen.current_task
        screen.action_sort_by("triage")
        await pilot.pause()
        assert screen.current_task == task  # the one reviewed task sorts first
        await pilot.press("down", "down", "space")
        reviewed = screen.current_task
        screen.action_sort_by("flakiness")
        screen.action_sort_by("triage")
        await pilot.pause()
        assert [r[0] for r in rows(app)][:2] == sorted([task, reviewed], key=[r[0] for r in rows(app)].index)
        table = screen.query_one(TaskTable)
        review = [c.key for c in table.columns].index("triage")
        assert [table.row_text(i)[review].strip() for i in range(3)] == ["✓", "✓", ""]


@pytest.mark.slow
async def test_the_footer_shows_the_keys_of_what_has_focus(log: Path) -> None:
    """The footer shows the keys of what has focus."""
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

        def shown() -> list[tuple[str, str]]:
            footer = app.screen.query_one(KeyFooter)
            return [(k.key, k.description) for k in footer.query(FooterKey) if not k.has_class("-command-palette")]

        def expected() -> list[tuple[str, str]]:
            first: dict[str, tuple[str, str]] = {}
            for _, binding, _, _ in app.screen.active_bindings.values():
                if binding.show:
                    first.setdefault(binding.action, (binding.key, binding.description))
            return list(first.values())

        assert shown() == expected() and ("slash", "Filter") in shown()
        await pilot.press("slash")
        await pilot.pause()
        assert shown() == expected()
        await pilot.press("escape")
        await pilot.pause()
        assert shown() == expected()
        await pilot.press("enter")  # another screen, another footer
        await pilot.pause()
        assert shown() == expected() and ("escape", "Back") in shown()


def test_sorted_rows_is_sorted_order_of_a_subset() -> None:
    """sorted_rows (a subset of rows, ties by a tiebreak) orders as a lexsort of (missing,
    value, tiebreak) did: NaN last both ways, -0.0 equal to 0.0, equal tiebreaks in idx order."""
    import numpy as np

    from flaketui.app.sorting import sorted_rows

    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(0, 30))
        idx = rng.permutation(100)[:n]
        values = rng.choice([0.0, -0.0, 1.0, 0.5, np.nan, 2.0], n)
        tiebreak = rng.integers(0, 5, n).astype(float)
        for reverse in (False, True):
            missing = np.isnan(values)
            signed = np.where(missing, 0.0, -values if reverse else values)
            want = idx[np.lexsort((tiebreak, signed, missing))]
            assert sorted_rows(idx, values, reverse, tiebreak).tolist() == want.tolist()
