"""The retry audit: retried trials' pass rate against first attempts', per task, by Fisher's exact
test (scipy) with Holm over tasks (statsmodels); from JSON Lines ``metrics.attempt`` and from a real
Inspect log whose samples were retried; in the report's text and JSON ``retry_audit``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import fisher_exact
from statsmodels.stats.multitest import multipletests

from flaketui.loading import load_logs
from flaketui.model import ERRORED, FAIL, PASS
from flaketui.stats.retries import retry_audit
from tests.conftest import SHARED
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
