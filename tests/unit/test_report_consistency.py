"""``report --causes --format json``: each flaky task's ``action_consistency`` and ``sequence_consistency``."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from click.testing import CliRunner
from scipy.spatial.distance import jensenshannon

from flaketui.cli import main
from tests.conftest import BASELINE, SHARED
from tests.helpers.traces import plain_levenshtein

GEN = SHARED / "bench" / "gen_trials.py"
KEYS = ("action_consistency", "sequence_consistency")


def run(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


def tasks_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["task"]: t for t in doc["runs"][0]["tasks"]}


def actions(trace: list[dict[str, Any]]) -> list[str]:
    """The tool names in a flat-steps or OpenAI-messages trace, and ``answer`` for the agent's last
    message without a call: read here straight from the JSON, apart from flaketui's reader."""
    out: list[str] = []
    answer_at = None
    for step in trace:
        if step.get("role") != "assistant":
            continue
        names = [c["function"]["name"] for c in step.get("tool_calls") or []]
        if step.get("type") == "tool_call":
            names = [step["name"]]
        if names:
            out += names
        else:
            answer_at = len(out)
    if answer_at is not None:
        out.insert(answer_at, "answer")
    return out




def expected(seqs: list[list[str]]) -> tuple[float | None, float | None]:
    seqs = [s for s in seqs if s]
    if len(seqs) < 2:
        return None, None
    vocab = sorted({a for s in seqs for a in s})
    vecs = [np.array([s.count(a) for a in vocab], dtype=float) / len(s) for s in seqs]
    pairs = list(itertools.combinations(range(len(seqs)), 2))
    js = np.mean([jensenshannon(vecs[i], vecs[j], base=2) for i, j in pairs])
    lv = np.mean([plain_levenshtein(seqs[i], seqs[j]) / max(len(seqs[i]), len(seqs[j])) for i, j in pairs])
    return 1 - float(js), 1 - float(lv)


def step(role: str, **fields: Any) -> dict[str, Any]:
    return {"role": role, **fields}


def line(task: str, trial: int, passed: bool, *tools: str) -> str:
    trace = [step("user", type="message", content="please")]
    for name in tools:
        trace += [step("assistant", type="tool_call", name=name, args={"n": trial}),
                  step("tool", type="tool_result", name=name, content="ok")]
    trace.append(step("assistant", type="message", content="done"))
    return json.dumps({"run": "r", "task": task, "trial": trial, "passed": passed, "trace": trace})


def test_hand_worked_log(tmp_path: Path) -> None:
    """The consistency figures match a hand-worked log."""
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join([
        # wander: three passes with the same calls, one in another order; two failures
        line("wander", 0, True, "search", "book"), line("wander", 1, True, "book", "search"),
        line("wander", 2, True, "search", "book"), line("wander", 3, False, "cancel"),
        line("wander", 4, False, "search"),
        # once: a single pass, nothing to compare
        line("once", 0, True, "search"), line("once", 1, False, "cancel"),
        # steady: always passes, never read
        line("steady", 0, True, "search"), line("steady", 1, True, "book"),
    ]) + "\n")
    code, out = run("report", log, "--causes", "--format", "json")
    assert code == 0
    tasks = tasks_of(orjson.loads(out))
    # Counts are the same in every pass: 1. Sequences [s, b, answer], [b, s, answer], [s, b, answer]:
    # distances 2/3, 0, 2/3, so 1 − 4/9.
    assert tasks["wander"]["action_consistency"] == pytest.approx(1.0)
    assert tasks["wander"]["sequence_consistency"] == pytest.approx(5 / 9)
    assert (tasks["once"]["action_consistency"], tasks["once"]["sequence_consistency"]) == (None, None)
    assert not any(k in tasks["steady"] for k in KEYS)
    # Without --causes no trace is read and the keys are not there.
    code, out = run("report", log, "--format", "json")
    assert code == 0 and not any(k in t for t in orjson.loads(out)["runs"][0]["tasks"] for k in KEYS)


def test_fixture_keys() -> None:
    """The fixture's consistency keys are in the JSON."""
    code, out = run("report", BASELINE, "--causes", "--format", "json")
    assert code == 0
    task = tasks_of(orjson.loads(out))["searchRunbook"]
    for key in KEYS:
        assert task[key] is None or 0.0 <= task[key] <= 1.0


@pytest.mark.slow
@pytest.mark.skipif(not GEN.exists(), reason="the shared generator is not on this machine")
@pytest.mark.parametrize("style", ["steps", "openai"])
def test_generated_suite(tmp_path: Path, style: str) -> None:
    """A generated suite's consistency figures are reported for every flaky task."""
    log, truth = tmp_path / "causes.jsonl", tmp_path / "truth.json"
    subprocess.run([sys.executable, str(GEN), "--tasks", "120", "--trials", "8", "--causes", "--cause-set", "v2",
                    "--style", style, "--seed", "3", "--truth", str(truth), "--out", str(log)],
                   check=True, capture_output=True)
    code, out = run("report", log, "--causes", "--format", "json")
    assert code == 0
    tasks = tasks_of(orjson.loads(out))
    passing: dict[str, list[list[str]]] = {}
    for raw in log.read_text().splitlines():
        r = json.loads(raw)
        if r.get("passed") is True:
            passing.setdefault(r["task"], []).append(actions(r.get("trace") or r.get("messages") or []))
    flaky = [t for t in tasks.values() if "suspected_cause" in t]
    assert len(flaky) >= 20
    for t in flaky:
        want = expected(passing.get(t["task"], []))
        got = (t["action_consistency"], t["sequence_consistency"])
        assert got == pytest.approx(want) if want[0] is not None else got == want, t["task"]
    assert any(t["action_consistency"] is not None for t in flaky)
    assert not any(k in t for t in tasks.values() if "suspected_cause" not in t for k in KEYS)


def test_markdown_column(tmp_path: Path) -> None:
    """Markdown has the consistency column."""
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join([line("wander", 0, True, "search", "book"), line("wander", 1, True, "book", "search"),
                              line("wander", 2, True, "search", "book"), line("wander", 3, False, "cancel")]) + "\n")
    code, out = run("report", log, "--causes", "--format", "markdown")
    assert code == 0
    rows = [[c.strip() for c in x.strip("|").split("|")] for x in out.splitlines() if x.startswith("| ")]
    header, wander = rows[0], next(r for r in rows if r[0] == "wander")
    assert header[header.index("cause?") + 1] == "consist."
    assert wander[header.index("consist.")] == f"{(1 + 5 / 9) / 2:.2f}"  # the mean of the two: 0.78
    code, out = run("report", log, "--format", "markdown")
    assert code == 0 and "consist." not in out
