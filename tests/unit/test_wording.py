"""Words that match the numbers: counts that add up or say what is missing, no signed zero, an
interval of no width said in words, a cut table naming its order truly."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from flaketui.output import formatting as fmt
from flaketui.output.review import signed
from tests.helpers.cli import run
from tests.helpers.logs import write_log


def test_rounding_never_prints_a_signed_zero() -> None:
    """A tiny negative rounds to 0.000 and +0.000, never -0.000."""
    assert fmt.rate(-1e-9) == "0.000"
    assert fmt.interval(-1e-9, 0.5) == "[0.00, 0.50]"
    assert signed(-1e-9) == "+0.000"
    assert signed(-0.25) == "-0.250"


def test_an_interval_of_no_width_says_why() -> None:
    """Four tasks all at pass^k 0 give no spread: said in words, not [0.00, 0.00]."""
    est = SimpleNamespace(ci=(0.0, 0.0), tasks=4)
    assert fmt.suite_interval(est) == "(no interval: all 4 tasks 0.000)"
    assert fmt.suite_interval(SimpleNamespace(ci=(0.1, 0.3), tasks=4)) == "[0.10, 0.30]"
    assert fmt.suite_interval(SimpleNamespace(ci=(float("nan"), 0.3), tasks=1)) == fmt.DASH


def _trials(run: str, task: str, outcomes: list[bool | None]) -> list[dict]:
    return [{"run": run, "task": task, "trial": i, "passed": bool(o), **({"error": "boom"} if o is None else {})}
            for i, o in enumerate(outcomes)]


def test_compare_counts_add_up_to_the_tasks_in_both_runs(tmp_path: Path) -> None:
    """Three common tasks: fixed 1, broken 0, unchanged 1, and the third named as not compared (only errored in A)."""
    log = write_log(tmp_path / "runs.jsonl", [
        *_trials("a", "t1", [False, False]), *_trials("b", "t1", [True, True]),
        *_trials("a", "t2", [True, True]), *_trials("b", "t2", [True, True]),
        *_trials("a", "t3", [None, None]), *_trials("b", "t3", [True, False]),
    ])
    code, out, err = run("compare", str(log), "--runs", "a", "b")
    assert code in (0, 1), err
    assert "fixed 1, broken 0, unchanged 1; 1 not compared (only errored trials in a run)" in out


def test_a_cut_table_without_flaky_tasks_does_not_call_them_flakiest(tmp_path: Path) -> None:
    """With k = 1 no task is flaky: the left-out line names the rows shown as the least passing."""
    log = write_log(tmp_path / "one.jsonl", [
        {"task": f"t{i}", "trial": 0, "passed": i % 2 == 0} for i in range(8)])
    code, out, _ = run("report", str(log), "--top", "3")
    assert code == 0
    assert "(the 3 least passing are)" in out and "flakiest" not in out
