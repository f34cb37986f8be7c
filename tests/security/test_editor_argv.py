"""The editor key never lets a log's file name act as a command or an option:
``vi +N +!touch pwned;.jsonl`` would run the name as an Ex command."""

from __future__ import annotations

import os

import pytest

from flaketui.app.editor import editor_command

HOSTILE = ["+!touch pwned;.jsonl", "+:!id", "-c", "--cmd=!id", "-S evil.vim", "+", "-"]


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("editor", ["vi", "vim", "/usr/bin/nvim", "nano -w", "emacs", "ed",
                                    "code -w", "subl", "kak", "micro"])
def test_hostile_name_is_one_absolute_argument(tmp_path: object, monkeypatch: pytest.MonkeyPatch,
                                               editor: str, name: str) -> None:
    """A hostile file name reaches the editor as one absolute argument."""
    monkeypatch.chdir(str(tmp_path))
    argv = editor_command(editor, name, 7)
    want = os.path.join(str(tmp_path), name)
    assert argv[-1] in (want, f"{want}:7")
    # Only the editor's own words, +LINE, --goto and -- come before the path.
    prefix = argv[:-1]
    words = editor.split()
    assert prefix[:len(words)] == words
    assert set(prefix[len(words):]) <= {"+7", "--", "--goto"}


@pytest.mark.parametrize(("editor", "expected"), [
    ("vim", ["vim", "+7", "--", "/logs/+!x.jsonl"]),
    ("nvim", ["nvim", "+7", "--", "/logs/+!x.jsonl"]),
    ("vi", ["vi", "+7", "--", "/logs/+!x.jsonl"]),
    ("nano", ["nano", "+7", "/logs/+!x.jsonl"]),
    ("code -w", ["code", "-w", "--goto", "/logs/+!x.jsonl:7"]),
])
def test_end_of_options_only_where_known(editor: str, expected: list[str]) -> None:
    """The end-of-options marker is given only to editors known to take it."""
    assert editor_command(editor, "/logs/+!x.jsonl", 7) == expected


def test_unset_editor_defaults_to_vi_with_end_of_options() -> None:
    """Without $EDITOR, vi is run with the end-of-options marker."""
    assert editor_command("", "-rf.jsonl", 3)[:3] == ["vi", "+3", "--"]
