"""The divergence header names the agent's action first and folds the metadata around it."""

from __future__ import annotations

from flaketui.app.widgets.trace_view import change_summary
from flaketui.traces.structdiff import MISSING, FieldChange
from flaketui.traces.trace_diff import action_first, header_changes

AUDIO = [FieldChange(f"audio_{i}", None, False) for i in range(12)]
ARG = FieldChange("tool_calls.0.arguments.reservation_id", "NM1VX1", "KC18K6")


def test_the_argument_comes_before_twelve_audio_flags() -> None:
    """The changed argument comes before twelve audio flags."""
    action, meta = action_first([*AUDIO[:6], ARG, *AUDIO[6:]])
    assert action == [ARG] and meta == AUDIO
    assert change_summary([*AUDIO[:6], ARG, *AUDIO[6:]]) == \
        "tool_calls.0.arguments.reservation_id (12 metadata fields)"


def test_only_metadata_is_named_up_to_three() -> None:
    """When only metadata changed, up to three fields are named."""
    shown, more, meta = header_changes(AUDIO)
    assert shown == AUDIO[:3] and (more, meta) == (0, 9)
    assert change_summary(AUDIO[:1]) == "audio_0"


def test_many_action_fields_are_counted() -> None:
    """Many changed action fields are counted."""
    changes = [FieldChange(f"tool_calls.0.arguments.k{i}", 1, 2) for i in range(5)]
    assert change_summary(changes) == ("tool_calls.0.arguments.k0, tool_calls.0.arguments.k1, "
                                       "tool_calls.0.arguments.k2 (+2 more)")


def test_a_step_one_side_has_is_the_action() -> None:
    """A step only one side has is the action."""
    whole = FieldChange("", MISSING, {"role": "assistant"})
    assert change_summary([AUDIO[0], whole]) == "the step (only in B) (1 metadata field)"
