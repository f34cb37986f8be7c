"""``report``'s output written in chunks: the same bytes as the whole-document writers
it replaced, the piped table character for character as Rich draws it, ``--top`` / ``--all``,
and the flakiest-first order."""

from __future__ import annotations

import csv
import io
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from rich.cells import cell_len
from rich.console import Console

from flaketui.cli import main
from flaketui.cli.common import DEFAULT_TOP, RowChoice, run_stats
from flaketui.session.jobs import find_causes
from flaketui.loading import load_logs
from flaketui.model import FieldMap, natural_key, natural_ranks, natural_ranks_by_key
from flaketui.output import report as out
from flaketui.output import stream
from flaketui.output.cells import cell_texts, csv_columns, cut_names, widest
from flaketui.output.columns import TASK_COLUMNS, cause_column
from flaketui.sanitize import csv_cell, markdown_text, visible
from flaketui.stats import summarise
from flaketui.stats.suite import SuiteSummary, TaskStats
from tests.conftest import BASELINE, FIXTURES
from tests.helpers.hostile import write_hostile_log

ODD_NAMES = ["x" * 50, "日本語のタスク名" * 4, "t|pipe", "é" * 45, "task-10", "task-9", "a" * 39, "b" * 41,
             "task-010", "zero", "=SUM(A1)", "\x1b[2Jclear"]


def odd_log(path: Path) -> Path:
    """Names longer than the column, wide characters, a pipe, a formula, numbers to order
    naturally, a task whose only trial errored, and mixed trial counts (k above some n)."""
    with path.open("w", encoding="utf-8") as fh:
        for i, name in enumerate(ODD_NAMES):
            for t in range(2 + i % 3):
                fh.write(json.dumps({"task": name, "trial": t, "passed": (t + i) % 3 != 0 if i % 2 else True}) + "\n")
        fh.write(json.dumps({"task": "only-errored", "trial": 0, "passed": None, "error": "boom"}) + "\n")
    return path


def suites(tmp_path: Path) -> list[tuple[str, int, list[tuple[TaskStats, SuiteSummary]]]]:
    """(name, k, each run's statistics) of the bundled logs, a hostile log and an odd one, at
    the default k and at a k above some tasks' trial counts."""
    out_ = []
    for path in (BASELINE, FIXTURES, write_hostile_log(tmp_path / "hostile.jsonl"), odd_log(tmp_path / "odd.jsonl")):
        log = load_logs([str(path)], FieldMap())
        for k in (None, 3, 7):
            kk, stats = run_stats(log, [], k)
            out_.append((f"{path.name} k={k}", kk, [(st, summarise(st)) for st in stats]))
    return out_


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three rows a chunk, so every suite is written in several pieces."""
    monkeypatch.setattr(stream, "CHUNK", 3)


# --- the whole-document writers the chunked ones replaced (the reference) -----------------


def reference_order(st: TaskStats) -> list[int]:
    flak = np.nan_to_num(st.flakiness, nan=-1.0)
    phat = np.nan_to_num(st.p_hat, nan=2.0)
    names = [natural_key(t) for t in st.tasks]
    return sorted(range(len(st)), key=lambda i: (-flak[i], phat[i], names[i]))


def reference_csv(k: int, runs: list[tuple[TaskStats, SuiteSummary]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(out.CSV_COLUMNS)
    for st, _ in runs:
        cells = [cell for key in out.CSV_KEYS for cell in TASK_COLUMNS[key].csv_cells(TASK_COLUMNS[key].json(st))]
        for row in zip(*cells, strict=True):
            w.writerow([csv_cell(st.run), k, *row])
    return buf.getvalue()


def md(text: str) -> str:
    return visible(text).replace("|", "\\|")


def md_cell(column: object, text: str) -> str:
    """A Markdown cell as the writers make it: log text (the task, text columns) through
    markdown_text, flaketui's figures with only ``|`` escaped."""
    return markdown_text(text) if column.key == "task" or not column.descending else md(text)


