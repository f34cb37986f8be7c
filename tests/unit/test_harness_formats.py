"""Other harnesses' native output, read as it is: τ²-bench, Terminal-Bench,
OpenTelemetry GenAI traces, lm-eval samples, wrapped JSON; each against the publisher's own
figures (tests/data/*/README.md), and bad variants named as ``file:item N: reason``."""

from __future__ import annotations

import collections
import json
import math
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, read_trial
from flaketui.model import ERRORED, FAIL, PASS, FieldMap, InputError, natural_key
from flaketui.stats import summarise, task_stats
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"
TAU2 = DATA / "tau2"
CONTEXT = TAU2 / "airline_context_agent_gemini-2.5-flash_2trials.json"
GPT_OSS = TAU2 / "airline_langchain_agent_gpt-oss-120b_1trial.json"
WRAPPER = TAU2 / "adaptive_agent_airline_opus46_wrapper.json"
TB = DATA / "terminal_bench"
OPUS = TB / "20250906_orchestrator_claude-4.1-opus"
SONNET = TB / "20250902_orchestrator_claude-4-sonnet"
GOOSE = TB / "20250829_goose_claude-4-sonnet"
OTEL = DATA / "otel"
LM = DATA / "lm_eval"
ASDIV = LM / "asdiv_llama-3-8b-instruct" / "samples_asdiv_2024-08-21T03-44-09.494230.jsonl"
NEGO = LM / "negotiationtom_qwen3-8b" / "samples_negotiationtom_intention_2026-07-08T18-15-33.115417.jsonl"


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def per_task(log, run_name: str) -> dict[str, tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    o = log.run_outcomes(run_name)
    return {t: (int(n), int(c), int(e)) for t, n, c, e in zip(o.tasks, o.n, o.passes, o.errored, strict=True)}


def reasons(log) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(p) for p in log.problems]


def assert_first_item_named(src: Path, field: str, edit, reason: str, path: Path, kept: int) -> None:  # type: ignore[no-untyped-def]
    """``src`` with the first item of its ``field`` array spoiled by ``edit`` is read with that
    item named as ``path:1: reason`` and every other item kept."""
    doc = json.loads(src.read_text())
    edit(doc[field][0])
    path.write_text(json.dumps(doc))
    log = load_logs([path])
    assert reasons(log) == [f"{path}:1: {reason}"]
    assert len(log) == kept


def tau2_pass_hat_k(path: Path) -> dict[int, float]:
    """τ²'s own formula (``get_tasks_pass_hat_k``, as tests/data/tau2/README.md quotes it)."""
    sims = [s for s in json.loads(path.read_text())["simulations"]
            if s["termination_reason"] != "infrastructure_error"]
    by_task = collections.defaultdict(list)
    for s in sims:
        by_task[s["task_id"]].append(abs(s["reward_info"]["reward"] - 1.0) <= 1e-6)
    max_k = min(len(v) for v in by_task.values())
    return {k: sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in by_task.values()) / len(by_task)
            for k in range(1, max_k + 1)}


def tb_figures(path: Path) -> tuple[float, dict[str, float]]:
    """Terminal-Bench's own formula (``BenchmarkResults``, as tests/data/terminal_bench/README.md
    quotes it): null counts as a failure."""
    d = json.loads(path.read_text())
    counts = collections.defaultdict(list)
    for r in d["results"]:
        counts[r["task_id"]].append(1 if r["is_resolved"] else 0)

    def est(n: int, c: int, k: int) -> float:
        return 1.0 if n - c < k else float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))

    m = min(len(v) for v in counts.values())
    ks = sorted({2**i for i in range(1, int(np.log2(m)) + 1)}) + [k for k in (5, 10) if m >= k]
    pass_at_k = {str(k): float(np.mean([est(len(v), sum(v), k) for v in counts.values() if len(v) >= k]))
                 for k in ks}
    return sum(1 for r in d["results"] if r["is_resolved"]) / len(d["results"]), pass_at_k


