"""Real public logs, opened as they are, give the figures their publishers or READMEs state.

The logs live in ../shared/realdata (each folder's README says where they come from and
how its figures were computed); these tests skip when that folder is absent.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, read_trial
from flaketui.model import FieldMap, InputError
from flaketui.stats import summarise, task_stats
from tests.conftest import SHARED

REAL = SHARED / "realdata"
TAU = REAL / "tau-bench" / "gpt-4o-airline.json"
METR = REAL / "metr-eval-analysis" / "all_runs.jsonl"
SWE = REAL / "autocoderover-swebench-lite" / "derived_trials.jsonl"
INSPECT = REAL / "inspect-ai"

needs = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/realdata is not here")


def report_json(*args: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(main, ["report", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@needs
class TestTauBench:
    def test_published_pass_hat_k_row_with_no_flags(self) -> None:
        """The τ-bench gpt-4o airline log gives the published pass^k row with no flags."""
        # tau-bench README leaderboard, "TC (gpt-4o)", airline: 0.420 0.273 0.220 0.200
        doc = report_json(str(TAU))
        assert doc["k"] == 4
        summary = doc["runs"][0]["summary"]
        assert np.round(summary["pass_hat_k_curve"], 4).tolist() == [0.42, 0.2733, 0.22, 0.2]
        assert summary["pass_hat_k"] == pytest.approx(0.2)
        # 26 tasks passed and failed; with 4 trials none can be shown flaky against the default cap
        assert (summary["tasks"], summary["trials"], summary["mixed_tasks"], summary["flaky_tasks"]) == (50, 200, 26, 0)

    def test_table_prints_the_row(self) -> None:
        """The report table prints the published pass^k row."""
        result = CliRunner().invoke(main, ["report", str(TAU)])
        assert "pass^k for k=1..4: 0.420 0.273 0.220 0.200" in result.stdout

    def test_c_distribution(self) -> None:
        """The distribution of passes per task matches the log's."""
        # README: c over 4 trials {0: 14, 1: 12, 2: 10, 3: 4, 4: 10}
        o = load_logs([TAU]).run_outcomes("gpt-4o-airline")
        assert dict(zip(*np.unique(o.passes, return_counts=True), strict=True)) == {
            0: 14, 1: 12, 2: 10, 3: 4, 4: 10}

    def test_trace_read_back_by_byte_span(self) -> None:
        """A trial's trace is read back by its byte span, equal to the JSON item."""
        items = json.loads(TAU.read_bytes())
        log = load_logs([TAU])
        for row in (0, 101, 199):
            t = read_trial(log, row)
            assert t.trace == items[row]["traj"]
            assert (t.task, t.trial) == (str(items[row]["task_id"]), items[row]["trial"])
            assert t.extra["info"] == items[row]["info"]
        assert int(log.offset[0]) > 0 and int(log.length[0]) > 1000


@needs
class TestMetr:
    FLAGS = ("--run-field", "alias", "--task-field", "task_id", "--pass-field", "score_binarized")

    def test_opens_with_three_flags(self) -> None:
        """METR's runs open with three field flags."""
        doc = report_json(str(METR), *self.FLAGS, "-k", "8")
        runs = {r["run"]: r["summary"] for r in doc["runs"]}
        assert len(runs) == 11
        assert sum(s["trials"] for s in runs.values()) == 7063
        # README table: pass^1 over all tasks, and pass^8 over tasks with n >= 8
        for alias, p1, p8 in [("Claude 3 Opus", 0.2737, 0.103), ("Claude 3.5 Sonnet (New)", 0.5265, 0.363),
                              ("o1", 0.5299, 0.390), ("GPT-4o", 0.3313, 0.169), ("human", 0.8250, 0.001)]:
            assert round(runs[alias]["pass_at_1"], 4) == p1, alias
            assert round(runs[alias]["pass_hat_k"], 3) == p8, alias

    def test_sonnet_new_pass_hat_k_row(self) -> None:
        """The Sonnet run's pass^k row matches the figures computed from METR's data."""
        # README: [.543 .479 .445 .422 .404 .389 .375 .363] over the 80 tasks with n >= 8
        log = load_logs([METR], FieldMap(run=("alias",), task=("task_id",), passed=("score_binarized",)))
        st = task_stats(log.run_outcomes("Claude 3.5 Sonnet (New)"), 8)
        keep = st.n >= 8
        assert int(keep.sum()) == 80
        row = [float(np.mean(task_stats(log.run_outcomes("Claude 3.5 Sonnet (New)"), k).pass_hat_k[keep]))
               for k in range(1, 9)]
        assert np.round(row, 3).tolist() == [0.543, 0.479, 0.445, 0.422, 0.404, 0.389, 0.375, 0.363]
        assert summarise(st).pass_hat_k.value == pytest.approx(row[-1])


