"""The retry audit: retried trials' pass rate against first attempts', per task, by Fisher's exact
test (scipy) with Holm over tasks (statsmodels); from JSON Lines ``metrics.attempt`` and the
top-level ``attempt`` / ``retry`` fields, from a real Inspect log whose samples were retried and
from a Harbor job whose trials its queue retried; in the report's text and JSON ``retry_audit``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import fisher_exact
from statsmodels.stats.multitest import multipletests

from flaketui.loading import load_logs
from flaketui.model import ERRORED, FAIL, PASS, FieldMap
from flaketui.stats.retries import retry_audit
from tests.conftest import ROOT, SHARED
from tests.helpers.cli import run

STREAMING = SHARED / "realdata" / "inspect-ai" / "log_streaming.eval"


def test_per_task_fisher_and_holm_match_scipy_and_statsmodels() -> None:
    """Each task's p is scipy's fisher_exact on its 2×2 table; the adjusted p statsmodels' Holm."""
    rng = np.random.default_rng(7)
    task = np.repeat(np.arange(8), 30)
    attempt = np.where(rng.random(task.size) < 0.3, 2.0, 1.0)
    rate = np.where((task < 2) & (attempt > 1), 0.2, 0.85)
    outcome = np.where(rng.random(task.size) < rate, PASS, FAIL)
    outcome[rng.random(task.size) < 0.05] = ERRORED
    audit = retry_audit(task, outcome, attempt, [f"t{i}" for i in range(8)])
    assert audit is not None and audit.tasks == [f"t{i}" for i in range(8)]
    want = []
    for t in range(8):
        cells = []
        for first in (True, False):
            m = (task == t) & ((attempt <= 1) if first else (attempt > 1))
            cells.append([int(((outcome == PASS) & m).sum()), int(((outcome == FAIL) & m).sum())])
        want.append(fisher_exact(cells).pvalue)
    assert np.allclose(audit.p_value, want, rtol=1e-9)
    assert np.allclose(audit.p_adjusted, multipletests(want, method="holm")[1], rtol=1e-9)
    assert set(audit.changed) <= {"t0", "t1"} and audit.changed
    assert int(audit.first_errored.sum() + audit.retried_errored.sum()) == int((outcome == ERRORED).sum())


def test_no_retried_trial_no_audit() -> None:
    """Every trial a first attempt, or none marked: no audit."""
    task = np.zeros(4, np.int64)
    outcome = np.array([PASS, FAIL, PASS, PASS])
    assert retry_audit(task, outcome, np.ones(4), ["t"]) is None
    assert retry_audit(task, outcome, np.full(4, np.nan), ["t"]) is None


def test_report_json_and_text_say_whether_retries_changed_the_outcome(tmp_path: Path) -> None:
    """A JSON Lines log with metrics.attempt: report JSON carries retry_audit, the text its line."""
    lines = []
    for t in range(3):
        for i in range(16):
            retried = i % 4 == 0
            passed = not retried if t == 0 else i != 5
            lines.append(json.dumps({"run": "r", "task": f"t{t}", "trial": i, "passed": passed,
                                     "metrics": {"attempt": 2 if retried else 1}}))
    log = tmp_path / "retries.jsonl"
    log.write_text("\n".join(lines) + "\n")
    code, out, _ = run("report", str(log), "--format", "json")
    audit = json.loads(out)["runs"][0]["retry_audit"]
    assert code == 0 and audit["changed"] == ["t0"]
    t0 = audit["tasks"][0]
    assert (t0["first"], t0["retried"]) == ({"passes": 12, "n": 12, "errored": 0}, {"passes": 0, "n": 4, "errored": 0})
    assert t0["p_value"] == pytest.approx(fisher_exact([[12, 0], [0, 4]]).pvalue)
    code, out, _ = run("report", str(log))
    assert "retries changed the outcome rate in 1 of 3 tasks tested" in out
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(json.dumps({"run": "r", "task": "t", "trial": i, "passed": True}) for i in range(3)))
    assert json.loads(run("report", str(plain), "--format", "json")[1])["runs"][0]["retry_audit"] is None