def reference_markdown(k: int, runs: list[tuple[TaskStats, SuiteSummary]], causes: out.Causes | None = None) -> str:
    parts = []
    for st, sm in runs:
        why = out.cause_lines(st, causes)
        head = [*map(markdown_text, out.summary_lines(sm)), *map(markdown_text, why[:1])]
        parts.append(f"## {markdown_text(st.run)}\n\n" + "  \n".join(head) + "\n")
        for w in sm.warnings:
            parts.append(f"> warning: {markdown_text(w)}\n")
        columns = out.report_columns(st.run, causes)
        rows = ["| " + " | ".join(c.header(k) for c in columns) + " |", "|" + "---|" * len(columns)]
        for i in reference_order(st):
            rows.append("| " + " | ".join(md_cell(c, c.text(st, i)) for c in columns) + " |")
        parts.append("\n".join(rows) + "\n")
        parts.append(out.TABLE_LEGEND + "\n")
        if len(why) > 1:
            parts.append("### Suspected causes\n\n" + "\n".join(f"- {markdown_text(x)}" for x in why[1:]) + "\n")
    return f"# flaketui report (k = {k})\n\n" + "\n".join(parts)


def rich_text(renderable: object, width: int = 1000) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width).print(renderable)
    return buf.getvalue()


# --- the same output ----------------------------------------------------------------


def test_every_column_gives_its_cells_at_once_as_cell_by_cell(tmp_path: Path) -> None:
    """Each column's cells made at once (table text, CSV cells, widest cell) are the ones made
    cell by cell."""
    causes = {"searchRunbook": "sampling", "x" * 50: "environment"}
    for name, _, runs in suites(tmp_path):
        for st, _ in runs:
            for col in [*TASK_COLUMNS.values(), cause_column(causes)]:
                assert cell_texts(col, st) == [col.text(st, i) for i in range(len(st))], (name, col.key)
                assert csv_columns(col, st) == col.csv_cells(col.json(st)), (name, col.key)
                assert widest(col, st) == max(map(cell_len, cell_texts(col, st)), default=0), (name, col.key)


def test_csv_and_markdown_are_the_bytes_the_whole_document_writers_made(tmp_path: Path, small_chunks: None) -> None:
    """Streamed CSV and Markdown are the bytes the whole-document writers made."""
    for name, k, runs in suites(tmp_path):
        assert out.report_csv(k, runs) == reference_csv(k, runs), name
        assert out.report_markdown(k, runs) == reference_markdown(k, runs), name


def test_markdown_with_causes_is_unchanged(small_chunks: None) -> None:
    """Markdown with causes is unchanged."""
    log = load_logs([str(BASELINE)], FieldMap())
    kk, stats = run_stats(log, [], 5)
    runs = [(st, summarise(st)) for st in stats]
    causes = find_causes(log, [st.run for st in stats])
    assert out.report_markdown(kk, runs, causes) == reference_markdown(kk, runs, causes)


def cut_in_the_middle(drawn: str, st: TaskStats) -> str:
    """Rich's table ``drawn`` with each name it cut at the end (``abc…``) cut in the middle
    as the streamed table cuts it (:func:`~flaketui.output.cells.cut_names`)."""
    from rich.cells import set_cell_size

    width = stream.TASK_MAX_WIDTH
    names = [visible(t) for t in st.tasks]
    for shown, cut in zip(names, cut_names(names, width), strict=True):
        if cell_len(shown) > width:
            drawn = drawn.replace(set_cell_size(shown, width - 1) + "…", stream.pad(cut, width, False))
    return drawn


@pytest.mark.slow
def test_piped_table_is_what_rich_draws(tmp_path: Path, small_chunks: None) -> None:
    """Piped, the streamed table is Rich's ``report_table`` character for character: whole,
    cut to the top 1 and 4, and with --causes; but for names too long for the column, cut in
    the middle rather than at the end (``report_table`` leaves that to Rich)."""
    for name, _, runs in suites(tmp_path):
        for st, sm in runs:
            for top in (None, 1, 4):
                buf = io.StringIO()
                out.print_streamed_table(Console(file=buf, width=1000), st, sm, top=top)
                expected = cut_in_the_middle(rich_text(out.report_table(st, sm, top=top)), st)
                assert buf.getvalue() == expected, (name, st.run, top)
    log = load_logs([str(BASELINE)], FieldMap())
    _, (st,) = run_stats(log, [], 5)
    causes = find_causes(log, [st.run])
    buf = io.StringIO()
    out.print_streamed_table(Console(file=buf, width=1000), st, summarise(st), causes)
    assert buf.getvalue() == rich_text(out.report_table(st, summarise(st), causes))


