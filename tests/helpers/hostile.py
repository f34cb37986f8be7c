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


MARKDOWN_PAYLOADS = ["</details>", "<img src=https://evil.example/px.png>", "[Approve PR](https://evil.example/ok)",
                     "![x](https://evil.example/i.png)", "`code`", "a|b", "<https://evil.example>", "&lt;b&gt;",
                     "\\|still one cell"]
MARKDOWN_RUNS = ("base [Approve PR](https://evil.example/a)", "cand </details><img src=https://evil.example/b>")
"""Task ids and run names that are Markdown markup: a comment they reached raw would close a
block, show an image (a tracking pixel) or offer a link."""


def write_markdown_hostile_log(path: Path) -> Path:
    """Two runs named by :data:`MARKDOWN_RUNS` whose task ids are :data:`MARKDOWN_PAYLOADS`; each
    task passes in the first run and mostly fails in the second, with an error text and a trace
    holding the payload."""
    lines = []
    for run_name, passes in zip(MARKDOWN_RUNS, (4, 1), strict=True):
        for task in MARKDOWN_PAYLOADS:
            for i in range(4):
                rec = {"run": run_name, "task": task, "trial": i, "passed": i < passes,
                       "trace": [{"role": "user", "content": task}, {"role": "assistant", "content": task}]}
                if i == 3:
                    rec["error"] = f"boom {task}"
                lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_deep_argument_log(path: Path, depth: int = 260) -> Path:
    """Task ``t``: a passing trial and a failing one whose tool argument is ``depth`` lists deep
    (777 bytes at 260: deeper than orjson writes)."""
    deep = "[" * depth + "]" * depth
    lines = []
    for i, passed in enumerate((True, False)):
        arg = deep if not passed else "1"
        step = '{"role":"assistant","type":"tool_call","name":"f","args":{"q":%s}}' % arg
        lines.append('{"run":"r","task":"t","trial":%d,"passed":%s,"trace":[{"role":"user","content":"q"},%s]}'
                     % (i, "true" if passed else "false", step))
    path.write_text("\n".join(lines) + "\n")
    return path


LONG_DIGITS = "9" * 4301
"""A task id of more digits than Python reads as an int (4,300)."""


def write_long_digits_log(path: Path) -> Path:
    """Tasks named by runs of digits longer than Python reads as an int, and ordinary ones."""
    names = [LONG_DIGITS, "1", "t" + LONG_DIGITS, "t2", "0" * 5000 + "3"]
    path.write_text("".join(json.dumps({"task": t, "trial": i, "passed": i % 2 == 0, "trace": [
        {"role": "assistant", "content": t[:50]}]}) + "\n" for t in names for i in range(2)))
    return path


def write_harbor_job(folder: Path, hostile: str) -> Path:
    """The bundled Harbor job, with ``hostile`` planted: ``deep-config`` (a trial's config nested
    1,000 objects deep) or ``total-overflow`` (the job's ``n_total_trials`` 1e400)."""
    import shutil

    from tests.conftest import ROOT

    job = folder / f"harbor-{hostile}"
    shutil.copytree(ROOT / "tests" / "data" / "harbor" / "hello-world-job", job)
    if hostile == "deep-config":
        deep = '{"a":' * 1000 + "{}" + "}" * 1000
        for name in ("result.json", "config.json"):
            p = job / "hello-world__Tm2xQ7a" / name
            text = json.dumps(json.loads(p.read_text()))
            p.write_text(text.replace('"timeout_multiplier": 1.0', '"timeout_multiplier": 1.0, "deep": ' + deep, 1))
    else:
        p = job / "result.json"
        p.write_text(p.read_text().replace('"n_total_trials": 5', '"n_total_trials": 1e400'))
    return job


def write_bad_values_log(path: Path) -> Path:
    """A log whose good trials sit among lines of values no writer makes: numbers past every
    limit, nesting past every parser's, NUL and lone surrogates, a line cut short."""
    bad = [b"[" * 100_000, b'{"a":' * 3000 + b"1" + b"}" * 3000, b'{"task": "x", "trial": 1e999, "passed": true}',
           b'{"task": "x", "trial": ' + b"9" * 5000 + b', "passed": true}', b'{"task": "\\ud800", "passed": NaN}',
           b'{"task": "\\u0000nul", "passed": true, "trace": [' + b"[" * 300 + b"]" * 300 + b"]}",
           b'{"task": "cut", "passed": tr']
    good = [json.dumps({"task": f"ok{i % 3}", "trial": i, "passed": i % 2 == 0}).encode() for i in range(12)]
    path.write_bytes(b"\n".join(good[:6] + bad + good[6:]) + b"\n")
    return path


