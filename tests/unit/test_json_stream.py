"""The streamed ``report --format json`` (flaketui.output.json_stream) writes exactly the bytes
of the whole document built by report_json and written by orjson."""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import orjson
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.model import RunOutcomes
from flaketui.output import json_stream
from flaketui.output.report import report_json
from flaketui.stats import summarise, task_stats
from flaketui.stats.estimators import Interval
from flaketui.stats.suite import TaskStats

HOSTILE = ["plain", 'quote"d', "new\nline", '",\n  "', "tab\there", "\x1b[31mred\x1b[0m", "é☃𝄞",
           "\u202eevil", "[bold]markup[/]", "back\\slash", "\x00nul", "end"]


def outcomes(run: str, n: list[int], c: list[int], errored: list[int] | None = None,
             names: list[str] | None = None, groups: list[str | None] | None = None) -> RunOutcomes:
    count = len(n)
    tasks = names or [f"task-{i}" for i in range(count)]
    return RunOutcomes(run, tasks, np.array(n, dtype=np.int64), np.array(c, dtype=np.int64),
                       np.array(errored or [0] * count, dtype=np.int64), groups or [None] * count,
                       np.arange(sum(n)), np.concatenate([[0], np.cumsum(n)]))


def whole(k: int, runs: list[tuple[TaskStats, object]]) -> bytes:
    """What report --format json wrote before: the whole document, then a newline."""
    return orjson.dumps(report_json(k, runs), option=orjson.OPT_INDENT_2) + b"\n"


def streamed(k: int, runs: list[tuple[TaskStats, object]], chunk: int | None = None,
             monkeypatch: pytest.MonkeyPatch | None = None) -> bytes:
    if chunk is not None and monkeypatch is not None:
        monkeypatch.setattr(json_stream, "CHUNK", chunk)
    buf = io.BytesIO()
    json_stream.write_report_json(buf.write, k, runs)
    return buf.getvalue()


def runs_of(*outs: RunOutcomes, k: int) -> list[tuple[TaskStats, object]]:
    stats = [task_stats(o, k) for o in outs]
    return [(st, summarise(st)) for st in stats]


def random_outcomes(seed: int, tasks: int, run: str = "r") -> RunOutcomes:
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 7, tasks)
    c = rng.integers(0, n + 1)
    err = rng.integers(0, 3, tasks)
    groups = [None if g == 0 else f"g{g}" for g in rng.integers(0, 4, tasks)]
    return outcomes(run, n.tolist(), c.tolist(), err.tolist(), groups=groups)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("k", [1, 3])