def test_order_is_the_reference_order(tmp_path: Path) -> None:
    """The display order is the reference order."""
    for name, _, runs in suites(tmp_path):
        for st, _ in runs:
            assert out.display_order(st).tolist() == reference_order(st), name


def test_natural_ranks_agree_with_sorting_by_natural_key() -> None:
    """natural ranks agree with sorting by natural_key on random names."""
    rng = random.Random(15)
    pool = ["a", "b", "task-", "x1y", "", "Z", "é", "٣", "\x00", "-", " ", "10", "01", "9", "007"]
    ends = ["", "1", "02", "10", "3", "99999999999999999999"]
    for _ in range(300):
        names = sorted({"".join(rng.choice(pool) for _ in range(rng.randint(0, 3))) + rng.choice(ends)
                        for _ in range(25)})
        rng.shuffle(names)
        assert natural_ranks(names).tolist() == natural_ranks_by_key(names).tolist(), names
    padded = [f"task-{i:06d}" for i in range(0, 3_000_000, 997)]  # one stem, one width
    for names in ([f"task-{i}" for i in range(3000)] + [f"q{i:05d}" for i in range(3000)] + ["plain", "task-"],
                  padded, [f"{i:04d}" for i in range(3000)], padded + ["task-x00001"],
                  [f"a{i}-{i:03d}" for i in range(10)], [f"t{i % 7}{i:04d}" for i in range(2000)],
                  [f"{i:020d}" for i in range(50)]):
        rng.shuffle(names)
        assert natural_ranks(names).tolist() == natural_ranks_by_key(names).tolist(), names[:3]


def test_rows_are_written_in_chunks(small_chunks: None) -> None:
    """No piece holds more than a chunk of rows: memory does not grow with the run."""
    log = load_logs([str(BASELINE)], FieldMap())
    _, (st,) = run_stats(log, [], 5)
    columns = out.report_columns(st.run)
    layout = stream.table_layout(st, columns, *out.table_headers(st, columns))
    pieces = list(stream.table_chunks(st, columns, layout, out.display_order(st)))
    assert len(pieces) == 1 + 9 and all(p.count("\n") <= 3 for p in pieces[1:])  # header + 25 rows in 3s
    pieces = list(stream.markdown_rows(st, columns, out.display_order(st)))
    assert len(pieces) == 9 and all(p.count("\n") <= 3 for p in pieces)


# --- on a terminal ----------------------------------------------------------------------


SGR = re.compile(r"\x1b\[[0-9;]*m")


def many_tasks_log(path: Path, tasks: int = 130) -> Path:
    with path.open("w") as fh:
        for t in range(tasks):
            for trial in range(4):
                fh.write(json.dumps({"task": f"task-{t}", "trial": trial, "passed": trial < t % 5}) + "\n")
    return path


def test_streamed_table_on_a_terminal_fits_and_keeps_colours(tmp_path: Path) -> None:
    """On a terminal the streamed table fits the width (names give way), stays aligned with
    wide characters, and keeps Rich's bold header and class colours."""
    log = load_logs([str(odd_log(tmp_path / "odd.jsonl"))], FieldMap())
    _, (st,) = run_stats(log, [], None)
    buf = io.StringIO()
    con = Console(file=buf, width=160, height=30, force_terminal=True, color_system="standard")
    out.print_streamed_table(con, st, summarise(st))
    text = buf.getvalue()
    rows = [SGR.sub("", line) for line in text.splitlines() if "│" in line or "┃" in line]
    assert len(rows) == len(st) + 1
    assert all(cell_len(line) <= 160 for line in rows)  # the task column gave way (the rest are figures)
    assert any("…" in line for line in rows)
    assert "\x1b[1m" in text and "\x1b[33m" in SGR.sub(lambda m: m[0].replace(";", "m\x1b["), text)  # bold, yellow
    assert {cell_len(row[:row.index("│")]) for row in rows[1:]} == {cell_len(rows[0][:rows[0].index("┃")])}


