"""Markdown is markup: every Markdown writer (report, compare with and without --summary, diff,
triage export) passes log strings through one escaping function, so a run name, task id or error
text cannot close a block, add an image or a link, or start a code span."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flaketui.sanitize import markdown_text
from tests.helpers.cli import run
from tests.helpers.hostile import MARKDOWN_PAYLOADS, MARKDOWN_RUNS, markdown_read, write_markdown_hostile_log

PAYLOADS = MARKDOWN_PAYLOADS
RUN_A, RUN_B = MARKDOWN_RUNS


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """Two runs whose names and task ids are Markdown payloads; each task flips, with an error text."""
    return write_markdown_hostile_log(tmp_path / "md.jsonl")


def no_markup(text: str) -> None:
    """No raw HTML tag, no link or image, no unescaped code span from a log string."""
    assert not re.search(r"<(img|/?details|https?:)", text.replace("<details>", "").replace("</details>", "")
                         .replace("<summary>", "").replace("</summary>", "").replace("<br>", "")), text
    assert not re.search(r"(?<!\\)\]\(https://evil", text), text
    assert "`code`" not in text


def test_markdown_text_escapes_every_markup_character():
    """The one function escapes what GitHub reads as markup and keeps what a reader sees."""
    for p in PAYLOADS:
        out = markdown_text(p)
        assert "<" not in out and "](" not in out.replace("\\](", "")
        assert markdown_read(out) == p


@pytest.mark.parametrize("args", [
    ["report", "LOG", "--format", "markdown"],
    ["report", "LOG", "--format", "markdown", "--causes"],
    ["compare", "LOG", "--format", "markdown", "--runs", RUN_A, RUN_B],
    ["compare", "LOG", "--format", "markdown", "--summary", "--runs", RUN_A, RUN_B],
    ["triage", "export", "LOG"],
])
def test_markdown_writers_escape_log_strings(log: Path, args: list[str]):
    """report, compare (with and without --summary) and triage export Markdown: each payload is
    text, read back whole."""
    code, out, err = run(*[str(log) if a == "LOG" else a for a in args])
    assert code == 0, err
    no_markup(out)
    read = markdown_read(out)
    for p in ("[Approve PR](https://evil.example/ok)", "<img src=https://evil.example/px.png>"):
        assert p in read, p


def test_diff_markdown_escapes_trace_text(log: Path):
    """diff --format markdown: the trace's payloads are text."""
    code, out, err = run("diff", str(log), "--task", "[Approve PR](https://evil.example/ok)",
                         "--run", RUN_B, "--format", "markdown")
    assert code in (0, 2), err
    no_markup(out)