class TestTau2:
    def test_context_agent_file_gives_taus_pass_hat_k(self) -> None:
        """A τ²-bench results file is one run named by its file, with τ²-bench's own pass^k per task."""
        log = load_logs([CONTEXT])
        name = "airline_context_agent_gemini-2.5-flash_2trials"
        assert log.runs == [name]  # the file names the run
        assert per_task(log, name) == {"3": (2, 1, 0), "5": (2, 2, 0), "7": (2, 0, 0), "9": (2, 1, 0)}
        summary = summarise(task_stats(log.run_outcomes(name), 2))
        want = tau2_pass_hat_k(CONTEXT)
        assert summary.pass_hat_k_curve == pytest.approx([want[1], want[2]])
        assert summary.pass_hat_k_curve == pytest.approx([0.5, 0.25])  # the README's table

    def test_info_is_kept_as_run_metadata(self) -> None:
        """The τ²-bench info block (agent model, domain, …) is kept as the run's metadata."""
        log = load_logs([CONTEXT])
        meta = log.run_meta["airline_context_agent_gemini-2.5-flash_2trials"]
        assert meta["agent_model"] == "gemini/gemini-2.5-flash"
        assert meta["domain"] == "airline"
        assert meta["git_commit"] == "19b32597b00966c34b02ffe100a5545416ee86b5"
        assert "policy" not in meta  # long texts stay in the file

    def test_messages_are_the_trace_with_tool_call_arguments(self) -> None:
        """A simulation's messages are the trial's trace, tool calls with their arguments."""
        log = load_logs([CONTEXT])
        o = log.run_outcomes(log.runs[0])
        rows = o.task_rows(o.index("9"))
        failing = read_trial(log, int(rows[0]))
        assert (failing.trial, failing.outcome) == (0, FAIL)
        calls = [c for step in failing.trace if step.get("tool_calls") for c in step["tool_calls"]]
        assert calls[0]["name"] == "get_reservation_details"
        assert calls[0]["arguments"] == {"reservation_id": "IFOYFZ"}  # the wrong look-up of the README
        assert read_trial(log, int(rows[1])).outcome == PASS

    def test_too_many_errors_and_max_steps_are_failures_not_errors(self) -> None:
        """τ²-bench's too-many-errors and max-steps terminations count as failures, not errored trials."""
        log = load_logs([GPT_OSS])
        assert per_task(log, log.runs[0]) == {"7": (1, 0, 0), "9": (1, 0, 0), "27": (1, 0, 0), "46": (1, 1, 0)}
        summary = summarise(task_stats(log.run_outcomes(log.runs[0]), 1))
        assert summary.pass_at_1.value == pytest.approx(tau2_pass_hat_k(GPT_OSS)[1]) == pytest.approx(0.25)

    def test_infrastructure_error_is_errored_with_its_reason(self, tmp_path: Path) -> None:
        """An infrastructure error makes the trial errored, its reason kept."""
        # the wrapper's simulations in a real Results object (timestamp, info): τ²'s own layout
        doc = json.loads(WRAPPER.read_text())
        path = tmp_path / "opus.json"
        path.write_text(json.dumps({"timestamp": "2026-03-18T15:25:38", "info": {"num_trials": 1},
                                    "tasks": [], "simulations": doc["simulations"]}))
        log = load_logs([path])
        assert per_task(log, "opus") == {"7": (0, 0, 1), "40": (1, 1, 0), "46": (1, 1, 0)}
        o = log.run_outcomes("opus")
        trial = read_trial(log, int(o.task_rows(o.index("7"))[0]))
        assert trial.outcome == ERRORED
        assert trial.error.startswith("infrastructure_error: litellm.RateLimitError")
        summary = summarise(task_stats(o, 1))
        assert summary.pass_at_1.value == 1.0  # τ² leaves it out: pass^1 = 1.0 (README)
        assert summary.pass_at_1_errored_range == pytest.approx((2 / 3, 1.0))

    def test_directory_format_reads_the_simulation_files(self) -> None:
        """τ²-bench's directory format is read from its simulation files, as one run named by the folder."""
        folder = TAU2 / "dir_format_voice_retail"
        log = load_logs([folder])
        assert log.runs == ["dir_format_voice_retail"]
        assert per_task(log, "dir_format_voice_retail") == {"40": (0, 0, 1)}  # no reward_info: errored
        assert read_trial(log, 0).error == "no reward_info (termination_reason: user_stop)"
        assert log.run_meta["dir_format_voice_retail"]["agent_model"] == "openai:gpt-realtime-2"
        assert not reasons(log)

    @pytest.mark.parametrize(("edit", "reason"), [
        (lambda s: s.pop("task_id"), "item 1: no task_id"),
        (lambda s: s["reward_info"].update(reward="1.0"), "item 1: reward_info.reward must be a number, got a string"),
        (lambda s: s.update(reward_info=[1]), "item 1: reward_info must be an object, got a list"),
        (lambda s: s.update(messages="hi"), "item 1: messages must be a list, got a string"),
        (lambda s: s.update(trial=-2), "item 1: trial must be a non-negative integer, got -2"),
    ])
    def test_bad_simulations_are_named_by_item(self, tmp_path: Path, edit, reason) -> None:  # type: ignore[no-untyped-def]
        """A damaged simulation is reported by its item number in the simulations array."""
        assert_first_item_named(CONTEXT, "simulations", edit, reason, tmp_path / "bad.json", 7)

    def test_truncated_and_empty_files(self, tmp_path: Path) -> None:
        """A truncated or empty results file is one input error naming the file."""
        cut = tmp_path / "cut.json"
        cut.write_bytes(CONTEXT.read_bytes()[:5000])
        with pytest.raises(InputError, match=r"cut\.json: not valid JSON"):
            load_logs([cut])
        empty = tmp_path / "empty.json"
        doc = json.loads(CONTEXT.read_text())
        doc["simulations"] = []
        empty.write_text(json.dumps(doc))
        with pytest.raises(InputError, match="no trials in this file"):
            load_logs([empty])
        wrong = tmp_path / "wrong.json"
        doc["simulations"] = {"a": 1}
        wrong.write_text(json.dumps(doc))
        with pytest.raises(InputError, match='"simulations" is not an array'):
            load_logs([wrong])


