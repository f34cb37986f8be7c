"""τ² fidelity: ``info`` as run configuration for the confound check,
``termination_reason`` / ``reward_info`` / ``review`` kept as a trial's extra fields, and the
``line`` of a trial in a pretty-printed JSON file is where its object starts. Data:
tests/data/tau2 (README: provenance)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, read_trial
from flaketui.stats.confounds import DEFAULT_CONFIG_FIELDS, confound_warning, run_config
from tests.conftest import ROOT

TAU2 = ROOT / "tests" / "data" / "tau2"
CONTEXT = TAU2 / "airline_context_agent_gemini-2.5-flash_2trials.json"
GPT_OSS = TAU2 / "airline_langchain_agent_gpt-oss-120b_1trial.json"
WRAPPER = TAU2 / "adaptive_agent_airline_opus46_wrapper.json"


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_trials_line_is_where_its_object_starts() -> None:
    """A trial's line is where its object starts."""
    log = load_logs([CONTEXT], use_cache=False)
    lines = CONTEXT.read_text().splitlines()
    sims = json.loads(CONTEXT.read_text())["simulations"]
    assert len(log) == len(sims) == 8
    for row in range(len(log)):
        trial = read_trial(log, row)
        start = int(log.line[row])
        assert trial.location == f"{CONTEXT}:{start}"
        assert lines[start - 1].strip() == "{"  # the object's opening brace
        assert lines[start].strip() == f'"id": "{trial.extra["id"]}",'  # the simulation's own first key
    assert log.line.tolist()[0] == 291  # after info and tasks; was 1, the file's header


def test_export_line_column_lands_on_the_object(tmp_path: Path) -> None:
    """The export's line column lands on the object."""
    import csv

    out = tmp_path / "t.csv"
    code, _, err = run("export", CONTEXT, "--out", out, "--no-cache")
    assert code == 0, err
    rows = list(csv.DictReader(out.open()))
    assert [int(r["line"]) for r in rows] == load_logs([CONTEXT], use_cache=False).line.tolist()
    assert rows[0]["line"] == "291"


def test_reward_info_termination_and_review_are_extra_fields(tmp_path: Path) -> None:
    """Reward info, termination and review are extra fields."""
    log = load_logs([CONTEXT])
    trial = read_trial(log, 0)
    assert trial.extra["termination_reason"] == "user_stop"
    assert set(trial.extra["reward_info"]) >= {"reward", "reward_breakdown", "action_checks", "db_check"}
    for key in ("reward_breakdown", "action_checks", "db_check"):  # one key away
        assert trial.extra[key] == trial.extra["reward_info"][key]
    # review / user_only_review: the raw objects, under their own keys
    doc = json.loads(WRAPPER.read_text())
    review = {"summary": "the user simulator contradicted the scenario", "errors": [{"turn_idx": 3}]}
    doc["simulations"][1]["review"] = review
    path = tmp_path / "reviewed.json"
    path.write_text(json.dumps({"timestamp": "2026-03-18T15:25:38", "info": {"num_trials": 1},
                                "tasks": [], "simulations": doc["simulations"]}, indent=2))
    log = load_logs([path])
    got = {read_trial(log, r).extra["id"]: read_trial(log, r).extra for r in range(len(log))}
    reviewed = got[doc["simulations"][1]["id"]]
    assert reviewed["review"] == review and "user_only_review" in reviewed
    too_many = read_trial(load_logs([GPT_OSS]), 1)
    assert too_many.extra["termination_reason"] in ("too_many_errors", "max_steps", "user_stop", "agent_stop")


def _pair(tmp_path: Path, agent_llm: str, user_llm: str) -> tuple[Path, Path]:
    doc = json.loads(CONTEXT.read_text())
    a = tmp_path / "a.json"
    a.write_text(json.dumps(doc, indent=2))
    doc["info"]["agent_info"]["llm"] = agent_llm
    doc["info"]["user_info"]["llm"] = user_llm
    b = tmp_path / "b.json"
    b.write_text(json.dumps(doc, indent=2))
    return a, b


def test_info_is_run_configuration() -> None:
    """The info block is the run's configuration."""
    log = load_logs([CONTEXT])
    config = run_config(log, log.runs[0], DEFAULT_CONFIG_FIELDS, read_trial)
    info = json.loads(CONTEXT.read_text())["info"]
    assert config["agent_model"] == info["agent_info"]["llm"] == "gemini/gemini-2.5-flash"
    assert config["user_model"] == info["user_info"]["llm"]
    assert config["domain"] == "airline"
    assert config["git_commit"] == info["git_commit"]
    assert "seed" in config  # the first simulation's seed (τ² gives each trial index one)


def test_agent_and_user_model_both_changed_warns_in_compare(tmp_path: Path) -> None:
    """With agent and user model both changed compare warns of a confound."""
    a, b = _pair(tmp_path, "openai/gpt-4.1", "openai/gpt-4o")
    log = load_logs([a, b])
    ca, cb = (run_config(log, r, DEFAULT_CONFIG_FIELDS, read_trial) for r in ("a", "b"))
    warning = confound_warning(ca, cb)
    assert warning is not None and "agent_model" in warning and "user_model" in warning
    code, out, err = run("compare", a, b, "--format", "json")
    assert code in (0, 1), err
    assert "confounded" in out + err and "user_model" in out + err
    doc = orjson.loads(out)
    assert "user_model" in json.dumps(doc)


def test_only_the_agent_model_changed_does_not_warn(tmp_path: Path) -> None:
    """With only the agent model changed compare does not warn."""
    a, b = _pair(tmp_path, "openai/gpt-4.1", json.loads(CONTEXT.read_text())["info"]["user_info"]["llm"])
    log = load_logs([a, b])
    ca, cb = (run_config(log, r, DEFAULT_CONFIG_FIELDS, read_trial) for r in ("a", "b"))
    assert confound_warning(ca, cb) is None
