"""Each harness's own way of counting errored trials by default (Harbor: by reward, a trial without
one failing; Terminal-Bench: a null fails; JSON Lines: apart), its published figures printed beside
flaketui's, who ran a run, and ``--runs-as-trials`` on the leaderboard layout ``AGENT/run_1 … run_5``."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from scipy.special import comb

from flaketui.loading import load_logs
from flaketui.model import FieldMap
from flaketui.stats.published import check, mean_score
from tests.conftest import ROOT
from tests.helpers.cli import run

JOB = ROOT / "tests" / "data" / "harbor" / "hello-world-job"
TB = ROOT / "tests" / "data" / "terminal_bench"
GOOSE = TB / "20250829_goose_claude-4-sonnet"
OPUS = TB / "20250906_orchestrator_claude-4.1-opus"
REAL = ROOT.parent / "shared" / "realdata" / "harbor-datagen"
REAL_JOBS = {  # job folder → Harbor's own n_errors and mean (its job result.json, per the README)
    "auth_token_race_condition/example_runs/successful_run_2025-11-19": (0, 1.0),
    "fix_async_worker_queue/example_runs/partial_success_2025-11-19": (0, 0.0),
}
LONE = "etl_checkpoint_resume_bug/example_runs/run_2025-11-19__14-39-23"
REWARDS = {"hello-world": [1.0, 1.0, 0.0], "fix-permissions": [0.55, None]}
"""The built job's rewards by task (tests/data/harbor/README.md): a timeout with reward 0, a
partial reward and a setup error without one."""


def report_json(*args: object) -> dict:
    code, out, err = run("report", *map(str, args), "--format", "json")
    assert code == 0, err
    return orjson.loads(out)


def harbor_pass_at_k(rewards: dict[str, list[float | None]], k: int) -> float:
    """pass@k by Harbor's convention, by hand: a trial passes at reward 1, one without a reward fails."""
    values = []
    for trials in rewards.values():
        n, c = len(trials), sum(1 for r in trials if r is not None and r >= 1)
        values.append(1 - comb(n - c, k, exact=True) / comb(n, k, exact=True))
    return float(np.mean(values))


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/realdata/harbor-datagen is absent")
@pytest.mark.parametrize("job", sorted(REAL_JOBS))
def test_real_harbor_jobs_reproduce_harbors_errors_and_mean(job: str) -> None:
    """Each real Harbor job's n_errors and mean reward are recomputed equal, and the report says they match."""
    errors, mean = REAL_JOBS[job]
    doc = report_json(REAL / job)
    figures = {f["name"]: f for f in doc["runs"][0]["published"]["figures"]}
    assert figures["n_errors"]["flaketui"] == figures["n_errors"]["published"] == errors
    assert figures["mean"]["flaketui"] == figures["mean"]["published"] == mean
    assert doc["runs"][0]["published"]["matches"] is True
    _, out, _ = run("report", str(REAL / job))
    assert "flaketui's match Harbor's" in out


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/realdata/harbor-datagen is absent")
def test_a_lone_trial_folder_is_named_after_itself_with_the_configured_model() -> None:
    """A trial folder outside its job is its own run; the model is config.json's, not the trajectory's."""
    doc = report_json(REAL / LONE)
    run_ = doc["runs"][0]
    assert run_["run"] == "run_2025-11-19__14-39-23"
    assert run_["meta"]["model"] == "anthropic/claude-sonnet-4-5" and run_["meta"]["harness"] == "Harbor"


