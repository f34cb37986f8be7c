"""The task table's class column against the flakiness cap, the mixed column and the /mixed and
/class:NAME filters."""

from __future__ import annotations

from flaketui.app.app import AppOptions, FlakeApp
from tests.conftest import BASELINE, SIZE
from tests.helpers.app import ready, table


def shown(app: FlakeApp, key: str = "task") -> list[str]:
    t = table(app)
    pos = [c.key for c in t.columns].index(key)
    return [t.row_text(i)[pos] for i in range(len(t.order))]


async def test_class_and_mixed_columns_and_filters() -> None:
    """At the default cap every task of the baseline is undetermined (12 trials decide none); mixed marks
    searchRunbook alone, /mixed keeps it, /class:undet. keeps all 25 and /class:flaky none."""
    app = FlakeApp(AppOptions((str(BASELINE),), k=5))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        assert screen.sort_key == "p_flaky"  # 12 trials a task: fewer than the 36 that call a clean task stable
        assert set(shown(app, "class")) == {"undet."}
        marked = dict(zip(shown(app), shown(app, "mixed"), strict=True))
        assert [t for t, m in marked.items() if m == "mixed"] == ["searchRunbook"]
        screen.filter_text = "mixed"
        await ready(pilot)
        assert shown(app) == ["searchRunbook"]
        screen.filter_text = "class:undet."
        await ready(pilot)
        assert len(shown(app)) == 25
        screen.filter_text = "class:flaky"
        await ready(pilot)
        assert shown(app) == []


async def test_flaky_cap_changes_the_class() -> None:
    """With --flaky-cap 0.05 searchRunbook's 10 of 12 (exact interval [0.52, 0.98]) is flaky, and f shows it."""
    app = FlakeApp(AppOptions((str(BASELINE),), k=5, flaky_cap=0.05))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.tasks_screen.stats is not None and app.tasks_screen.stats.flaky_cap == 0.05
        await pilot.press("f")
        await ready(pilot)
        assert shown(app) == ["searchRunbook"] and shown(app, "class") == ["flaky"]


async def test_flaky_only_with_none_classed_flaky_says_why() -> None:
    """f on the baseline (no task classed flaky at 12 trials) leaves the table empty with the reason and
    the way to the one task that passed and failed (/mixed), not a bare "no task matches"."""
    app = FlakeApp(AppOptions((str(BASELINE),), k=5))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f")
        await ready(pilot)
        assert shown(app) == []
        assert table(app).empty_text == ("no task is classed flaky yet (f: every task; /mixed: the 1 that passed "
                                         "and failed)")
        app.tasks_screen.filter_text = "nosuch"
        await ready(pilot)
        assert table(app).empty_text == "no task matches"