def test_streamed_causes_on_a_terminal_are_dim() -> None:
    """With --causes on a terminal, the cause? cells are dim, as in Rich's table."""
    log = load_logs([str(BASELINE)], FieldMap())
    _, (st,) = run_stats(log, [], 5)
    causes = find_causes(log, [st.run])
    buf = io.StringIO()
    out.print_streamed_table(Console(file=buf, width=200, height=30, force_terminal=True, color_system="standard"),
                             st, summarise(st), causes)
    (row,) = [line for line in buf.getvalue().splitlines() if line.startswith("searchRunbook")]
    assert "\x1b[2mtool-nondeterminism" in row


def test_terminal_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal: a run longer than the screen shows its 50 flakiest and the left-out line;
    --watch fits the screen; --all shows every task; --top N N of them."""
    log = many_tasks_log(tmp_path / "many.jsonl")
    buf = io.StringIO()
    monkeypatch.setattr(out, "console", lambda: Console(file=buf, width=160, height=40, force_terminal=True))

    def rows_shown(*args: str) -> tuple[int, str]:
        buf.seek(0)
        buf.truncate()
        result = CliRunner().invoke(main, ["report", str(log), *args])
        assert result.exit_code == 0, result.output
        text = SGR.sub("", buf.getvalue())
        return sum(1 for line in text.splitlines() if "│" in line), text

    shown, text = rows_shown()
    assert shown == DEFAULT_TOP and f"… {130 - DEFAULT_TOP} more tasks not shown" in text and "--all" in text
    shown, text = rows_shown("--top", "7")
    assert shown == 7 and "123 more tasks" in text
    shown, text = rows_shown("--all")
    assert shown == 130 and "not shown" not in text
    assert RowChoice(watch=True).shown(130, True, 40, 6) == 40 - 6 - 4
    assert RowChoice(watch=True).shown(30, True, 40, 6) is None  # fits: every task
    assert RowChoice().shown(10**6, False, 40, 6) is None  # piped: every task
    assert RowChoice(top=5).shown(10**6, False, 40, 6) == 5


# --- the command line -------------------------------------------------------------------


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("args", [["--top", "0"], ["--top", "-3"], ["--top", "x"], ["--top", "2", "--all"],
                                  ["--top", "2", "--format", "csv"], ["--top", "2", "--format", "json"]])
def test_bad_top_is_a_usage_error(args: list[str]) -> None:
    """A bad --top is a usage error."""
    code, out_, err = run("report", BASELINE, *args)
    assert code == 2 and out_ == "" and "--top" in err


def test_piped_table_has_every_row_and_top_cuts_it() -> None:
    """The piped table has every row and --top cuts it."""
    code, every, _ = run("report", BASELINE, "-k", "5")
    assert code == 0 and sum("│" in line for line in every.splitlines()) == 25
    assert run("report", BASELINE, "-k", "5", "--all")[1] == every
    code, top, _ = run("report", BASELINE, "-k", "5", "--top", "3")
    rows = [line for line in top.splitlines() if "│" in line]
    assert code == 0 and len(rows) == 3 and rows[0].startswith("searchRunbook")
    assert "… 22 more tasks not shown (the 3 flakiest are)" in top
    assert run("report", BASELINE, "-k", "5", "--top", "25")[1] == every  # nothing left out: no line


def test_markdown_top() -> None:
    """--top cuts the Markdown table."""
    code, text, _ = run("report", BASELINE, "-k", "5", "--format", "markdown", "--top", "2")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert code == 0 and len(rows) == 3 and rows[1].startswith("| searchRunbook |")  # header + 2
    assert "… 23 more tasks not shown" in text
    code, every, _ = run("report", BASELINE, "-k", "5", "--format", "markdown", "--all")
    assert every == run("report", BASELINE, "-k", "5", "--format", "markdown")[1]


def test_rows_without_the_name_first_are_made_cell_by_cell(tmp_path: Path, small_chunks: None) -> None:
    """Columns in another order (the name not first) still give each row's cells in order."""
    log = load_logs([str(write_hostile_log(tmp_path / "hostile.jsonl"))], FieldMap())
    kk, stats = run_stats(log, [], None)
    for st in stats:
        columns = [TASK_COLUMNS[key] for key in ("class", "task", "n", "p_hat_ci")]
        order = out.display_order(st)
        expected = "".join("| " + " | ".join(md_cell(c, c.text(st, i)) for c in columns) + " |\n" for i in order)
        assert "".join(stream.markdown_rows(st, columns, order)) == expected
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        cells = [cell for c in columns for cell in c.csv_cells(c.json(st))]
        writer.writerows([csv_cell(st.run), kk, *row] for row in zip(*cells, strict=True))
        assert "".join(stream.csv_chunks(st, kk, csv_cell(st.run), columns)) == buf.getvalue()


