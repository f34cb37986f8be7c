"""The Parquet trial table: export, read back (traces through the source), and DuckDB agrees."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, read_trial
from tests.conftest import BASELINE, CANDIDATE, FIXTURES


def invoke(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def table(tmp_path: Path) -> Path:
    out = tmp_path / "trials.parquet"
    code, _, err = invoke("export", FIXTURES, "--out", out)
    assert code == 0 and "wrote 601 trials" in err
    return out


def test_report_of_the_table_equals_the_report_of_the_logs(table: Path) -> None:
    """Every figure of every run and task is the same read from Parquet as from the JSONL."""
    _, from_logs, _ = invoke("report", FIXTURES, "-k", 5, "--format", "json")
    _, from_table, _ = invoke("report", table, "-k", 5, "--format", "json")
    assert json.loads(from_table) == json.loads(from_logs)


def test_traces_are_read_from_the_source_by_offset(table: Path) -> None:
    """A trial opened from the table has the trace, fields and errors of its JSONL line."""
    tl, jl = load_logs([table], use_cache=False), load_logs([BASELINE, CANDIDATE], use_cache=False)
    run = tl.runs.index("oncall-baseline")
    task = tl.tasks.index("searchRunbook")
    rows = [r for r in range(len(tl)) if tl.run[r] == run and tl.task[r] == task]
    assert len(rows) == 12
    for r in rows[:3]:
        a = read_trial(tl, r)
        jrow = next(j for j in range(len(jl)) if jl.runs[jl.run[j]] == a.run
                    and jl.tasks[jl.task[j]] == a.task and jl.trial[j] == a.trial)
        b = read_trial(jl, jrow)
        assert (a.trace, a.extra, a.outcome, a.metrics) == (b.trace, b.extra, b.outcome, b.metrics)
        assert a.trace


def test_duckdb_query_gives_flaketuis_counts(table: Path) -> None:
    """The manual's DuckDB query (docs/sharing.md) over the table equals flaketui's per-task n and passes."""
    duckdb = pytest.importorskip("duckdb")
    rows = duckdb.sql(
        "select run, task, count(*) filter (where outcome <> 'errored') as n, "
        "count(*) filter (where outcome = 'pass') as passes, "
        "count(*) filter (where outcome = 'errored') as errored "
        f"from read_parquet('{table}') group by run, task"
    ).fetchall()
    log = load_logs([FIXTURES], use_cache=False)
    ours = {}
    for run in log.runs:
        o = log.run_outcomes(run)
        for i, t in enumerate(o.tasks):
            ours[(run, t)] = (int(o.n[i]), int(o.passes[i]), int(o.errored[i]))
    assert {(r, t): (n, c, e) for r, t, n, c, e in rows} == ours
    assert ours[("oncall-baseline", "listAlerts")] == (12, 12, 1)


def test_csv_export_neutralises_formulas_unless_raw(tmp_path: Path) -> None:
    """CSV export neutralises formulas unless --raw."""
    log = tmp_path / "f.jsonl"
    log.write_text('{"task": "=cmd()", "passed": true}\n{"task": "-1", "passed": false}\n')
    _, out, _ = invoke("export", log, "--format", "csv", "--out", "-")
    header, *lines = out.splitlines()
    assert header.startswith("run,task,trial,outcome,passed,errored,score,group,source")
    assert lines[0].startswith("f,'=cmd(),0,pass,True") and lines[1].startswith("f,'-1,0,fail")
    _, raw, _ = invoke("export", log, "--format", "csv", "--out", "-", "--raw")
    assert raw.splitlines()[1].startswith("f,=cmd(),0,pass")


def test_not_a_trial_table_is_named(tmp_path: Path) -> None:
    """A Parquet file that is not a trial table is named."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), other)
    code, _, err = invoke("report", other)
    assert code == 2 and "not a flaketui trial table: no column run, task, outcome" in err
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1 not really")
    code, _, err = invoke("report", junk)
    assert code == 2 and "not a readable Parquet file" in err


def test_missing_pyarrow_is_one_line(table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the parquet extra: one line naming it, exit 2."""
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    code, _, err = invoke("report", table, "--no-cache")
    assert code == 2 and "needs the parquet extra: pip install 'flaketui[parquet]'" in err
    code, _, err = invoke("export", FIXTURES, "--out", table.with_name("x.parquet"))
    assert code == 2 and "parquet extra" in err


@pytest.mark.parametrize("raw", [False, True])
def test_csv_in_pieces_equals_the_table_written_row_by_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          raw: bool) -> None:
    """The CSV made a few rows at a time (names neutralised once each) is the table written row by
    row with each text cell neutralised: hostile names, errored trials, missing scores, metrics."""
    import csv
    import io

    from flaketui.output import trials
    from flaketui.sanitize import csv_cell
    from tests.helpers.hostile import write_hostile_log

    log = load_logs([write_hostile_log(tmp_path / "h.jsonl"), BASELINE], use_cache=False)
    cols = trials.trial_columns(log)
    want = io.StringIO()
    w = csv.writer(want, lineterminator="\n")
    w.writerow(cols)
    for row in zip(*(c.tolist() for c in cols.values()), strict=True):
        w.writerow(["" if v is None else (csv_cell(v) if name in ("run", "task", "group", "source") and not raw
                                          else v) for name, v in zip(cols, row, strict=True)])
    monkeypatch.setattr(trials, "CSV_ROWS", 3)
    pieces = list(trials.trials_csv_chunks(log, raw))
    assert len(pieces) > 3
    assert "".join(pieces) == want.getvalue()


def test_raw_csv_on_a_terminal_spells_out_control_characters(tmp_path: Path) -> None:
    """--raw keeps names as they are in a file; for a terminal their control characters are spelled out."""
    from flaketui.output import trials
    from tests.helpers.hostile import raw_controls, write_hostile_log

    log = load_logs([write_hostile_log(tmp_path / "h.jsonl")], use_cache=False)
    assert raw_controls("".join(trials.trials_csv_chunks(log, raw=True)))  # a file gets them as they are
    on_terminal = "".join(trials.trials_csv_chunks(log, raw=True, terminal=True))
    assert not raw_controls(on_terminal.replace("\n", ""))
    assert "\\x1b" in on_terminal and "'=" not in on_terminal  # spelled out, and no formula quote
