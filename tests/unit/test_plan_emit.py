"""``plan --emit inspect|harbor|tau2``: the commands pinned per harness, tasks grouped by count,
hostile ids kept one argument each; ``plan --out -`` writes to stdout."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.output.emit import batches, commands
from tests.conftest import FIXTURES

LINES = [("r1", "a", 3), ("r1", "b", 2), ("r1", "c", 3), ("r1", "d", 0), ("r2", "a", 3)]


def test_grouped_by_run_and_count() -> None:
    """Planned trials are grouped by run and count."""
    got = [(b.run, b.trials, b.tasks) for b in batches(LINES)]
    assert got == [("r1", 3, ("a", "c")), ("r1", 2, ("b",)), ("r2", 3, ("a",))]


def test_inspect_pinned() -> None:
    """The Inspect commands are pinned."""
    assert commands("inspect", batches(LINES)) == (
        "# Set TASK (the Inspect task: file.py@name or a registry name) and MODEL first.\n"
        "# run r1: 2 task(s), 3 more trial(s) each\n"
        'inspect eval "$TASK" --model "$MODEL" --sample-id a,c --epochs 3\n'
        "# run r1: 1 task(s), 2 more trial(s) each\n"
        'inspect eval "$TASK" --model "$MODEL" --sample-id b --epochs 2\n'
        "# run r2: 1 task(s), 3 more trial(s) each\n"
        'inspect eval "$TASK" --model "$MODEL" --sample-id a --epochs 3\n')


def test_harbor_pinned() -> None:
    """The Harbor commands are pinned."""
    out = commands("harbor", batches(LINES[:2])).splitlines()
    assert out[2] == ('harbor run --dataset "$DATASET" --agent "$AGENT" --model "$MODEL" '
                      "--include-task-name a --n-attempts 3")
    assert out[4] == ('harbor run --dataset "$DATASET" --agent "$AGENT" --model "$MODEL" '
                      "--include-task-name b --n-attempts 2")


def test_tau2_pinned() -> None:
    """The τ²-bench commands are pinned."""
    out = commands("tau2", batches(LINES)).splitlines()
    assert out[2] == 'tau2 run --domain "$DOMAIN" --agent-llm "$AGENT_LLM" --task-ids a c --num-trials 3'


HOSTILE = ["x; rm -rf ~", "$(touch pwned)", "it's", "a b", "*", "[ab]", "`id`", "--opt"]
LEFT_OUT = {"inspect": [], "harbor": [], "tau2": ["--opt"]}


@pytest.mark.parametrize("harness", ["inspect", "harbor", "tau2"])
def test_hostile_ids_stay_one_argument(harness: str) -> None:
    """Hostile ids stay one shell argument."""
    text = commands(harness, batches([("r\n; evil", t, 2) for t in [*HOSTILE, "line\nbreak"]]))
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    (cmd,) = lines  # the run's name and the id with a line break only in comments
    assert "left out (it holds a control character or line break): line?break" in text
    argv = shlex.split(cmd)
    if harness == "tau2":
        ids = argv[argv.index("--task-ids") + 1:argv.index("--num-trials")]
        assert ids == [t for t in HOSTILE if t not in LEFT_OUT[harness]]
    elif harness == "harbor":
        names = [argv[i + 1] for i, a in enumerate(argv) if a == "--include-task-name"]
        import glob

        assert names == [glob.escape(t) for t in HOSTILE]
    else:  # Inspect matches each id as an fnmatch pattern: escaped as Harbor's are
        import glob

        assert argv[argv.index("--sample-id") + 1].split(",") == [glob.escape(t) for t in HOSTILE]


def test_inspect_leaves_out_an_id_with_a_comma() -> None:
    """Inspect leaves out an id with a comma and says so."""
    text = commands("inspect", batches([("r", "a,b", 1), ("r", "c", 1)]))
    assert "--sample-id c --epochs 1" in text and "left out" in text


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_emit_matches_the_jsonl_plan() -> None:
    """plan --emit matches the JSON Lines plan."""
    code, out, err = run("plan", str(FIXTURES), "--budget", "60", "--emit", "tau2")
    assert code == 0, err
    code, jl, err = run("plan", str(FIXTURES), "--budget", "60", "--format", "jsonl")
    assert code == 0, err
    planned = {(d["task"], d["extra_trials"]) for d in map(json.loads, jl.splitlines()) if d["extra_trials"]}
    emitted = set()
    for line in out.splitlines():
        if line.startswith("tau2 run"):
            argv = shlex.split(line)
            n = int(argv[argv.index("--num-trials") + 1])
            emitted |= {(t, n) for t in argv[argv.index("--task-ids") + 1:argv.index("--num-trials")]}
    assert emitted == planned and planned


def test_out_dash_is_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--out - writes to stdout."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run("plan", str(FIXTURES), "--budget", "10", "--format", "jsonl", "--out", "-")
    assert code == 0, err
    assert out and all(json.loads(line)["task"] for line in out.splitlines())
    assert not (tmp_path / "-").exists()
