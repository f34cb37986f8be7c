"""The C driver (flaketui.loading.scan) gives what the per-line parser gives: the same
trials, name tables, metric columns, line count and ``file:line`` problems, on generated
lines of every shape, on byte ranges, across block edges and on odd lines; and so does the
process pool of the per-line parser that reads a large file where the C is not built."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from flaketui.loading import jsonl, scan, scanned
from flaketui.loading.formats.json_lines import _read_parallel
from flaketui.loading.parsed import Merger, Parsed
from flaketui.model import FieldMap
from tests.helpers.parsed import assert_same, per_line
from tests.helpers.records import VALUES, clean_record, random_record, shaped, write


@pytest.fixture(autouse=True, params=["scanner", "no C"])
def parser_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: with the C scanner (where it is built), and without it (a machine
    without a C compiler: the per-line parser reads the range)."""
    if request.param == "no C":
        monkeypatch.setattr(scanned, "_linescan", None)
    elif not scanned.available():
        pytest.skip("the C scanner is not built")
    return request.param


def both(path: Path, fields: FieldMap | None = None, start: int = 0, end: int | None = None,
         first_line: int = 1) -> tuple[Parsed, int]:
    """The C driver's result, checked against the per-line parser's."""
    fields = fields or FieldMap()
    end = path.stat().st_size if end is None else end
    got = scan.parse_range(str(path), start, end, fields, "r0", first_line)
    assert_same(got, per_line(path, start, end, fields, first_line))
    return got


