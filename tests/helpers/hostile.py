"""Hostile strings and logs built from them: names that try to reach a terminal (for the
security tests of the outputs and screens) and payloads that try to run in a browser (for the
HTML report)."""

from __future__ import annotations

import json
from pathlib import Path

HOSTILE_NAMES = [
    "\x1b]52;c;ZXZpbA==\x07clip",  # OSC 52: writes the clipboard
    "\x1b]0;title\x07t",  # OSC 0: sets the window title
    "\x1b]8;;https://evil\x1b\\link\x1b]8;;\x1b\\",  # OSC 8: a hidden hyperlink
    "\x1b[2J\x1b[Hclear",  # CSI: clears the screen
    "[/]",  # closes a Rich tag that was never opened: MarkupError
    "[link=https://evil]x[/link]",  # a Rich hyperlink
    "a\u202eb\u200b",  # right-to-left override, zero-width space
    '=HYPERLINK("http://evil")',  # a spreadsheet formula
    "[mobile_data_issue]data_saver_mode_on|x",  # a real τ² id that looks like markup
]
HOSTILE_RUNS = ["run\x1b]0;R\x07", "[/]base"]
RAW_CONTROL = [chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if chr(c) not in "\n"]
"""Bytes that must never reach a terminal from a log (newline is the writers' own)."""


def write_hostile_log(path: Path) -> Path:
    """Two runs whose every task and run name is hostile; half the tasks flaky, with traces
    whose content is hostile too, and one bad line whose value is hostile."""
    with path.open("w", encoding="utf-8") as fh:
        for run in HOSTILE_RUNS:
            for t, task in enumerate(HOSTILE_NAMES):
                for trial in range(4):
                    passed = trial % 2 == 0 if t % 2 else True
                    step = {"role": "assistant", "content": "\x1b]52;c;AAAA\x07 [bold]x[/] \x1b[2J"}
                    fh.write(json.dumps({"run": run, "task": task, "trial": trial, "passed": passed,
                                         "trace": [step]}) + "\n")
        fh.write(json.dumps({"run": "x", "task": "\x1b]0;bad\x07", "passed": "\x1b]0;maybe\x07"}) + "\n")
    return path


def raw_controls(text: str) -> list[str]:
    """The raw control characters in ``text`` (tabs aside, which tables may use)."""
    return sorted({repr(ch) for ch in text if ch in RAW_CONTROL and ch != "\t"})


MARK = "pwned"
PAYLOADS = [
    f"<script>document.title='{MARK}'</script>",
    f"<img src=x onerror=\"document.title='{MARK}';document.body.dataset.pwned=1\">",
    f"\"><svg onload=\"document.title='{MARK}'\">",
    f"javascript:document.title='{MARK}'",
    "</script><script>document.body.dataset.pwned=1</script>",
    f"<a href=\"javascript:document.title='{MARK}'\">click</a>",
    "data:text/html,<script>document.title='pwned'</script>",
    "<!--",
    "\u2028\u2029</title><iframe src=https://evil.example/>",
]
"""Task names, run names and trace content for the HTML report, each of which would mark the
page (its title ``MARK``, or ``data-pwned`` on the body) if it ran."""


def write_html_hostile_log(path: Path) -> Path:
    """Two runs whose task names and traces are ``PAYLOADS``; every task flaky in run A, with a
    passing and a failing trace that part at step 2."""
    with path.open("w", encoding="utf-8") as fh:
        for run in (f"run-{PAYLOADS[0]}", f"base-{PAYLOADS[1]}"):
            for t, task in enumerate(PAYLOADS):
                for trial in range(4):
                    passed = trial % 2 == 0 if run.startswith("run") else t % 2 == 0
                    trace = [{"role": "user", "content": task},
                             {"role": "assistant", "type": "tool_call", "name": PAYLOADS[trial % len(PAYLOADS)],
                              "args": {"q": PAYLOADS[(t + trial) % len(PAYLOADS)]}},
                             {"role": "tool", "content": PAYLOADS[(t + 1) % len(PAYLOADS)] if passed else "x"}]
                    fh.write(json.dumps({"run": run, "task": task, "trial": trial, "passed": passed,
                                         "model": PAYLOADS[4], "trace": trace}) + "\n")
    return path


def markdown_read(text: str) -> str:
    """Markdown text as a reader sees it: CommonMark's backslash escapes and the character
    entities undone (what :func:`flaketui.sanitize.markdown_text` escaped reads as it was)."""
    import html
    import re

    return html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text))
