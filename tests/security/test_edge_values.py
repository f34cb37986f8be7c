"""Edge values on the command line: a clear usage error (exit 2) or a right answer, never a
traceback or a gate that passes by accident."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.conftest import BASELINE


def run(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), \
        result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_k_beyond_64_bits_is_a_usage_error(fmt: str) -> None:
    """A k beyond 64 bits is a usage error in every format."""
    code, out = run("report", BASELINE, "-k", 10**20, "--format", fmt)
    assert code == 2 and "must be at most" in out


def test_largest_k_reports_no_estimate() -> None:
    """k far above every task's n: pass^k is undefined (null), the report still works."""
    code, out = run("report", BASELINE, "-k", 2**31 - 1, "--format", "json")
    assert code == 0
    summary = json.loads(out)["runs"][0]["summary"]
    assert summary["pass_hat_k"] is None and len(summary["pass_hat_k_curve"]) == 12


def test_gate_fails_when_pass_hat_k_is_undefined() -> None:
    """No task has k trials: the floor cannot be checked, so the gate fails and says why."""
    code, out = run("gate", BASELINE, "-k", 20, "--min-pass-hat-k", 0.5)
    assert code == 1 and "undefined: no task has 20 non-errored trials" in out


@pytest.mark.parametrize("option", ["--max-flakiness", "--min-pass-hat-k"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1.5", "-0.1"])
def test_gate_thresholds_must_be_fractions(option: str, value: str) -> None:
    """``--max-flakiness nan`` passed every task; now it is refused."""
    code, out = run("gate", BASELINE, "-k", 5, option, value)
    assert code == 2 and "Invalid value" in out


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_threshold_must_be_finite(value: str) -> None:
    """A threshold that is not a finite number is a usage error."""
    code, out = run("report", BASELINE, "--threshold", value)
    assert code == 2 and "not a finite number" in out


@pytest.mark.parametrize("command", [["report", BASELINE], ["gate", BASELINE, "--max-flakiness", "0.3"],
                                     ["history", "status", "--history", "sqlite:///unused.db"]])
@pytest.mark.parametrize("value", ["nan", "inf", "0", "1"])
def test_flaky_cap_must_be_an_open_fraction(command: list[str], value: str) -> None:
    """``--flaky-cap nan`` is a usage error (click's FloatRange let it through to a traceback)."""
    code, out = run(*command, "--flaky-cap", value)
    assert code == 2 and "Invalid value for '--flaky-cap'" in out


def test_flakiness_gate_fails_when_every_trial_errored(tmp_path) -> None:
    """Every trial errored: the flakiness cap cannot be checked, so the gate fails (it passed on no evidence)."""
    log = tmp_path / "errored.jsonl"
    log.write_text('{"task_id": "a", "trial": 0, "error": "boom"}\n{"task_id": "b", "trial": 0, "error": "x"}\n')
    code, out = run("gate", log, "--max-flakiness", 0.3)
    assert code == 1, out
    assert "pass^1 = undefined" in out and "no task has a non-errored trial" in out
    code, out = run("gate", log, "--max-flakiness", 0.3, "--format", "json")
    assert code == 1 and json.loads(out)["runs"][0]["cap_failed"] is True