def test_the_built_job_gives_harbors_mean_and_pass_at_k_by_default() -> None:
    """The built job (partial reward, timeout at 0, setup error): Harbor's mean, and its pass@k by default."""
    log = load_logs([JOB])
    flat = [np.nan if r is None else r for rs in REWARDS.values() for r in rs]
    assert mean_score(np.array(flat)) == math.fsum([1.0, 1.0, 0.0, 0.55, 0.0]) / 5 == 0.51
    checked = check(log, "hello-world-job")
    assert checked is not None and checked.matches
    assert {f.name: f.ours for f in checked.figures} == {"n_total_trials": 5, "n_errors": 2, "mean": 0.51}
    doc = report_json(JOB, "-k", "2")
    summary = doc["runs"][0]["summary"]
    assert doc["errored_as"] == summary["errored_as"] == "score"
    assert summary["trials"] == 5 and summary["errored"] == 2
    assert summary["pass_at_1"] == pytest.approx(harbor_pass_at_k(REWARDS, 1))
    assert summary["pass_at_k"] == pytest.approx(harbor_pass_at_k(REWARDS, 2)) == pytest.approx(0.5)
    _, out, _ = run("report", str(JOB), "-k", "2")
    assert ("errored trials (AgentTimeoutError 1, RuntimeError 1) counted by their score (a timeout keeps its "
            "own; none: a failure) (as Harbor counts them; --errored-as apart sets them apart)") in out
    assert "Harbor's own figures: trials 5, errored trials 2, mean reward 0.51: flaketui's match Harbor's" in out


def test_errored_as_apart_gives_the_figures_of_before() -> None:
    """``--errored-as apart`` leaves the errored trials out of n, as flaketui did before the harness default."""
    doc = report_json(JOB, "-k", "2", "--errored-as", "apart")
    summary = doc["runs"][0]["summary"]
    assert summary["errored_as"] == "apart" and summary["trials"] == 3
    assert summary["pass_at_1"] == pytest.approx((2 / 2 + 0 / 1) / 2)
    tasks = {t["task"]: t for t in doc["runs"][0]["tasks"]}
    assert (tasks["hello-world"]["n"], tasks["fix-permissions"]["n"]) == (2, 1)


def test_a_timeout_with_a_passing_reward_keeps_it_by_default(tmp_path: Path) -> None:
    """Harbor's rule: a timed-out trial with reward 1 passes (``fail`` would fail it), and still counts as errored."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    path = job / "hello-world__Zr5bW1c" / "result.json"
    doc = json.loads(path.read_text())
    doc["verifier_result"]["rewards"]["reward"] = 1.0
    path.write_text(json.dumps(doc))
    o = load_logs([job]).run_outcomes("job")
    i = o.index("hello-world")
    assert (o.n[i], o.passes[i], o.errored[i]) == (3, 3, 1)
    o = load_logs([job], FieldMap(errored_as="fail")).run_outcomes("job")
    assert (o.n[i], o.passes[i]) == (3, 2)


def test_a_published_figure_that_differs_is_a_warning_naming_both_and_why(tmp_path: Path) -> None:
    """A job with a trial deleted: the trial count and mean differ from Harbor's, said with both numbers and why."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    shutil.rmtree(job / "hello-world__Tm2xQ7a")
    _, out, _ = run("report", str(job))
    assert "warning: trials: flaketui 4, Harbor's 5 (4 of 5 trials on disk)" in out
    assert "warning: mean reward: flaketui 0.3875, Harbor's 0.51 (4 of 5 trials on disk)" in out
    assert report_json(job)["runs"][0]["published"]["matches"] is False


def test_terminal_bench_nulls_fail_by_default_and_its_figures_match() -> None:
    """A Terminal-Bench run counts a null is_resolved as a failure by default and reproduces its accuracy and pass@k."""
    doc = report_json(OPUS / "results.json")
    entry = doc["runs"][0]
    assert entry["summary"]["errored_as"] == "fail" and entry["summary"]["trials"] == 55
    figures = {f["name"]: f for f in entry["published"]["figures"]}
    assert figures["accuracy"]["published"] == pytest.approx(0.2909090909090909)
    assert figures["pass_at_5"]["published"] == pytest.approx(0.5454545454545454)
    assert entry["published"]["matches"] is True
    assert entry["summary"]["pass_at_1"] == pytest.approx(16 / 55)  # every task has 5 trials


def leaderboard(tmp_path: Path, *agents: str) -> list[Path]:
    """Each agent's folder in the leaderboard layout ``AGENT/run_1 … run_5`` (the goose runs, one attempt each)."""
    runs = sorted(GOOSE.glob("*results.json"))
    out = []
    for agent in agents:
        for i, src in enumerate(runs, 1):
            (tmp_path / agent / f"run_{i}").mkdir(parents=True)
            shutil.copy(src, tmp_path / agent / f"run_{i}" / "results.json")
        out.append(tmp_path / agent)
    return out


