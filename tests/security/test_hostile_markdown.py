"""Markdown is markup: every Markdown writer (report, compare with and without --summary, diff,
triage export) passes log strings through one escaping function, so a run name, task id or error
text cannot close a block, add an image or a link, or start a code span."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flaketui.sanitize import markdown_text
from tests.helpers.cli import run
from tests.helpers.hostile import markdown_read

PAYLOADS = ["</details>", "<img src=https://evil.example/px.png>", "[Approve PR](https://evil.example/ok)",
            "![x](https://evil.example/i.png)", "`code`", "a|b", "<https://evil.example>", "&lt;b&gt;",
            "\\|still one cell"]
RUN_A, RUN_B = "base [Approve PR](https://evil.example/a)", "cand </details><img src=https://evil.example/b>"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """Two runs whose names and task ids are Markdown payloads; each task flips, with an error text."""
    lines = []
    for run_name, passes in ((RUN_A, 4), (RUN_B, 1)):
        for task in PAYLOADS:
            for i in range(4):
                rec = {"run": run_name, "task": task, "trial": i, "passed": i < passes,
                       "trace": [{"role": "user", "content": task}, {"role": "assistant", "content": task}]}
                if i == 3:
                    rec["error"] = f"boom {task}"
                lines.append(json.dumps(rec))
    path = tmp_path / "md.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


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
    ["report", "--format", "markdown"],
    ["report", "--format", "markdown", "--causes"],
    ["compare", "--format", "markdown", "--runs", RUN_A, RUN_B],
    ["compare", "--format", "markdown", "--summary", "--runs", RUN_A, RUN_B],
])
def test_markdown_writers_escape_log_strings(log: Path, args: list[str]):
    """report and compare Markdown, with and without --summary: each payload is text, read back whole."""
    code, out, err = run(args[0], str(log), *args[1:])
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
