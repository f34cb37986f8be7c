"""Task ids sort naturally everywhere: 2 before 10, task-9 before task-10."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.model import natural_key, natural_ranks, natural_ranks_by_key
from flaketui.output.columns import name_ranks


def test_natural_ranks_match_natural_key() -> None:
    """natural_ranks order names as natural_key does."""
    names = ["task-10", "task-9", "2", "10", "b", "a", "task-9b", "1e3"]
    ranks = natural_ranks(names)
    assert [names[i] for i in ranks.argsort()] == sorted(names, key=natural_key)
    assert [names[i] for i in ranks.argsort()][:4] == ["1e3", "2", "10", "a"]
    assert natural_ranks(["b", "a"]).tolist() == [1, 0]  # no digits: plain text order
    assert name_ranks(["x10", "x9"]).tolist() == [1.0, 0.0]


def test_report_lists_tied_tasks_in_natural_order(tmp_path: Path) -> None:
    """The report lists tied tasks in natural order."""
    log = tmp_path / "ids.jsonl"
    log.write_text("".join(json.dumps({"task": t, "passed": True}) + "\n" for t in ["10", "9", "1", "2"]))
    result = CliRunner().invoke(main, ["report", str(log), "--format", "markdown"])
    rows = [line.split("|")[1].strip() for line in result.stdout.splitlines() if line.startswith("| ")]
    assert rows[1:] == ["1", "2", "9", "10"]


def test_plan_orders_tasks_naturally(tmp_path: Path) -> None:
    """The plan orders tasks naturally."""
    log = tmp_path / "ids.jsonl"
    log.write_text("".join(json.dumps({"task": f"t{t}", "passed": True}) + "\n" for t in [10, 9, 1, 2]))
    result = CliRunner().invoke(main, ["plan", str(log), "--budget", "0"], terminal_width=200)
    rows = [line.split()[0] for line in result.stdout.splitlines() if line[:2] in ("t1", "t2", "t9")]
    assert rows == ["t1", "t2", "t9", "t10"]


ALPHABET = "ab-. _/Z9z0017x"
"""Letters that make the hard cases: texts that are prefixes of others, characters that sort
before digits, leading zeros (ties), names that are all digits or end in them."""


@pytest.mark.parametrize("seed", range(4))
def test_vectorised_ranks_match_sorting_by_key_on_random_names(seed: int) -> None:
    """natural_ranks (names grouped by shape, numbers read from the bytes) equals sorting by natural_key."""
    rng = random.Random(seed)
    for _ in range(500):
        names = list({"".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 9)))
                      for _ in range(rng.randint(1, 40))})
        assert natural_ranks(names).tolist() == natural_ranks_by_key(names).tolist(), names


@pytest.mark.parametrize("names", [
    ["task-10", "task-9", "2", "10", "b", "a", "task-9b", "1e3"],
    ["a07", "a7", "a007", "a6"],                      # equal numbers: the names' order breaks the tie
    ["x", "x1", "x-1", "x 1", "x1a", "x1-", ""],      # a prefix first; "-" and " " before digits
    ["t9999999999999999999", "t10", "t2"],            # a number too long for int64: sorted by key
    ["tâche-10", "tâche-9"],                          # not ASCII: sorted by key
    ["a\x01", "a1"],                                  # the shape marker in a name: sorted by key
    ["one"],
    [],
])
def test_vectorised_ranks_on_hard_cases(names: list[str]) -> None:
    """The vectorised ranks equal the key's on hard cases."""
    assert natural_ranks(names).tolist() == natural_ranks_by_key(names).tolist()


@pytest.mark.parametrize("labels", [
    ["flaky", "stable-pass", "stable-fail", "flaky", "no-trials"],
    ["b", "", "a", "", "a\x00", "é", "Z", "b"],
    [],
])
def test_label_ranks_order_as_numpy_sorts_strings(labels: list[str]) -> None:
    """label_ranks (a dict of the distinct labels) ranks as numpy's unique of the strings did."""
    import numpy as np

    from flaketui.output.columns import label_ranks

    _, want = np.unique(np.array(labels, dtype=object).astype(str), return_inverse=True)
    assert label_ranks(labels).tolist() == want.astype(np.float64).tolist()


def test_rows_sorted_is_the_order_of_one_key() -> None:
    """model.rows_sorted (neighbour comparisons, column by column) says what sorting an int64
    key of the columns says, strict and not, on small random columns that tie often."""
    from flaketui.model import rows_sorted

    rng = np.random.default_rng(5)
    for _ in range(400):
        n = int(rng.integers(0, 9))
        cols = tuple(np.sort(rng.integers(0, 3, n)) if rng.random() < 0.5 else rng.integers(0, 3, n)
                     for _ in range(int(rng.integers(1, 4))))
        if rng.random() < 0.5:  # sorted rows, often
            order = np.lexsort(cols[::-1])
            cols = tuple(c[order] for c in cols)
        key = np.zeros(n, dtype=np.int64)
        for c in cols:
            key = key * 3 + c
        assert rows_sorted(cols) == bool(np.all(key[1:] >= key[:-1]))
        assert rows_sorted(cols, strict=True) == bool(np.all(key[1:] > key[:-1]))


def test_compare_lists_and_matrix_ties_in_natural_order(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Equal changes list task-2 before task-10 in compare's table, the triage export and the matrix's ties."""
    from flaketui.loading import load_logs
    from flaketui.output.matrix import run_matrix
    from flaketui.output.review import paired_rows
    from flaketui.stats import compare_runs, task_stats
    from tests.helpers.logs import write_runs

    names = ["task-10", "task-2", "task-1", "task-100"]
    log = write_runs(tmp_path / "x.jsonl", {"a": {t: (0, 2) for t in names}, "b": {t: (2, 2) for t in names}})
    trials = load_logs([log])
    a, b = (task_stats(trials.run_outcomes(r), 1) for r in ("a", "b"))
    assert [r.task for r in paired_rows(compare_runs(a, b))] == ["task-1", "task-2", "task-10", "task-100"]
    m = run_matrix([a, b])
    assert [m.tasks[i] for i in m.order()] == ["task-1", "task-2", "task-10", "task-100"]