def test_runs_as_trials_reads_the_leaderboard_layout_as_five_trials_a_task(tmp_path: Path) -> None:
    """``AGENT/run_1 … run_5`` with --runs-as-trials: one run named AGENT, n = 5 per task, a notice."""
    (droid,) = leaderboard(tmp_path, "droid")
    log = load_logs([droid], FieldMap(runs_as_trials=True))
    assert log.runs == ["droid"]
    o = log.run_outcomes("droid")
    assert set(o.n.tolist()) == {5} and len(o.tasks) == 11
    assert any("5 runs read as trials of one run 'droid'" in str(p) for p in log.problems)
    assert len(load_logs([droid]).runs) == 5  # without the flag: five runs, as before


def test_two_named_agents_in_the_leaderboard_layout_stay_two_runs(tmp_path: Path) -> None:
    """Two agents' folders given together with --runs-as-trials are two runs, each of 5 trials a task."""
    folders = leaderboard(tmp_path, "droid", "other")
    log = load_logs(folders, FieldMap(runs_as_trials=True))
    assert log.runs == ["droid", "other"]
    assert all(set(log.run_outcomes(r).n.tolist()) == {5} for r in log.runs)


def test_two_harbor_jobs_compare_shows_the_confounds_values(tmp_path: Path) -> None:
    """Two Harbor jobs whose model and timeout multiplier differ: compare's JSON lists both with values."""
    for name in ("a", "b"):
        shutil.copytree(JOB, tmp_path / name)
    config = json.loads((tmp_path / "b" / "config.json").read_text())
    config["timeout_multiplier"] = 2.0
    config["agents"][0]["model_name"] = "anthropic/claude-sonnet-4-5"
    (tmp_path / "b" / "config.json").write_text(json.dumps(config))
    code, out, _ = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json")
    doc = orjson.loads(out)
    assert {"field": "timeout_multiplier", "a": "1.0", "b": "2.0"} in doc["confounds"]
    assert {"field": "model", "a": "openai/gpt-4o", "b": "anthropic/claude-sonnet-4-5"} in doc["confounds"]
    assert "timeout_multiplier 1.0 vs 2.0" in doc["confound_warning"]


def test_triage_export_lists_the_confounds_and_a_configuration_source(tmp_path: Path) -> None:
    """triage export of two differently configured jobs: the confounds with values, each flip's source configuration."""
    for name in ("a", "b"):
        shutil.copytree(JOB, tmp_path / name)
    config = json.loads((tmp_path / "b" / "config.json").read_text())
    config["timeout_multiplier"] = 2.0
    (tmp_path / "b" / "config.json").write_text(json.dumps(config))
    for trial in (tmp_path / "b").glob("hello-world__*/result.json"):  # every hello-world trial fails in b
        doc = json.loads(trial.read_text())
        if doc.get("verifier_result"):
            doc["verifier_result"]["rewards"]["reward"] = 0.0
        trial.write_text(json.dumps(doc))
    notes = tmp_path / "notes.json"
    code, out, err = run("triage", "export", str(tmp_path / "a"), str(tmp_path / "b"), "--triage", str(notes),
                         "--format", "json")
    assert code == 0, err
    doc = orjson.loads(out)
    (comparison,) = doc["comparisons"]
    assert comparison["confounds"] == [{"field": "timeout_multiplier", "a": "1.0", "b": "2.0"}]
    sources = [f["first_divergence"]["suggested_source"] for f in comparison["flips"] if f["first_divergence"]]
    assert sources and set(sources) == {"configuration"}


def test_the_history_keeps_who_ran_a_harbor_job(tmp_path: Path) -> None:
    """Recording a Harbor job keeps its agent, model and harness with the run (the history's meta column)."""
    pytest.importorskip("sqlalchemy")
    import sqlalchemy as sa

    from flaketui.history import open_store, schema
    from flaketui.history.recording import run_records

    with open_store(f"sqlite:///{tmp_path / 'h.sqlite'}") as store:
        store.record(run_records(load_logs([JOB])))
        with store.reading() as conn:
            (meta,) = conn.execute(sa.select(schema.runs.c.meta)).scalars().all()
    assert (meta["agent"], meta["model"], meta["harness"]) == ("terminus-2", "openai/gpt-4o", "Harbor")
