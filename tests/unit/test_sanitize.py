"""Log strings made visible: no control byte passes, ordinary text is untouched."""

from __future__ import annotations

import pytest

from flaketui.sanitize import csv_cell, visible

HOSTILE = [
    "\x1b]52;c;ZXZpbA==\x07",  # OSC 52: write the clipboard
    "\x1b]0;pwned\x07",  # OSC 0: window title
    "\x1b]8;;https://evil\x1b\\x\x1b]8;;\x1b\\",  # OSC 8: hidden hyperlink
    "\x1b[2J\x1b[H",  # CSI: clear the screen
    "\x9b2J",  # 8-bit CSI
    "abc\u202edcba",  # right-to-left override
    "zero\u200bwidth\u2066iso\u2069",
    "\x00nul\x7fdel",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_no_control_or_format_character_survives(text: str) -> None:
    """Every C0/C1 control, DEL and bidi/invisible format character is spelled out."""
    out = visible(text)
    assert all(ch.isprintable() for ch in out), repr(out)
    assert "\x1b" not in out and "\x9b" not in out


def test_spelling_is_readable_and_exact() -> None:
    """visible spells out control and invisible characters readably and exactly."""
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert visible("x\u202ey") == "x\\u202ey"
    assert visible("tag\U000e0041") == "tag\\U000e0041"
    assert visible("one\ntwo\tthree") == "one\\x0atwo\\x09three"


def test_multiline_keeps_newlines_and_tabs_only() -> None:
    """multiline keeps newlines and tabs only."""
    assert visible("one\ntwo\tthree\x1b", multiline=True) == "one\ntwo\tthree\\x1b"


def test_ordinary_text_is_unchanged() -> None:
    """Ordinary text is unchanged."""
    for text in ["searchRunbook", "naïve 日本語 ✓", "[mobile_data_issue]data_saver_mode_on|x", "a\\x1b"]:
        assert visible(text) == text
    assert visible(12) == "12"


@pytest.mark.parametrize("text", ["=HYPERLINK(\"x\")", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_csv_formulas_are_neutralised(text: str) -> None:
    """OWASP CSV injection: a leading ' before =, +, -, @, tab and CR."""
    out = csv_cell(text)
    assert out.startswith("'") and "\t" not in out and "\r" not in out


def test_csv_plain_cells_are_kept() -> None:
    """Plain CSV cells are kept."""
    assert csv_cell("searchRunbook") == "searchRunbook"
    assert csv_cell("a=b") == "a=b"


def test_lone_surrogates_are_spelled_out() -> None:
    """A lone surrogate (from a JSON \\ud800 escape) can't be written by any terminal encoding."""
    assert visible("a\ud800b") == "a\\ud800b"
