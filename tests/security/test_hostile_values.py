"""Values a log gives are parsed, not trusted: nesting deeper than any writer or reader takes, a
number that overflows, a number too long to read, a trial table's refused source: each is cut
and said, or one line, never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from tests.conftest import ROOT
from tests.helpers.cli import run

HARBOR_JOB = ROOT / "tests" / "data" / "harbor" / "hello-world-job"
TRIAL = "hello-world__Tm2xQ7a"


def harbor_job(tmp_path: Path) -> Path:
    """A copy of the bundled Harbor job to plant values in."""
    job = tmp_path / "job"
    shutil.copytree(HARBOR_JOB, job)
    return job


def test_harbor_config_nested_1000_deep(tmp_path):
    """A Harbor trial config nested 1,000 objects deep (8 KB) loads; the depth is cut, and said."""
    job = harbor_job(tmp_path)
    deep = '{"a":' * 1000 + "{}" + "}" * 1000
    for name in ("result.json", "config.json"):
        path = job / TRIAL / name
        text = json.dumps(json.loads(path.read_text()))
        text = text.replace('"timeout_multiplier": 1.0', '"timeout_multiplier": 1.0, "deep": ' + deep, 1)
        assert deep in text
        path.write_text(text)
    for fmt in ("table", "json", "html"):
        code, out, err = run("report", str(job), "--format", fmt, "--no-cache")
        assert code == 0, err
    from flaketui.loading.formats.harbor import CONFIG_DEPTH, _flat_config

    flat = _flat_config(orjson.loads('{"deep": ' + deep + "}"))  # orjson reads 1,024 levels
    assert list(flat.values()) == [f"(cut: nested over {CONFIG_DEPTH} levels)"]


@pytest.mark.parametrize("total", ["1e400", "-1e400", "1e300", "NaN"])
def test_harbor_job_total_overflows(tmp_path, total):
    """A job's n_total_trials of 1e400 (infinity), 1e300 or NaN: the job loads, no traceback."""
    job = harbor_job(tmp_path)
    path = job / "result.json"
    path.write_text(path.read_text().replace('"n_total_trials": 5', f'"n_total_trials": {total}'))
    code, _, err = run("report", str(job), "--no-cache")
    assert code == 0, err


def deep_trace_log(tmp_path: Path, depth: int = 260) -> Path:
    """A task whose failing trial's tool argument is ``depth`` lists deep (777 bytes at 260)."""
    deep = "[" * depth + "]" * depth
    lines = []
    for i, passed in enumerate((True, False)):
        arg = deep if not passed else "1"
        step = '{"role":"assistant","type":"tool_call","name":"f","args":{"q":%s}}' % arg
        lines.append('{"run":"r","task":"t","trial":%d,"passed":%s,"trace":[{"role":"user","content":"q"},%s]}'
                     % (i, "true" if passed else "false", step))
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_diff_json_on_a_260_deep_argument(tmp_path):
    """diff --format json on an argument nested 260 lists deep: written cut, with a note on stderr."""
    log = deep_trace_log(tmp_path)
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
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"task": "t0", "passed": 1, "trace": [{"role": "x"}]}\n')
    (tmp_path / "tables").mkdir()
    n = secret.stat().st_size
    pq.write_table(pa.table({"run": ["r"] * 2, "task": ["t0"] * 2, "trial": [0, 1], "outcome": ["pass", "fail"],
                             "source": ["../secret.jsonl"] * 2, "source_kind": ["jsonl"] * 2,
                             "offset": [0, 0], "length": [n, n]}), tmp_path / "tables" / "t.parquet")
    for fmt in ("text", "json", "html"):
        code, _, err = run("diff", str(tmp_path / "tables" / "t.parquet"), "--task", "t0", "--format", fmt)
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