@pytest.mark.parametrize("values", [[0.5, np.nan], [np.nan, np.nan], [-0.0, 1.0], [9.9996, 0.1], [12.25, 0.5],
                                    [-3.0, 0.0]])
def test_widest_cell_outside_the_usual_range(values: list[float]) -> None:
    """Where the range does not decide a column's width (negative, ten or more, -0), the
    widest cell is still the widest text."""
    import dataclasses

    from flaketui.stats.estimators import Interval

    log = load_logs([str(BASELINE)], FieldMap())
    _, (st,) = run_stats(log, [], 5)
    arr = np.resize(np.array(values), len(st))
    odd = dataclasses.replace(st, p_hat=arr, p_hat_ci=Interval(arr, arr[::-1].copy()), rule_of_three=arr,
                              n=-np.asarray(st.n) if values[0] < -1 else st.n)
    for key in ("p_hat", "p_hat_ci", "n", "rule_of_three"):
        col = TASK_COLUMNS[key]
        assert widest(col, odd) == max(cell_len(col.text(odd, i)) for i in range(len(odd))), (key, values)


@pytest.mark.parametrize("record", [False, True])
def test_the_log_is_let_go_before_the_statistics_unless_recorded(monkeypatch, tmp_path, record):
    """Without --record the report's statistics are made after the loaded log is gone (its trial
    table is not held at the peak); with --record the log is kept for the history."""
    import weakref

    import flaketui.cli.report as report_cli

    refs: list[weakref.ref] = []
    alive: list[bool] = []
    read_report, outcome_stats = report_cli.read_report, report_cli.outcome_stats

    def reading(log, *args, **kwargs):
        refs.append(weakref.ref(log))
        return read_report(log, *args, **kwargs)

    def making(*args, **kwargs):
        alive.append(refs[0]() is not None)
        return outcome_stats(*args, **kwargs)

    monkeypatch.setattr(report_cli, "read_report", reading)
    monkeypatch.setattr(report_cli, "outcome_stats", making)
    args = ["report", str(FIXTURES), "--format", "json"]
    if record:
        args += ["--record", "--history", f"sqlite:///{tmp_path / 'h.db'}"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert alive == [record]


def test_the_reports_outcomes_hold_nothing_of_the_log(tmp_path):
    """The outcomes a report keeps once its log is gone share no memory with the log: graded
    scores are copied (equal), scores of pass/fail trials dropped (the statistics do not read them)."""
    from flaketui.cli.report import apart_from_log
    from tests.helpers.logs import write_log

    graded = load_logs([str(write_log(tmp_path / "g.jsonl", [
        {"task": t, "trial": i, "score": x} for t in "ab" for i, x in enumerate((0.25, 1.0, 0.5))]))], FieldMap())
    kept = apart_from_log(o := graded.run_outcomes(graded.runs[0]))
    assert np.shares_memory(o.trial_scores, graded.score)  # the run is the whole log: its own column
    assert not np.shares_memory(kept.trial_scores, graded.score)
    assert np.array_equal(kept.trial_scores, o.trial_scores)
    plain = load_logs([str(write_log(tmp_path / "p.jsonl", [
        {"task": "a", "trial": i, "score": float(i > 0)} for i in range(3)]))], FieldMap())
    dropped = apart_from_log(plain.run_outcomes(plain.runs[0]))
    assert dropped.trial_scores is None and dropped.trial_errored is None


def test_a_report_reading_is_printed_once():
    """A report's reading hands its outcomes over once: printing it again is an error, not an
    empty report (the first printing let each run's outcomes go)."""
    from flaketui.cli.report import print_read, read_report

    read = read_report(load_logs([str(FIXTURES)], FieldMap()), ())
    print_read(read, None, "csv")
    with pytest.raises(RuntimeError, match="handed over already"):
        print_read(read, None, "csv")