class TestWrappedJson:
    def test_the_error_names_the_array_holding_the_trials(self) -> None:
        """A JSON object holding the trials in an array gets an error suggesting --records-field with its name."""
        with pytest.raises(InputError, match='the trials look like they are in "simulations": '
                                             "add --records-field simulations"):
            load_logs([WRAPPER])

    def test_records_field_reads_them(self) -> None:
        """--records-field reads the trials from that array."""
        code, out, err = run("report", WRAPPER, "--records-field", "simulations",
                             "--score-field", "reward_info.reward", "--format", "json")
        assert code == 0, err
        (r,) = orjson.loads(out)["runs"]
        tasks = {t["task"]: (t["n"], t["passes"], t["errored"]) for t in r["tasks"]}
        # the generic reader knows no τ² rules: the infrastructure error (reward_info null)
        # has no outcome and is named (the τ² format keeps it as errored)
        assert tasks == {"40": (1, 1, 0), "46": (1, 1, 0)}
        assert f"{WRAPPER}:1: item 1: no outcome (passed, reward_info.reward)" in err
        assert r["summary"]["pass_at_1"] == 1.0  # τ²'s rule (README): pass^1 = 1.0

    def test_dotted_records_field_and_its_faults(self, tmp_path: Path) -> None:
        """A dotted --records-field reaches a nested array, and its faults are named."""
        path = tmp_path / "nested.json"
        path.write_text(json.dumps({"run": {"meta": 1, "items": [{"task": "2", "passed": True},
                                                                  {"task": "10", "passed": "yes"}]}}))
        log = load_logs([path], FieldMap(records_field="run.items"))
        assert log.tasks == ["2"]
        assert reasons(log) == [f"{path}:2: item 2: passed must be a bool or 0/1, got 'yes'"]
        with pytest.raises(InputError, match='--records-field run.trials: no field "trials" at run'):
            load_logs([path], FieldMap(records_field="run.trials"))


