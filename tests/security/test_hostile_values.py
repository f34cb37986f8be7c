"""Values a log gives are parsed, not trusted: nesting deeper than any writer or reader takes, a
number that overflows, a number too long to read, a trial table's refused source: each is cut
and said, or one line, never a traceback."""

from __future__ import annotations

import json

import orjson
import pytest

from tests.helpers.cli import run
from tests.helpers.hostile import write_deep_argument_log, write_harbor_job, write_refused_source_table


def test_harbor_config_nested_1000_deep(tmp_path):
    """A Harbor trial config nested 1,000 objects deep (8 KB) loads; the depth is cut, and said."""
    job = write_harbor_job(tmp_path, "deep-config")
    deep = '{"a":' * 1000 + "{}" + "}" * 1000
    for fmt in ("table", "json", "html"):
        code, out, err = run("report", str(job), "--format", fmt, "--no-cache")
        assert code == 0, err
    from flaketui.loading.formats.harbor import CONFIG_DEPTH, _flat_config

    flat = _flat_config(orjson.loads('{"deep": ' + deep + "}"))  # orjson reads 1,024 levels
    assert list(flat.values()) == [f"(cut: nested over {CONFIG_DEPTH} levels)"]


@pytest.mark.parametrize("total", ["1e400", "-1e400", "1e300", "NaN"])
def test_harbor_job_total_overflows(tmp_path, total):
    """A job's n_total_trials of 1e400 (infinity), 1e300 or NaN: the job loads, no traceback."""
    job = write_harbor_job(tmp_path, "total-overflow")
    path = job / "result.json"
    path.write_text(path.read_text().replace('"n_total_trials": 1e400', f'"n_total_trials": {total}'))
    code, _, err = run("report", str(job), "--no-cache")
    assert code == 0, err


def test_diff_json_on_a_260_deep_argument(tmp_path):
    """diff --format json on an argument nested 260 lists deep: written cut, with a note on stderr."""
    log = write_deep_argument_log(tmp_path / "deep.jsonl")
    code, out, err = run("diff", str(log), "--task", "t", "--format", "json", "--no-cache")
    assert code == 0, err
    assert "nested over" in err and "cut" in out
    json.loads(out)
    for fmt in ("text", "markdown", "html"):
        assert run("diff", str(log), "--task", "t", "--format", fmt, "--no-cache")[0] == 0


def test_cut_deep_counts_what_it_cut():
    """cut_deep replaces each container deeper than the limit by the cut text, and counts them."""
    from flaketui.sanitize import CUT, cut_deep

    value = {"a": [[[1]], [2]], "b": 3}
    assert cut_deep(value, 3) == ({"a": [[CUT], [2]], "b": 3}, 1)
    assert cut_deep(value, 10) == (value, 0)


def test_diff_on_a_refused_parquet_source(tmp_path):
    """diff on a Parquet trial table whose source lies outside its folder: one line, exit 2."""
    table = write_refused_source_table(tmp_path)
    if table is None:
        pytest.skip("no pyarrow")
    for fmt in ("text", "json", "html"):
        code, _, err = run("diff", str(table), "--task", "t0", "--format", fmt)
        assert code == 2 and "outside the table's folder" in err and len(err.strip().splitlines()) == 1, err


def test_task_name_of_4301_digits(tmp_path):
    """A task named by 4,301 digits (over Python's int-from-text limit) sorts and reports."""
    from flaketui.model import natural_key, natural_ranks, natural_ranks_by_key

    long = "9" * 4301
    names = [long, "1", "t" + long, "t2", "0" * 5000 + "3"]
    assert natural_ranks(names).tolist() == natural_ranks_by_key(names).tolist()
    assert sorted(names, key=natural_key) == ["1", "0" * 5000 + "3", long, "t2", "t" + long]
    log = tmp_path / "digits.jsonl"
    log.write_text("".join(json.dumps({"task": t, "trial": i, "passed": i % 2 == 0}) + "\n"
                           for t in names for i in range(2)))
    for fmt in ("table", "json", "csv", "markdown", "html"):
        code, _, err = run("report", str(log), "--format", fmt, "--no-cache")
        assert code == 0, (fmt, err)