@pytest.mark.skipif(not STREAMING.is_file(), reason="../shared/realdata is not here")
def test_a_retried_inspect_sample_is_audited(tmp_path: Path) -> None:
    """Inspect's own log with one sample retried after two errors: its trial's attempt is 3 and it is audited."""
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import EvalRetryError, read_eval_log, write_eval_log

    log = read_eval_log(str(STREAMING))
    assert log.samples
    retried = log.samples[0]
    retried.error_retries = [EvalRetryError(message="rate limit", traceback="", traceback_ansi="", events=[])] * 2
    out = tmp_path / "retried.eval"
    write_eval_log(log, str(out))
    loaded = load_logs([out])
    attempt = loaded.metrics["attempt"]
    where = {(loaded.tasks[int(loaded.task[r])], int(loaded.trial[r])): attempt[r] for r in range(len(loaded))}
    assert where[(str(retried.id), retried.epoch)] == 3.0
    assert sum(a == a for a in where.values()) == 1  # the others not marked: first attempts
    code, text, _ = run("report", str(out), "--format", "json")
    audit = json.loads(text)["runs"][0]["retry_audit"]
    assert code == 0 and audit["tasks"][0]["task"] == str(retried.id)
    assert audit["tasks"][0]["retried"]["n"] + audit["tasks"][0]["retried"]["errored"] == 1


def test_errored_trials_enter_n_as_errored_as_says(tmp_path: Path) -> None:
    """--errored-as fail counts errored trials as failures in each group's n (scipy's Fisher on that table); apart leaves them out."""
    task = np.zeros(12, np.int64)
    attempt = np.array([1.0] * 6 + [2.0] * 6)
    outcome = np.array([PASS] * 6 + [PASS, PASS, ERRORED, ERRORED, ERRORED, ERRORED])
    apart = retry_audit(task, outcome, attempt, ["t"])
    fail = retry_audit(task, outcome, attempt, ["t"], errored_as="fail")
    assert apart is not None and fail is not None
    assert (int(apart.retried_n[0]), int(fail.retried_n[0])) == (2, 6)
    assert apart.p_value[0] == pytest.approx(fisher_exact([[6, 0], [2, 0]]).pvalue)
    assert fail.p_value[0] == pytest.approx(fisher_exact([[6, 0], [2, 4]]).pvalue)
    lines = [json.dumps({"run": "r", "task": "t", "trial": i, "passed": o == PASS,
                         **({"error": "boom"} if o == ERRORED else {}), "metrics": {"attempt": int(a)}})
             for i, (o, a) in enumerate(zip(outcome.tolist(), attempt.tolist(), strict=True))]
    log = tmp_path / "errored.jsonl"
    log.write_text("\n".join(lines) + "\n")
    for policy, n in (("apart", 2), ("fail", 6)):
        code, out, err = run("report", str(log), "--format", "json", "--errored-as", policy)
        assert code == 0, err
        assert json.loads(out)["runs"][0]["retry_audit"]["tasks"][0]["retried"]["n"] == n


def test_the_summary_line_counts_agree_with_their_nouns() -> None:
    """One task, one retried trial errored: the line says task and trial in the singular."""
    task = np.zeros(4, np.int64)
    audit = retry_audit(task, np.array([PASS, PASS, FAIL, ERRORED]), np.array([1.0, 1.0, 2.0, 2.0]), ["t"])
    assert audit is not None
    line = audit.line()
    assert "in 1 task tested" in line and "(1 retried trial errored again)" in line and "tasks" not in line