class TestTerminalBench:
    @pytest.mark.parametrize("path", [OPUS / "results.json", *sorted(GOOSE.glob("*results.json"))],
                             ids=lambda p: p.name)
    def test_errored_as_fail_reproduces_accuracy_and_pass_at_k(self, path: Path) -> None:
        """With --errored-as fail the Terminal-Bench results reproduce the harness's own accuracy and pass@k."""
        written = json.loads(path.read_text())
        accuracy, pass_at_k = tb_figures(path)
        assert accuracy == pytest.approx(written["accuracy"]) and pass_at_k == pytest.approx(written["pass_at_k"])
        log = load_logs([path], FieldMap(errored_as="fail"))
        (name,) = log.runs
        outcomes = log.run_outcomes(name)
        assert summarise(task_stats(outcomes, 1)).pass_at_1.value == pytest.approx(written["accuracy"])
        for k, value in written["pass_at_k"].items():
            assert summarise(task_stats(outcomes, int(k))).pass_at_k.value == pytest.approx(value)

    def test_the_opus_slice_pins(self) -> None:
        """The report of the Opus slice pins its figures with errored trials counted as failures."""
        code, out, _ = run("report", OPUS / "results.json", "--errored-as", "fail", "-k", "5", "--format", "json")
        doc = orjson.loads(out)
        assert code == 0 and doc["errored_as"] == "fail"
        s = doc["runs"][0]["summary"]
        assert (s["trials"], s["errored"], s["errored_as"]) == (55, 17, "fail")
        assert s["pass_at_1"] == pytest.approx(0.2909090909090909)  # accuracy 16/55 in the file
        assert s["pass_at_k"] == pytest.approx(0.5454545454545454)  # pass_at_k["5"] in the file
        assert s["pass_at_1_errored_range"] == pytest.approx([16 / 55, 33 / 55])

    def test_null_is_errored_and_an_all_null_task_stays_with_n_0(self) -> None:
        """A null outcome is errored, and a task with only nulls stays in the table with n = 0."""
        log = load_logs([OPUS / "results.json"], FieldMap(errored_as="apart"))
        tasks = per_task(log, "20250906_orchestrator_claude-4.1-opus")
        assert tasks["build-initramfs-qemu"] == (0, 0, 5)
        assert tasks["simple-web-scraper"] == (1, 1, 4)
        assert tasks["incompatible-python-fasttext.base_with_hint"] == (4, 3, 1)
        assert sum(e for _, _, e in tasks.values()) == 17
        stats = task_stats(log.run_outcomes(log.runs[0]), 1)
        i = stats.tasks.index("build-initramfs-qemu")
        assert np.isnan(stats.p_hat[i]) and stats.n[i] == 0
        code, out, _ = run("report", OPUS / "results.json", "--errored-as", "apart", "--format", "json")
        rows = {t["task"]: t for t in orjson.loads(out)["runs"][0]["tasks"]}
        assert rows["build-initramfs-qemu"]["n"] == 0 and rows["build-initramfs-qemu"]["p_hat"] is None
        o = log.run_outcomes(log.runs[0])
        trial = read_trial(log, int(o.task_rows(o.index("build-initramfs-qemu"))[0]))
        assert trial.error in ("is_resolved is null (test_timeout)", "is_resolved is null (parse_error)")

    def test_per_trial_files_trial_numbers_tokens_and_metadata(self) -> None:
        """Per-trial files give the run folder's name, trial numbers, token counts and metadata."""
        log = load_logs([OPUS / "create-bucket"])
        assert log.runs == ["20250906_orchestrator_claude-4.1-opus"]  # the run folder, not "results"
        assert sorted(log.trial.tolist()) == [1, 2, 3, 4, 5]  # from trial_name ".N-of-5"
        whole = load_logs([OPUS / "results.json"])
        o = whole.run_outcomes(whole.runs[0])
        rows = o.task_rows(o.index("create-bucket"))
        assert [int(whole.outcome[r]) for r in rows] == [int(x) for x in log.outcome[np.argsort(log.trial)]]
        assert set(log.metrics) == {"input_tokens", "output_tokens"}
        assert log.run_meta[log.runs[0]]["agent_name"] == "LeadArchitectAgent"

    def test_two_agents_per_trial_files_never_merge(self) -> None:
        """Two agents' per-trial files stay two runs."""
        log = load_logs([OPUS / "create-bucket", SONNET / "create-bucket"])
        assert log.runs == ["20250906_orchestrator_claude-4.1-opus", "20250902_orchestrator_claude-4-sonnet"]

    def test_runs_as_trials_reads_five_runs_as_one(self) -> None:
        """--runs-as-trials reads five runs of one agent as trials of one run."""
        log = load_logs([GOOSE], FieldMap(runs_as_trials=True))
        assert log.runs == ["20250829_goose_claude-4-sonnet"]
        o = log.run_outcomes(log.runs[0])
        assert o.errored_as == "fail" and set(o.n) == {5}  # Terminal-Bench's own rule: a null fails
        tasks = per_task(log, log.runs[0])
        assert tasks["build-initramfs-qemu"][2] == 3 and tasks["cron-broken-network"][2] == 1  # README
        assert any("5 runs read as trials of one run" in r for r in reasons(log))

    def test_run_name_from_field_takes_the_harness_run_id(self) -> None:
        """--run-name-from field names the run by the harness's own run id."""
        path = sorted(GOOSE.glob("*results.json"))[0]
        log = load_logs([path], FieldMap(run_name_from="field"))
        assert log.runs == [json.loads(path.read_text())["id"]]

    @pytest.mark.parametrize(("edit", "reason"), [
        (lambda r: r.update(is_resolved="yes"), "item 1: is_resolved must be true, false or null, got a string"),
        (lambda r: r.pop("task_id"), "item 1: no task_id"),
        (lambda r: r.update(task_id=[1]), "item 1: task must be a string or number, got a list"),
        (lambda r: r.update(trial_name="t." + "9" * 4400 + "-of-5"),  # int() of it would raise (4,300 digits)
         "item 1: trial_name's trial number has 4400 digits (at most 18)"),
    ])
    def test_bad_records_are_named_by_item(self, tmp_path: Path, edit, reason) -> None:  # type: ignore[no-untyped-def]
        """A damaged record in results.json is reported by its item number."""
        assert_first_item_named(OPUS / "results.json", "results", edit, reason, tmp_path / "results.json", 54)


