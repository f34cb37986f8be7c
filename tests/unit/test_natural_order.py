"""Task ids sort naturally everywhere: 2 before 10, task-9 before task-10."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from flaketui.cli import main
from flaketui.model import natural_key, natural_ranks
from flaketui.output.columns import name_ranks


def test_natural_ranks_match_natural_key() -> None:
    names = ["task-10", "task-9", "2", "10", "b", "a", "task-9b", "1e3"]
    ranks = natural_ranks(names)
    assert [names[i] for i in ranks.argsort()] == sorted(names, key=natural_key)
    assert [names[i] for i in ranks.argsort()][:4] == ["1e3", "2", "10", "a"]
    assert natural_ranks(["b", "a"]).tolist() == [1, 0]  # no digits: plain text order
    assert name_ranks(["x10", "x9"]).tolist() == [1.0, 0.0]


def test_report_lists_tied_tasks_in_natural_order(tmp_path: Path) -> None:
    log = tmp_path / "ids.jsonl"
    log.write_text("".join(json.dumps({"task": t, "passed": True}) + "\n" for t in ["10", "9", "1", "2"]))
    result = CliRunner().invoke(main, ["report", str(log), "--format", "markdown"])
    rows = [line.split("|")[1].strip() for line in result.stdout.splitlines() if line.startswith("| ")]
    assert rows[1:] == ["1", "2", "9", "10"]


def test_plan_orders_tasks_naturally(tmp_path: Path) -> None:
    log = tmp_path / "ids.jsonl"
    log.write_text("".join(json.dumps({"task": f"t{t}", "passed": True}) + "\n" for t in [10, 9, 1, 2]))
    result = CliRunner().invoke(main, ["plan", str(log), "--budget", "0"], terminal_width=200)
    rows = [line.split()[0] for line in result.stdout.splitlines() if line[:2] in ("t1", "t2", "t9")]
    assert rows == ["t1", "t2", "t9", "t10"]