def _retried_log(path: Path, mark: Callable[[bool], dict[str, Any]]) -> Path:
    """Three tasks of 16 trials, every fourth retried (``mark`` spells it): task t0's retried
    trials all fail where its first attempts pass; t1 and t2 fail one first attempt each."""
    lines = []
    for t in range(3):
        for i in range(16):
            retried = i % 4 == 0
            passed = not retried if t == 0 else i != 5
            lines.append(json.dumps({"run": "r", "task": f"t{t}", "trial": i, "passed": passed, **mark(retried)}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("mark", [
    lambda retried: {"attempt": 2 if retried else 1},
    lambda retried: {"retry": retried},
    lambda retried: {"retry": 1} if retried else {},
    lambda retried: {"attempt": 3.0} if retried else {"attempt": None},
], ids=["attempt", "retry-bool", "retry-count", "attempt-float-or-null"])
def test_top_level_attempt_or_retry_is_audited_as_metrics_attempt(tmp_path: Path, mark: Callable[[bool], Any]) -> None:
    """A top-level attempt or retry gives metrics.attempt's audit: scipy's Fisher per task, statsmodels' Holm."""
    audit = json.loads(run("report", str(_retried_log(tmp_path / "marks.jsonl", mark)), "--format", "json")[1])
    audit = audit["runs"][0]["retry_audit"]
    tables = [[[12, 0], [0, 4]], [[11, 1], [4, 0]], [[11, 1], [4, 0]]]
    want = [fisher_exact(t).pvalue for t in tables]
    assert audit["changed"] == ["t0"]
    assert [t["p_value"] for t in audit["tasks"]] == pytest.approx(want, rel=1e-9)
    assert [t["p_adjusted"] for t in audit["tasks"]] == pytest.approx(multipletests(want, method="holm")[1], rel=1e-9)
    reference = _retried_log(tmp_path / "metrics.jsonl", lambda r: {"metrics": {"attempt": 2 if r else 1}})
    assert audit == json.loads(run("report", str(reference), "--format", "json")[1])["runs"][0]["retry_audit"]


def test_a_bad_attempt_or_retry_is_named_by_file_and_line(tmp_path: Path) -> None:
    """A bad attempt or retry leaves its trial out with one problem line naming file:line; the others stay."""
    log = tmp_path / "bad.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in [
        {"task": "t", "passed": True, "attempt": 0}, {"task": "t", "passed": True, "retry": "yes"},
        {"task": "t", "passed": True, "attempt": 2}, {"task": "t", "passed": True}]) + "\n")
    loaded = load_logs([log])
    assert len(loaded) == 2 and np.array_equal(loaded.metrics["attempt"], [2.0, np.nan], equal_nan=True)
    reasons = [str(p) for p in loaded.problems]
    assert f"{log}:1: attempt must be a positive integer (1: a first attempt), got 0" in reasons
    assert any(r.startswith(f"{log}:2: retry must be a bool or a non-negative integer") for r in reasons)


def test_a_harbor_job_whose_queue_retried_trials_is_audited() -> None:
    """A Harbor trial's attempt is 1 + the retries job.log names (as n_retries); report audits them (Fisher, Holm)."""
    job = ROOT / "tests" / "data" / "harbor" / "retried-job"
    loaded = load_logs([job])
    attempt = loaded.metrics["attempt"]
    by_task = {(loaded.tasks[int(t)], a) for t, a in zip(loaded.task, attempt, strict=True) if a == a}
    assert by_task == {("hello-world", 2.0), ("fix-permissions", 3.0)} and np.isnan(attempt).sum() == 6
    n_retries = json.loads((job / "result.json").read_text())["stats"]["n_retries"]
    assert n_retries == int(np.nansum(attempt - 1)) == 3
    code, out, _ = run("report", str(job), "--format", "json")
    audit = json.loads(out)["runs"][0]["retry_audit"]
    rows = {t["task"]: t for t in audit["tasks"]}
    want = {"hello-world": fisher_exact([[3, 0], [0, 1]]).pvalue,
            "fix-permissions": fisher_exact([[1, 2], [1, 0]]).pvalue}
    assert code == 0 and audit["changed"] == []
    assert (rows["hello-world"]["first"], rows["hello-world"]["retried"]) == (
        {"passes": 3, "n": 3, "errored": 0}, {"passes": 0, "n": 1, "errored": 0})
    assert {k: rows[k]["p_value"] for k in want} == pytest.approx(want, rel=1e-12)
    names = list(want)
    holm = multipletests([want[k] for k in names], method="holm")[1]
    assert [rows[k]["p_adjusted"] for k in names] == pytest.approx(holm.tolist(), rel=1e-12)
    assert "attempt" not in load_logs([job.parent / "hello-world-job"]).metrics  # no job.log: no retry marked


def test_a_log_that_numbers_its_trials_in_attempt_reads_them_with_trial_field(tmp_path: Path) -> None:
    """With --trial-field attempt, attempt numbers the trials (0 included) and marks no retry: no audit."""
    log = tmp_path / "numbered.jsonl"
    log.write_text("\n".join(json.dumps({"task": f"t{t}", "attempt": i, "passed": i % 2 == 0})
                             for t in range(2) for i in range(4)) + "\n")
    code, out, _ = run("report", str(log), "--trial-field", "attempt", "--format", "json")
    assert code == 0 and json.loads(out)["runs"][0]["retry_audit"] is None
    loaded = load_logs([log], FieldMap(trial=("attempt",)))
    assert len(loaded) == 8 and sorted(set(loaded.trial.tolist())) == [0, 1, 2, 3] and "attempt" not in loaded.metrics
