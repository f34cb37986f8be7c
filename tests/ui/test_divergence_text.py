"""The trace diff's divergence line for two equal traces: "decided outside the trace" only
when the two outcomes differ."""

from __future__ import annotations

from typing import Any

import pytest

from flaketui.app.widgets.trace_view import TraceDiffView
from flaketui.model import FAIL, PASS, Trial


def trial(outcome: int, trace: list[Any]) -> Trial:
    return Trial(run="r", task="t", trial=0, outcome=outcome, score=None, group=None, metrics={},
                 error=None, trace=trace, extra={}, location="r.jsonl:1")


TRACE = [{"role": "user", "content": "book it"},
         {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "book", "arguments": "{}"}}]}]


@pytest.mark.parametrize(("a", "b", "outside"), [
    (PASS, PASS, False), (FAIL, FAIL, False), (PASS, FAIL, True), (FAIL, PASS, True)])
def test_outside_the_trace_only_when_the_outcomes_differ(a: int, b: int, outside: bool) -> None:
    """The divergence text is outside the trace only when the outcomes differ."""
    view = TraceDiffView(trial(a, TRACE), trial(b, list(TRACE)), "A", "B")
    text = view.divergence_text().plain
    assert view.first_divergence is None and "equal after normalisation" in text
    assert ("the outcome was decided outside the trace" in text) is outside