def test_equal_bytes_on_random_suites(seed: int, k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random counts (n = 0 tasks, errored trials, groups), two runs, chunks of 7 tasks."""
    runs = runs_of(random_outcomes(seed, 200, "a"), random_outcomes(seed + 10, 150, "b"), k=k)
    assert streamed(k, runs, chunk=7, monkeypatch=monkeypatch) == whole(k, runs)


def test_hostile_names_are_escaped_as_orjson_escapes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names with quotes, newlines, the array's own separator, escapes and non-ASCII."""
    names = HOSTILE
    runs = runs_of(outcomes("run\"x", [2] * len(names), [1] * len(names), names=names,
                            groups=[f'g"{i % 2}\n' for i in range(len(names))]), k=2)
    for chunk in (1, 2, 5, 100):
        assert streamed(2, runs, chunk=chunk, monkeypatch=monkeypatch) == whole(2, runs)
    doc = json.loads(streamed(2, runs))
    assert [t["task"] for t in doc["runs"][0]["tasks"]] == names


def test_one_task_and_no_task() -> None:
    """A run of one task; a run with no tasks writes an empty array."""
    one = runs_of(outcomes("one", [3], [2]), k=1)
    assert streamed(1, one) == whole(1, one)
    empty = runs_of(outcomes("none", [], []), k=1)
    assert streamed(1, empty) == whole(1, empty)
    assert json.loads(streamed(1, empty))["runs"][0]["tasks"] == []
    assert streamed(1, []) == whole(1, [])


def test_negative_zero_and_nan_are_told_apart() -> None:
    """A -0.0 is written as 0.0 (no signed zero reaches a reader) and every NaN as null, streamed
    as in the whole document."""
    st = task_stats(outcomes("r", [2, 2, 2, 2], [0, 0, 0, 0]), 1)
    p = st.p_hat.copy()
    p[1] = -0.0
    low = st.p_hat_ci.low.copy()
    low[2] = np.nan
    st = dataclasses.replace(st, p_hat=p, p_hat_ci=Interval(low, st.p_hat_ci.high))
    runs = [(st, summarise(st))]
    assert streamed(1, runs) == whole(1, runs)
    tasks = json.loads(streamed(1, runs))["runs"][0]["tasks"]
    assert b'-0.0' not in streamed(1, runs) and tasks[1]["p_hat"] == 0.0
    assert tasks[2]["p_hat_ci"] is None


def test_hash_collisions_only_split_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a hash that maps every task to one value, each differing task is its own shape and
    the bytes are still equal."""
    monkeypatch.setattr(json_stream, "_MIX", np.uint64(0))
    runs = runs_of(random_outcomes(5, 120), k=2)
    assert streamed(2, runs) == whole(2, runs)
    head, tails, shape = json_stream.task_shapes(runs[0][0])
    assert len(tails) == len(np.unique(shape)) > 1


def test_few_shapes_for_many_tasks() -> None:
    """Tasks with the same counts share one shape: 10,000 tasks of up to 5 trials have at most
    21 (n, c) pairs."""
    rng = np.random.default_rng(0)
    n = rng.integers(1, 6, 10_000)
    st = task_stats(outcomes("r", n.tolist(), rng.integers(0, n + 1).tolist()), 1)
    _, tails, shape = json_stream.task_shapes(st)
    assert len(tails) <= 21
    assert shape.shape == (10_000,)


def test_report_command_writes_the_streamed_document(tmp_path) -> None:
    """`flaketui report --format json` on a log: the streamed document, valid JSON with every task."""
    log = tmp_path / "log.jsonl"
    rows = [{"run": "r", "task": name, "trial": t, "passed": t % 2 == 0}
            for name in HOSTILE for t in range(3)]
    log.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    got = CliRunner().invoke(main, ["report", str(log), "--format", "json", "--no-cache"])
    assert got.exit_code == 0, got.output
    doc = json.loads(got.stdout)
    assert sorted(t["task"] for t in doc["runs"][0]["tasks"]) == sorted(HOSTILE)
    assert all(t["n"] == 3 and t["passes"] == 2 for t in doc["runs"][0]["tasks"])


@pytest.mark.parametrize("peel", [0, 1, 3])
def test_shapes_beyond_the_peeled_ones_are_grouped_by_sort(peel: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the first PEEL shapes (found one by one), the rest are grouped by np.unique: same bytes,
    and the tasks of a shape have equal objects (equal group text in two objects may make two)."""
    monkeypatch.setattr(json_stream, "PEEL", peel)
    runs = runs_of(random_outcomes(7, 300), k=2)
    assert streamed(2, runs) == whole(2, runs)
    st = runs[0][0]
    _, tails, shape = json_stream.task_shapes(st)
    objects = [{k: v for k, v in t.items() if k != "task"} for t in json.loads(whole(2, runs))["runs"][0]["tasks"]]
    assert len(tails) == len(set(shape.tolist()))
    by_shape: dict[int, set[bytes]] = {}
    for s, o in zip(shape.tolist(), objects, strict=True):
        by_shape.setdefault(s, set()).add(orjson.dumps(o))
    assert all(len(texts) == 1 for texts in by_shape.values())
    assert len(by_shape) < len(st)



@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_escaped_names_among_plain_ones_across_chunks(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Names orjson escapes, every fifth among plain ones, with a non-ASCII group: same bytes
    whatever the chunk size."""
    names = [f"t{i}" if i % 5 else HOSTILE[i % len(HOSTILE)] + str(i) for i in range(40)]
    rng = np.random.default_rng(11)
    n = rng.integers(1, 4, len(names))
    runs = runs_of(outcomes("r", n.tolist(), rng.integers(0, n + 1).tolist(), names=names,
                            groups=[None if i % 3 else "grüppe" for i in range(len(names))]), k=1)
    assert streamed(1, runs, chunk=chunk, monkeypatch=monkeypatch) == whole(1, runs)
