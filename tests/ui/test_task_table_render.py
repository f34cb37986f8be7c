"""What the task table draws: a sort arrow beside every sorted column's label, whole-valued
metrics as integers, and the theme's colours after a theme change."""

from __future__ import annotations

import pytest

from flaketui.app.app import FlakeApp, make_app
from tests.conftest import BASELINE, SIZE
from tests.helpers.app import ready, table


def header(app: FlakeApp) -> str:
    return "".join(seg.text for seg in table(app)._header())


@pytest.mark.slow
@pytest.mark.parametrize("key", ["class", "divergence", "metric:cost_usd", "metric:tokens",
                                 "pass_at_k", "pass_hat_k", "task", "n"])
async def test_every_sorted_column_shows_its_arrow(key: str) -> None:
    """Every sorted column shows its arrow."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.tasks_screen
        column = table(app).column(key)
        assert column is not None, [c.key for c in table(app).columns]
        screen.action_sort_by(key)
        await pilot.pause()
        first = "▼" if screen.sort_reverse else "▲"
        width = len(header(app))
        # Beside the label: after it, or before a right-aligned label that fills its column.
        assert column.label + first in header(app) or first + column.label in header(app)
        await pilot.press("S")
        await pilot.pause()
        second = "▲" if first == "▼" else "▼"
        assert column.label + second in header(app) or second + column.label in header(app)
        assert len(header(app)) <= width + 1  # the arrow never widens the table


def test_integer_metrics_show_as_integers() -> None:
    """Whole-valued metrics show as integers."""
    import numpy as np

    from flaketui.app.run_view import whole_valued
    from flaketui.app.task_columns import metric_cell

    tokens = np.array([678.0, 1976.0, 677.5, np.nan])
    assert whole_valued(tokens)
    assert [metric_cell(tokens, True, i).plain for i in range(4)] == ["678", "1,976", "678", "—"]
    seconds = np.array([23.0, 23.1, 0.0058])
    assert not whole_valued(seconds)
    assert [metric_cell(seconds, False, i).plain for i in range(3)] == ["23.0", "23.1", "0.006"]


async def test_light_theme_redraws_the_table_in_its_colours() -> None:
    """The light theme redraws the table in its colours."""
    app = make_app([str(BASELINE)], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.theme = "textual-light"
        await pilot.pause()
        await pilot.pause()
        surface = app.theme_variables["surface"].lower()
        t = table(app)
        for y in (2, 3):  # rows off the cursor: the table's own background
            backgrounds = {seg.style.bgcolor.name.lower() for seg in t.render_line(y)
                           if seg.style and seg.style.bgcolor}
            assert backgrounds == {surface}, backgrounds
        # Passing rates in the theme's success colour, not a fixed green.
        success = app.theme_variables["success"].lower()
        passing = 1 + [t.row_text(i)[0] for i in range(len(t.order))].index("checkCertificateExpiry")
        colours = {seg.style.color.name.lower() for seg in t.render_line(passing)
                   if seg.style and seg.style.color}
        assert success in colours, colours