def write_refused_source_table(folder: Path) -> Path | None:
    """A Parquet trial table whose ``source`` points outside its folder (None without pyarrow)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    secret = folder / "secret.jsonl"
    secret.write_text('{"task": "t0", "passed": 1, "trace": [{"role": "x"}]}\n')
    (folder / "tables").mkdir(exist_ok=True)
    n = secret.stat().st_size
    table = folder / "tables" / "t.parquet"
    pq.write_table(pa.table({"run": ["r"] * 2, "task": ["t0"] * 2, "trial": [0, 1], "outcome": ["pass", "fail"],
                             "source": ["../secret.jsonl"] * 2, "source_kind": ["jsonl"] * 2,
                             "offset": [0, 0], "length": [n, n]}), table)
    return table


def hostile_corpus(folder: Path) -> dict[str, tuple[Path, str]]:
    """The project's hostile files, each with a task to open: terminal escapes, browser payloads,
    Markdown markup, tool arguments 260 and 1,020 lists deep, 4,301-digit ids, Harbor jobs with a 1,000-deep config and
    an overflowing count, values past every limit, a Parquet table with a refused source, an empty
    file and random bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {
        "terminal-escapes": (write_hostile_log(folder / "terminal.jsonl"), HOSTILE_NAMES[1]),
        "html-payloads": (write_html_hostile_log(folder / "html.jsonl"), PAYLOADS[0]),
        "markdown-payloads": (write_markdown_hostile_log(folder / "markdown.jsonl"), MARKDOWN_PAYLOADS[2]),
        "deep-argument": (write_deep_argument_log(folder / "deep.jsonl"), "t"),
        "deeper-argument": (write_deep_argument_log(folder / "deeper.jsonl", 1020), "t"),
        "long-digits": (write_long_digits_log(folder / "digits.jsonl"), LONG_DIGITS),
        "harbor-deep-config": (write_harbor_job(folder, "deep-config"), "hello-world"),
        "harbor-total-overflow": (write_harbor_job(folder, "total-overflow"), "hello-world"),
        "bad-values": (write_bad_values_log(folder / "values.jsonl"), "ok1"),
    }
    table = write_refused_source_table(folder)
    if table is not None:
        out["refused-parquet-source"] = (table, "t0")
    (folder / "empty.jsonl").write_bytes(b"")
    out["empty"] = (folder / "empty.jsonl", "t")
    import random

    (folder / "noise.jsonl").write_bytes(random.Random(37).randbytes(4096))
    out["noise"] = (folder / "noise.jsonl", "t")
    return out


EVERY_COMMAND: dict[str, list[str]] = {
    "report table": ["report", "LOG"],
    "report json": ["report", "LOG", "--format", "json"],
    "report csv": ["report", "LOG", "--format", "csv"],
    "report markdown": ["report", "LOG", "--format", "markdown"],
    "report html": ["report", "LOG", "--format", "html", "--out", "OUT/page.html"],
    "report causes": ["report", "LOG", "--causes"],
    "compare": ["compare", "LOG", "LOG"],
    "compare markdown summary": ["compare", "LOG", "LOG", "--format", "markdown", "--summary"],
    "compare html": ["compare", "LOG", "LOG", "--format", "html", "--out", "OUT/compare.html"],
    "diff text": ["diff", "LOG", "--task", "TASK"],
    "diff json": ["diff", "LOG", "--task", "TASK", "--format", "json"],
    "diff html": ["diff", "LOG", "--task", "TASK", "--format", "html", "--out", "OUT/diff.html"],
    "gate": ["gate", "LOG", "--max-flakiness", "0.2", "--min-pass-hat-k", "0.5"],
    "plan": ["plan", "LOG"],
    "plan emit inspect": ["plan", "LOG", "--emit", "inspect"],
    "plan emit harbor": ["plan", "LOG", "--emit", "harbor"],
    "plan emit tau2": ["plan", "LOG", "--emit", "tau2"],
    "export csv": ["export", "LOG", "--out", "OUT/trials.csv"],
    "triage export": ["triage", "export", "LOG", "--triage", "OUT/notes.triage.json"],
    "history record": ["history", "record", "LOG", "--history", "sqlite:///OUT/h.sqlite"],
    "history status": ["history", "status", "--history", "sqlite:///OUT/h.sqlite", "--format", "json"],
    "quarantine": ["quarantine", "LOG", "--max-flakiness", "0.2"],
    "quarantine junit": ["quarantine", "LOG", "--max-flakiness", "0.2", "--format", "junit"],
}
"""Every command and output format, by name: its arguments with ``LOG`` (the log), ``TASK`` (a task
of it) and ``OUT`` (a folder for its files) to fill in (:func:`command_line`)."""


def command_line(command: str, log: Path, task: str, out: Path) -> list[str]:
    """The arguments of :data:`EVERY_COMMAND` ``[command]`` for ``log``, ``task`` and ``out``."""
    return [a.replace("OUT", str(out)) if "OUT" in a else str(log) if a == "LOG" else task if a == "TASK" else a
            for a in EVERY_COMMAND[command]]