class TestRunNames:
    def test_same_file_names_in_different_folders_get_path_suffixes(self, tmp_path: Path) -> None:
        """Files with one name in different folders get runs told apart by their folders."""
        for agent, passed in (("a", True), ("b", False)):
            (tmp_path / agent).mkdir()
            (tmp_path / agent / "results.jsonl").write_text(json.dumps({"task": "t", "passed": passed}) + "\n")
        log = load_logs([tmp_path])
        assert log.runs == ["a/results", "b/results"]
        assert "run is named by its folder: 'a/results', 'b/results'" in reasons(log)[0]
        log = load_logs([tmp_path], FieldMap(run_name_from="folder"))
        assert log.runs == ["a", "b"]

    def test_compare_of_two_folders_names_the_runs_apart(self, tmp_path: Path) -> None:
        """compare on two folders of like-named files names the two runs apart."""
        for agent, passed in (("a", True), ("b", False)):
            (tmp_path / agent).mkdir()
            (tmp_path / agent / "results.jsonl").write_text(json.dumps({"task": "t", "passed": passed}) + "\n")
        code, out, err = run("compare", tmp_path / "a", tmp_path / "b", "--format", "json")
        assert code == 0
        doc = orjson.loads(out)
        assert (doc["run_a"], doc["run_b"], doc["broken"]) == ("a/results", "b/results", ["t"])
        assert "both runs are named 'results'" in err

    def test_bracketed_task_ids_print_whole(self, tmp_path: Path) -> None:
        """Task ids with brackets and bars print whole, not read as markup."""
        path = tmp_path / "telecom.jsonl"
        path.write_text(json.dumps({"task": "[mobile_data_issue]data_saver_mode_on|x", "passed": True}) + "\n")
        code, out, _ = run("report", path)
        assert code == 0 and "[mobile_data_issue]data_saver_mode_on|x" in out

    def test_compare_refuses_a_run_compared_with_itself(self) -> None:
        """compare refuses to compare a run with itself, exit 2."""
        code, _, err = run("compare", CONTEXT, "--runs", CONTEXT.stem, CONTEXT.stem)
        assert code == 2 and "with itself" in err
        code, _, err = run("compare", CONTEXT, CONTEXT)
        assert code == 2 and "with itself" in err