@needs
class TestSweBenchLite:
    def test_pass_hat_k_rows(self) -> None:
        """AutoCodeRover's SWE-bench Lite runs give their pass^k rows."""
        # README: ACR old eval .1611 .1222 .1067; new eval .1867 .1411 .1233; SWE-agent .0989 .0667 .05
        doc = report_json(str(SWE))
        rows = {r["run"]: np.round(r["summary"]["pass_hat_k_curve"], 4).tolist() for r in doc["runs"]}
        # Most tasks have three trials (the two ablations have one each, counted below k)
        assert doc["k"] == 3
        ablations = [r for r in doc["runs"] if r["summary"]["tasks_below_k"]]
        assert len(ablations) == 2 and all(r["summary"]["pass_hat_k"] is None for r in ablations)
        doc = report_json(str(SWE), "-k", "3", "--run", "acr/old_eval", "--run", "acr/new_eval",
                          "--run", "swe-agent/cost_2")
        rows = {r["run"]: np.round(r["summary"]["pass_hat_k_curve"], 4).tolist() for r in doc["runs"]}
        assert rows == {"acr/old_eval": [0.1611, 0.1222, 0.1067], "acr/new_eval": [0.1867, 0.1411, 0.1233],
                        "swe-agent/cost_2": [0.0989, 0.0667, 0.05]}
        pass_at_3 = {r["run"]: round(r["summary"]["pass_at_k"], 4) for r in doc["runs"]}
        assert pass_at_3 == {"acr/old_eval": 0.2233, "acr/new_eval": 0.26, "swe-agent/cost_2": 0.1467}


@needs
class TestInspect:
    def test_epochs_are_trials(self) -> None:
        """An Inspect log's epochs are trials, with the pass^k its README gives."""
        pytest.importorskip("inspect_ai")
        # README: sample 1 is I then C, sample 2 is C twice; pass^1 = 0.75, pass^2 = 0.5
        log = load_logs([INSPECT / "log_streaming.eval"])
        o = log.run_outcomes("log_streaming")
        got = {t: (int(n), int(c)) for t, n, c in zip(o.tasks, o.n, o.passes, strict=True)}
        assert got == {"1": (2, 1), "2": (2, 2)}
        doc = report_json(str(INSPECT / "log_streaming.eval"))
        assert doc["runs"][0]["summary"]["pass_hat_k_curve"] == [0.75, 0.5]
        rows = o.task_rows(o.index("1"))
        first = read_trial(log, int(rows[0]))
        assert first.trial == 1 and not first.passed
        assert first.trace and first.trace[-1]["role"] == "assistant" and first.trace[-1]["content"] == "No"
        assert first.extra["target"].strip() == "Yes"

    def test_eval_and_json_forms_agree(self) -> None:
        """An Inspect log's .eval and .json forms give the same trials."""
        pytest.importorskip("inspect_ai")
        a = load_logs([INSPECT / "log_formats.eval"])
        b = load_logs([INSPECT / "log_formats.json"])
        for log in (a, b):
            assert log.tasks == ["1"] and log.outcome.tolist() == [0]
        assert read_trial(a, 0).trace == read_trial(b, 0).trace

    def test_directory_holds_eval_logs(self) -> None:
        """A folder of Inspect logs gives one run per log."""
        pytest.importorskip("inspect_ai")
        log = load_logs([INSPECT])
        assert sorted(log.runs) == ["log_formats", "log_streaming"]  # the .json and .eval forms merge

    def test_truncated_eval_is_named(self, tmp_path: Path) -> None:
        """A .eval cut in half is a problem "not a readable Inspect AI log" beside good logs, exit 2 alone."""
        pytest.importorskip("inspect_ai")
        data = (INSPECT / "log_streaming.eval").read_bytes()
        cut = tmp_path / "cut.eval"
        cut.write_bytes(data[: len(data) // 2])
        with pytest.raises(InputError, match="no usable trials"):
            load_logs([cut])
        ok = load_logs([cut, INSPECT / "log_formats.eval"])
        assert len(ok.problems) == 1 and "not a readable Inspect AI log" in ok.problems[0].reason
        result = CliRunner().invoke(main, ["report", str(cut)])
        assert result.exit_code == 2
        assert "not a readable Inspect AI log" in result.stderr and "Traceback" not in result.output

    def test_sample_without_the_scorer(self, tmp_path: Path) -> None:
        """A sample without the chosen scorer is errored and said."""
        pytest.importorskip("inspect_ai")
        src = zipfile.ZipFile(INSPECT / "log_streaming.eval")
        out = tmp_path / "weird.eval"
        with zipfile.ZipFile(out, "w") as z:
            for name in src.namelist():
                body = src.read(name)
                if name == "summaries.json" or name.startswith("_journal/summaries/"):
                    items = json.loads(body)
                    items[0]["scores"]["match"]["value"] = {"a": 1, "b": 0}
                    body = json.dumps(items).encode()
                z.writestr(name, body)
        log = load_logs([out])
        assert len(log) == 3
        assert "is not a pass or fail" in log.problems[0].reason


def test_eval_without_inspect_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An .eval log without the inspect extra is one line naming the extra."""
    import builtins

    real_import = builtins.__import__

    def no_inspect(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name.startswith("inspect_ai"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_inspect)
    log = tmp_path / "run.eval"
    log.write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    result = CliRunner().invoke(main, ["report", str(log)])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "flaketui: error: reading Inspect AI logs needs the inspect extra: pip install 'flaketui[inspect]'"
    )
