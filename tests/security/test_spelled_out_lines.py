"""The trace lines the app's cause and fork panes show (one line per step or value) spell an ESC
and every other control or bidi character out, as every other output does, instead of dropping
it (dropped, the line hid that the log held an escape sequence)."""

from __future__ import annotations

from flaketui.traces.normalise import Normaliser, one_line
from flaketui.traces.steps import step_line
from tests.helpers.hostile import raw_controls

EVIL = "\x1b]52;c;ZXZpbA==\x07 a\u202eb\nnext"


def test_one_line_spells_out_controls():
    """one_line: the ESC, BEL and bidi override are spelled out; white space runs become a space."""
    got = one_line(EVIL)
    assert got == "\\x1b]52;c;ZXZpbA==\\x07 a\\u202eb next"
    assert raw_controls(got) == []


def test_one_line_cut_stays_printable():
    """Cut to a width, a spelled-out line has no raw control character left."""
    assert raw_controls(one_line(EVIL * 10, 25)) == [] and one_line(EVIL * 10, 25).endswith("…")


def test_step_and_fork_lines_spell_out_controls():
    """A tool result's and a tool call's line (the cause pane's evidence, the fork map's labels)."""
    norm = Normaliser()
    result = {"role": "tool", "content": EVIL}
    call = {"role": "assistant", "type": "tool_call", "name": "f\x1b[2J", "args": {"q": EVIL}}
    for line in (one_line(str(result["content"]), 60), step_line(norm.step(call), 80, norm)):
        assert "\\x1b" in line and raw_controls(line) == [], line