class TestOtel:
    def test_exports_without_outcomes_say_which_flag_to_give(self) -> None:
        """OpenTelemetry exports without outcomes load as errored trials and say which flag gives the outcome."""
        log = load_logs([OTEL / "otlp_json_genai_interlingua" / "raw" / "in.json"])
        assert (log.tasks, log.outcome.tolist()) == (["chat gpt-4o-mini"], [ERRORED])
        (notice,) = reasons(log)
        assert "no outcome attribute in 1 of 1 traces" in notice
        assert "--pass-field NAME" in notice and "--score-field NAME" in notice

    def test_steps_and_tool_calls_of_each_dialect(self) -> None:
        """Each GenAI dialect (raw, OpenInference, OpenLLMetry) gives the same steps and tool calls."""
        base = OTEL / "otlp_json_genai_interlingua"
        for dialect in ("raw", "openinference", "openllmetry"):
            log = load_logs([base / dialect / "in.json"])
            trial = read_trial(log, 0)
            call = next(s for s in trial.trace if s.get("type") == "tool_call")
            assert (call["name"], call["args"]) == ("lookup_order", {"order_id": "A-1187"}), dialect
            assert trial.metrics == {"input_tokens": 412.0, "output_tokens": 27.0}, dialect
        log = load_logs([base / "openllmetry" / "in.json"])
        assert log.tasks == ["support_triage.workflow"]  # one trial per trace: the root span

    def test_console_exporter_runs(self) -> None:
        """The console exporter's output is read, with its metrics."""
        log = load_logs([OTEL / "console_exporter_agent_framework" / "traces.jsonl"])
        assert len(log) == 2 and log.tasks == ["workflow.run"]
        first = read_trial(log, 0)
        assert first.metrics == {"input_tokens": 346 + 289, "output_tokens": 82 + 94}  # README, run 1
        assert [s["name"] for s in first.trace if s.get("role") == "tool"] == ["get_weather"]

    def test_pass_and_score_fields_on_a_derived_export(self, tmp_path: Path) -> None:
        """A copy of the real raw export with outcome attributes added (the samples have none):
        three traces of one task, two passing."""
        doc = json.loads((OTEL / "otlp_json_genai_interlingua" / "raw" / "in.json").read_text())
        spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        original = spans[0]
        spans.clear()
        for i, (ok, score) in enumerate(((True, 1.0), (False, 0.2), (True, 0.9))):
            span = json.loads(json.dumps(original))
            span["traceId"] = f"{i:032x}"
            span["attributes"] += [{"key": "eval.case", "value": {"stringValue": "order-status"}},
                                   {"key": "eval.ok", "value": {"boolValue": ok}},
                                   {"key": "eval.score", "value": {"doubleValue": score}}]
            spans.append(span)
        path = tmp_path / "export.json"
        path.write_text(json.dumps(doc))
        log = load_logs([path], FieldMap(task=("eval.case",), passed=("eval.ok",)))
        assert per_task(log, "export") == {"order-status": (3, 2, 0)}
        log = load_logs([path], FieldMap(task=("eval.case",), score=("eval.score",), threshold=0.5))
        assert per_task(log, "export") == {"order-status": (3, 2, 0)}
        assert not reasons(log)

    def test_damaged_export(self, tmp_path: Path) -> None:
        """A truncated OTLP export is one input error."""
        path = tmp_path / "cut.json"
        path.write_bytes((OTEL / "otlp_json_genai_interlingua" / "raw" / "in.json").read_bytes()[:900])
        with pytest.raises(InputError, match="not a readable OpenTelemetry export"):
            load_logs([path])