class TestShapes:
    """The benchmark's log shapes (benchmarks/bench_shapes.py), small: many tasks of one short
    trial, few tasks of many long ones."""

    @pytest.mark.parametrize(("tasks", "trials", "steps", "runs"), [
        (3000, 1, 3, 1), (1500, 2, 2, 2), (500, 5, 5, 1), (60, 20, 20, 1),
    ])
    def test_same_as_per_line(self, tmp_path: Path, tasks: int, trials: int, steps: int, runs: int) -> None:
        """The scanner reads each shape as the per-line parser does."""
        lines = shaped(random.Random(tasks), tasks, trials, steps, runs)
        got, count = both(write(tmp_path / "shape.jsonl", lines))
        assert count == len(lines) == len(got) and not got.problems
        assert len(got.tasks) == tasks and len(got.runs) == runs
        assert sorted(got.metrics) == ["cost_usd", "duration_s", "tokens"]

    def test_block_edges_cut_lines(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Blocks far smaller than the file: lines cut by block edges, some longer than a block."""
        path = write(tmp_path / "edges.jsonl", shaped(random.Random(3), 400, 2, 3))
        monkeypatch.setattr(scan, "BLOCK", 5000)
        monkeypatch.setattr(jsonl, "BLOCK", 5000)
        got, _ = both(path)
        assert len(got) == 800
        monkeypatch.setattr(scan, "BLOCK", 700)  # most lines are longer than a block
        both(path)
        monkeypatch.setattr(jsonl, "BLOCK", 700)  # ... and than the per-line reader's
        both(path)
        ticks: list[int] = []
        scan.parse_range(str(path), 0, path.stat().st_size, FieldMap(), "r0", progress=ticks.append)
        assert sum(ticks) == path.stat().st_size


class TestEveryKindOfLine:
    """Lines the scanner can't take go through the per-line parser alone, in line order."""

    def test_random_records(self, tmp_path: Path) -> None:
        """Any field any value (test_formats' records), among runs of clean lines that the
        scanner takes whole: every block mixes both kinds."""
        rng = random.Random(5)
        lines: list[bytes] = []
        for i in range(5000):
            if i % 7 in (0, 3):
                rec = random_record(rng)
                lines.append(json.dumps(rec, ensure_ascii=i % 2 == 0).encode() if i % 50 else b"{broken")
            else:
                lines.append(orjson.dumps(clean_record(rng, i)))
        got, count = both(write(tmp_path / "mixed.jsonl", lines))
        assert count == 5000 and len(got) > 2500 and len(got.problems) > 500

    def test_one_odd_value_in_a_clean_block(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Blocks of lines that have every field, one value in them of any type: the checks
        on whole columns (no nulls, one type) meet every odd value."""
        rng = random.Random(11)
        lines = []
        for i in range(3000):
            rec: dict[str, Any] = {"run": "r", "task": f"t{i % 90}", "trial": i // 90, "passed": i % 3 > 0,
                                   "score": 0.5, "reward": 1, "group": "g", "error": None,
                                   "metrics": {"tokens": i, "cost": 0.1}, "trace": [{"a": "b" * 60}]}
            if i % 10 == 0:
                rec[rng.choice(list(rec))] = rng.choice(VALUES)
            lines.append(json.dumps(rec).encode())
        path = write(tmp_path / "odd-values.jsonl", lines)
        monkeypatch.setattr(scan, "BLOCK", 2000)  # about 10 lines a block, one odd
        got, _ = both(path)
        assert 2000 < len(got) < 3000 and got.problems

    def test_odd_lines(self, tmp_path: Path) -> None:
        """Odd lines are read as the per-line parser reads them."""
        lines = [
            b"\xef\xbb\xbf" + orjson.dumps({"task": "bom", "passed": True}),  # byte-order mark
            b"", b"   ", b"\t",  # blank lines are counted, never named
            orjson.dumps({"task": "crlf", "passed": False}) + b"\r",
            b'{"task_id": "huge", "reward": 1, "trial": 18446744073709551616}',
            json.dumps({"run": 1 << 70, "task": "r70", "passed": True}).encode(),
            json.dumps({"task": "m2", "passed": False, "metrics": {"t": -(10**400), "u": 1}}).encode(),
            b'{"task": "neg-inf", "reward": -1e999}',
            b'{"task": "inf3", "passed": false, "traj": [-1e999]}',
            b'{"task": "bad-utf8", "passed": false, "messages": ["\xfe"]}',
            b'{"task": "utf8", "passed": false, "error": "\xc3\xa9chec"}',
            b'{"task": "spaces", "passed": false, "traj": [ \t ] }',
            b'{"task": "str-trace", "passed": false, "messages": "none"}',
            b'{"task": "null-then", "passed": false, "traj": null, "messages": [{"a": 1}]}',
            b'{"task": "long", "passed": true, "trace": [' + b'"s",' * 40 + b'"t"]}',
            b'{"task": "obj", "passed": true, "trace": {"' + b"k" * 80 + b'": 1}}',
            b'{"task": "two", "passed": true}{"task": "objects", "passed": true}',
            b'{"task": "open", "passed": true, "x": [1',  # no line lends its brackets to the next
            b'2]}',
            b'[{"task": "in a list", "passed": true}]',
            b'{"task": "", "passed": true}', b'{"task": "r", "run": "", "passed": true}',
            b'{"task": "g", "group": "", "passed": true}', b'{"task": "p", "passed": 2}',
            b'{"task": "t", "passed": true, "trial": -1}', b'{"task": "e", "error": "boom"}',
            b'{"task": "e0", "error": 0}', b'{"task_id": 7, "reward": 1}',
            b'{"task": 3.0, "passed": 1}', b'{"task": "mx", "passed": 0, "metrics": {"a": true, "b": "x"}}',
            b'{"task": "mz", "passed": 0, "metrics": {"z": 1, "a": 2.5}}',
            b'{"task": "deep", "passed": true, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        ]
        path = write(tmp_path / "odd.jsonl", lines, newline_at_end=False)
        got, count = both(path)
        assert count == len(lines) and got.tasks[0] == "bom" and got.offset[0] == 3
        reasons = {p.line: p.reason for p in got.problems}
        assert 2 not in reasons and "not valid UTF-8" in reasons[lines.index(lines[10]) + 1]
        assert "two" not in got.tasks and "open" not in got.tasks

    @pytest.mark.parametrize("bad", [-1, 1 << 63, 1.5, True, "2"])
    def test_bad_trial_among_good_ones(self, tmp_path: Path, bad: Any) -> None:
        """A block whose every line has a trial number, one of them unusable."""
        recs = [{"task": f"t{i}", "trial": i, "passed": True} for i in range(50)]
        recs[20]["trial"] = bad
        got, _ = both(write(tmp_path / "t.jsonl", [json.dumps(r).encode() for r in recs]))
        assert len(got) == 49 and [p.line for p in got.problems] == [21]

    def test_last_line_without_newline_and_blank_tail(self, tmp_path: Path) -> None:
        """A last line without a newline and a blank tail are read alike."""
        lines = [orjson.dumps({"task": f"t{i}", "passed": True}) for i in range(5)]
        both(write(tmp_path / "a.jsonl", lines, newline_at_end=False))
        both(write(tmp_path / "b.jsonl", [*lines, b"  "], newline_at_end=False))

    @pytest.mark.parametrize("fields", [
        FieldMap(task=("name",), passed=("ok",), trace=("steps",)),
        FieldMap(passed=("score",)),  # one name in two roles: read line by line
        FieldMap(task=("meta.task",), score=("result.value",), threshold=0.5),  # dotted: line by line
        FieldMap(score=("score",), threshold=0.5, group=("suite",)),
    ])
    def test_other_field_maps(self, tmp_path: Path, fields: FieldMap) -> None:
        """Other field maps are read alike."""
        rng = random.Random(9)
        recs = [{"name": f"n{i % 7}", "ok": rng.choice([True, False, 1, 0, 2]), "task": f"t{i % 5}",
                 "score": rng.choice([0, 1, 0.5, True]), "suite": rng.choice(["s1", "s2", None]),
                 "meta": {"task": rng.choice([f"m{i % 3}", None, 4])},
                 "result": {"value": rng.random()} if i % 9 else "x",
                 "steps": [1] if i % 2 else "no"} for i in range(1200)]
        both(write(tmp_path / "f.jsonl", [orjson.dumps(r) for r in recs]), fields)


class TestRanges:
    def test_pieces_of_a_file(self, tmp_path: Path) -> None:
        """Byte ranges starting at lines, numbered from a given line, as the process pool cuts them."""
        rng = random.Random(2)
        lines = shaped(rng, 300, 2, 2) + [b"{broken"] + shaped(rng, 100, 1, 1)
        path = write(tmp_path / "p.jsonl", lines)
        data = path.read_bytes()
        starts = [0] + [i + 1 for i, c in enumerate(data) if c == 0x0A]
        cuts = [0, starts[150], starts[333], starts[601], len(data)]
        total = 0
        for a, b in zip(cuts, cuts[1:], strict=False):
            _, count = both(path, start=a, end=b, first_line=total + 1)
            total += count
        assert total == len(lines)
        got, _ = both(path, start=starts[600], end=starts[602], first_line=601)
        assert [p.line for p in got.problems] == [601]
        assert both(path, start=10, end=10)[1] == 0

    def test_process_pool_is_the_per_line_parser(self, tmp_path: Path) -> None:
        """The process pool's ranges give what the per-line parser gives."""
        lines = shaped(random.Random(4), 200, 2, 1)
        lines[7], lines[300] = b'{"task": "", "passed": true}', b"not json"
        path = write(tmp_path / "j.jsonl", lines)
        size = path.stat().st_size
        alone, lines_seen = per_line(path, 0, size, FieldMap())
        one = Merger()  # the pool's pieces are merged (metric columns by name, as the loader has them)
        one.add(alone)
        pool = _read_parallel(str(path), size, FieldMap(), "r0", 2, lambda n: None)
        assert_same((pool, lines_seen), (one.parsed(), lines_seen))