class TestLmEval:
    @pytest.mark.parametrize(("path", "task", "metric", "published"), [
        (NEGO, "negotiationtom_intention", "exact_match", 0.2), (ASDIV, "asdiv", "acc", 0.92)])
    def test_pass_at_1_is_the_published_mean(self, path: Path, task: str, metric: str, published: float) -> None:
        """Each lm-evaluation-harness sample log's pass@1 equals the published mean in its results file."""
        results = json.loads(next(path.parent.glob("results_*.json")).read_text())["results"]
        assert results[task][f"{metric},none"] == published
        log = load_logs([path])
        summary = summarise(task_stats(log.run_outcomes(log.runs[0]), 1))
        assert summary.pass_at_1.value == pytest.approx(published)
        assert log.tasks == [str(i) for i in range(len(log.tasks))]  # doc_id is the task

    def test_the_folder_reads_the_samples_and_keeps_results_as_metadata(self) -> None:
        """An lm-eval output folder reads its samples and keeps the results as run metadata."""
        log = load_logs([LM / "asdiv_llama-3-8b-instruct"])
        assert len(log) == 50 and not reasons(log)
        assert log.run_meta[log.runs[0]]["model_name"] == "meta-llama/Meta-Llama-3-8B-Instruct"

    def test_reduced_repeats_are_said_plainly(self, tmp_path: Path) -> None:
        """Several generations reduced to one grade are said plainly."""
        lines = NEGO.read_text().splitlines()
        rows = [json.loads(line) for line in lines[:3]]
        for r in rows:
            r["resps"] = [[r["resps"][0][0]] * 4]  # four generations, one graded value
        path = tmp_path / "samples_x_2026-01-01T00-00-00.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        log = load_logs([path])
        assert len(log) == 3
        assert any("up to 4 generations" in r and "one trial per document" in r for r in reasons(log))

    def test_bad_lines(self, tmp_path: Path) -> None:
        """Bad lm-eval sample lines are reported, each with its reason."""
        lines = ASDIV.read_text().splitlines()
        bad = [json.loads(lines[0]), json.loads(lines[1]), json.loads(lines[2])]
        bad[0]["acc"] = "1"
        del bad[1]["doc_id"]
        path = tmp_path / "samples_asdiv_2024-01-01.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in bad) + "\n" + lines[3][:100] + "\n")
        log = load_logs([path])
        assert reasons(log)[:2] == [f"{path}:1: acc must be a number, got str", f"{path}:2: no doc_id"]
        assert reasons(log)[2].startswith(f"{path}:4: not valid JSON")
        assert len(log) == 1


class TestErroredPolicy:
    def test_every_output_states_the_policy(self) -> None:
        """Every output states the errored policy and the rate had the errored trials all failed or passed."""
        code, out, _ = run("report", OPUS / "results.json", "-k", "2", "--errored-as", "apart")
        assert code == 0
        assert ("left out of n (--errored-as apart); had they all failed / all passed, "
                "pass@1 = 0.291 / 0.600") in out
        _, out, _ = run("report", OPUS / "results.json", "--format", "json")
        assert orjson.loads(out)["runs"][0]["summary"]["errored_as"] == "fail"  # Terminal-Bench's rule
        _, out, _ = run("gate", OPUS / "results.json", "--errored-as", "fail", "--max-flakiness", "1",
                        "--format", "json")
        assert orjson.loads(out)["errored_as"] == "fail"
        _, out, _ = run("compare", CONTEXT, GPT_OSS, "--format", "json")
        assert orjson.loads(out)["errored_as"] == "apart"

    def test_a_simulation_file_alone(self, tmp_path: Path) -> None:
        """A single τ²-bench simulation file read alone is one trial."""
        sim = next((TAU2 / "dir_format_voice_retail" / "simulations").glob("*.json"))
        shutil.copy(sim, tmp_path / "one.json")
        log = load_logs([tmp_path / "one.json"])
        assert (log.runs, log.tasks, log.outcome.tolist()) == (["one"], ["40"], [ERRORED])


def test_natural_key_orders_numbers_by_value(tmp_path: Path) -> None:
    """Task ids order numbers by value (2 before 10), in the key and in the report's ties."""
    assert sorted(["task-10", "task-9", "10", "2", "1"], key=natural_key) == ["1", "2", "10", "task-9", "task-10"]
    path = tmp_path / "ties.jsonl"
    path.write_text("".join(json.dumps({"task": t, "passed": True}) + "\n" for t in ("task-10", "10", "task-9", "2")))
    code, out, _ = run("report", path, "--format", "markdown")  # equal figures: ordered by name
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|---")) + 1
    rows = [line for line in lines[start:] if line.startswith("| ")]
    assert [line.split(" | ")[0].removeprefix("| ") for line in rows] == ["2", "10", "task-9", "task-10"]


def test_folder_of_mixed_harnesses(tmp_path: Path) -> None:
    """Every sample folder opens with one command and no conversion."""
    shutil.copytree(TB / "20250906_orchestrator_claude-4.1-opus", tmp_path / "tb")
    code, _, err = run("report", tmp_path / "tb" / "results.json", TAU2 / "dir_format_voice_retail", CONTEXT,
                       ASDIV, "--format", "json")
    assert code == 0, err
