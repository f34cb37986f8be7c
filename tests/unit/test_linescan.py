"""The C scanner (flaketui/_linescan.c, flaketui.loading.scanned, flaketui.loading.scan) keeps
exactly what the per-line parser (loose decode, then orjson; RecordSink.add) keeps: the same trials, values,
names in the same order and the same ``file:line`` problems, on lines mutated at random
into every kind of near-JSON, on numbers of every spelling, with blocks and output sets
far smaller than the file and with threads scanning ahead."""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

import numpy as np
import orjson
import pytest

from flaketui.loading import jsonl, scan, scanned
from flaketui.loading.parsed import Parsed
from flaketui.model import FieldMap
from tests.helpers.parsed import assert_same, per_line
from tests.helpers.records import clean_record, shaped, write

pytestmark = pytest.mark.skipif(not scanned.available(), reason="the C scanner is not built")

ALPHABET = [b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b"0", b"9", b"-", b"+", b".", b"e", b"E",
            b" ", b"\t", b"\r", b"\x00", b"\x1f", b"\x7f", b"\xc3\xa9", b"\xff", b"\\u00e9", b"\\ud800",
            b"\\udc00", b'\\"', b"null", b"true", b"false", b"1e999", b"123456789012345678901",
            b'"task"', b'"run"', b'"metrics"', b'"trace"', b'"passed"', b'"score"', b"\xef\xbb\xbf"]
"""What a mutation puts into a line: JSON's structure, numbers, escapes, bad bytes, keys."""


def mutate(rng: random.Random, line: bytes) -> bytes:
    """``line`` with one to three bytes replaced, inserted or deleted, or cut short."""
    data = bytearray(line)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        what = rng.random()
        if what < 0.4:
            data[at:at + 1] = rng.choice(ALPHABET)
        elif what < 0.8:
            data[at:at] = rng.choice(ALPHABET)
        elif what < 0.95:
            del data[at:at + rng.randint(1, 4)]
        else:
            del data[at:]
    return bytes(data).replace(b"\n", b" ")


def same(path: Path, fields: FieldMap | None = None, threads: int = 1) -> Parsed:
    """The scanner's result (``threads`` scanning ahead), checked against the per-line parser's."""
    fields = fields or FieldMap()
    size = path.stat().st_size
    assert scan.scans(fields)
    got = scan.parse_range(str(path), 0, size, fields, "r0", threads=threads)
    assert_same(got, per_line(path, 0, size, fields))
    return got[0]


def small_blocks(monkeypatch: pytest.MonkeyPatch, block: int, rows: int) -> None:
    """Blocks of ``block`` bytes, ``rows`` lines an output set: many of both in a small file."""
    monkeypatch.setattr(scan, "BLOCK", block)
    monkeypatch.setattr(jsonl, "BLOCK", block)
    monkeypatch.setattr(scanned, "ROWS", rows)


def test_scans_the_field_maps_it_takes() -> None:
    """The scanner reads flaketui's own field map; dotted names are read line by line."""
    assert scan.scans(FieldMap())
    assert not scan.scans(FieldMap(task=("meta.task",)))


@pytest.mark.parametrize("seed", range(6))
def test_mutated_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Valid lines of every shape, a third of them mutated at random, in small blocks and
    output sets, read with one thread and with three."""
    rng = random.Random(seed)
    lines = []
    for i in range(1500):
        line = orjson.dumps(clean_record(rng, i)) if i % 4 else json.dumps(
            clean_record(rng, i), ensure_ascii=False).encode()
        lines.append(mutate(rng, line) if rng.random() < 0.35 else line)
    path = write(tmp_path / "mutated.jsonl", lines, newline_at_end=seed % 2 == 0)
    small_blocks(monkeypatch, 4096 + seed * 999, 5 + seed)
    got = same(path)
    assert 400 < len(got) < 1500 and got.problems
    same(path, threads=3)


def test_numbers_of_every_spelling(tmp_path: Path) -> None:
    """Scores and metrics spelled as JSON can spell them: each read to the same double as
    msgspec reads it (the fast path's products and quotients, strtod for the rest)."""
    rng = random.Random(7)
    spellings = []
    for _ in range(3000):
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if not math.isfinite(x):
            continue
        y = rng.choice([rng.random(), rng.uniform(-1e6, 1e6), rng.randrange(-10**9, 10**9) / 10**rng.randrange(12)])
        spellings += [repr(x), repr(y), f"{y:.17g}", f"{y:.3e}", f"{y:E}", f"{y:.25f}"]
    spellings += ["0", "-0", "-0.0", "0.0e0", "1e22", "1e23", "9007199254740993", "9007199254740993.0",
                  "123456789012345678", "1234567890123456789", "0.1e1", "1E+2", "2.2250738585072014e-308",
                  "4.9e-324", "1.7976931348623157e308", "1e-400", "0.30000000000000004", "1.0000"]
    lines = []
    for i, text in enumerate(spellings):
        lines.append(f'{{"task": "t{i % 97}", "score": {text}, "metrics": {{"m": {text}, "n": 1}}}}'.encode())
    got = same(write(tmp_path / "numbers.jsonl", lines))
    assert len(got) > 0.9 * len(lines)
    assert np.isin(np.array([1e23, 9007199254740992.0, 0.30000000000000004]), got.score).all()


def test_more_metric_names_than_columns(tmp_path: Path) -> None:
    """Lines that bring more metric names than the scanner has columns go line by line,
    their metrics kept, the names in the order first seen."""
    lines = [orjson.dumps({"task": f"t{i}", "passed": True,
                           "metrics": {f"m{(i + j) % 40}": j for j in range(3)}}) for i in range(200)]
    got = same(write(tmp_path / "metrics.jsonl", lines))
    assert len(got.metrics) == 40 > scanned.METRIC_COLUMNS


def test_names_deferred_among_scanned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name first met on a line the scanner defers (an escaped task, a key twice, a line
    that is not UTF-8, a trial below 0) and later on scanned lines: the names keep the order
    of the lines, and a name of a line that gives no trial is no name."""
    lines = [
        b'{"task": "b\\u00e9", "passed": true}',  # escaped: per line
        b'{"task": "a", "passed": true, "passed": false}',  # a key twice: per line
        b'{"task": "gone", "passed": true, "trial": -1}',  # no trial: its task is no task
        b'{"task": "x\xff", "passed": true}',  # not UTF-8: a problem
        b'{"task": "c", "group": "g\\n", "passed": true}',
        b'{"task": "b\xc3\xa9", "passed": false}', b'{"task": "a", "passed": true}',
        b'{"task": "c", "group": "h", "passed": true}', b'{"task": "d", "passed": true, "run": "late"}',
    ]
    small_blocks(monkeypatch, 64, 2)
    got = same(write(tmp_path / "order.jsonl", lines * 3))
    assert got.tasks == ["bé", "a", "c", "d"] and "gone" not in got.tasks
    assert got.groups == ["g\n", "h"] and got.runs == ["r0", "late"]


def test_hostile_structure(tmp_path: Path) -> None:
    """Nesting past the scanner's depth and msgspec's, long strings of escapes, a line of a
    megabyte, control characters, lone surrogates: each line kept or named as per line."""
    lines = [
        b'{"task": "deep64", "passed": true, "x": ' + b"[" * 63 + b"]" * 63 + b"}",
        b'{"task": "deep65", "passed": true, "x": ' + b"[" * 64 + b"]" * 64 + b"}",
        b'{"task": "deep", "passed": true, "x": ' + b"{\"a\":" * 3000 + b"1" + b"}" * 3000 + b"}",
        b'{"task": "esc", "passed": true, "x": "' + b"\\\\\\\"\\/\\b\\f\\n\\r\\t\\u0041" * 500 + b'"}',
        b'{"task": "mega", "passed": false, "trace": ["' + b"y" * (1 << 20) + b'"]}',
        b'{"task": "ctl", "passed": true, "x": "a\x01b"}',
        b'{"task": "lone", "passed": true, "x": "\\udbff"}',
        b'{"task": "pair", "passed": true, "x": "\\ud83d\\ude00"}',
        b'{"task": "hex", "passed": true, "x": "\\u12G4"}',
        b'{"task": "nul", "passed": true}\x00',
        b'{"task": "trail", "passed": true} x',
        b'  {"task": "ws", "passed": true}  ',
    ]
    got = same(write(tmp_path / "hostile.jsonl", lines))
    assert {"deep64", "mega", "esc", "ws"} <= set(got.tasks)
    assert "ctl" not in got.tasks and "trail" not in got.tasks


def test_threads_agree_on_a_large_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A benchmark-shaped log (benchmarks/bench_shapes.py), small: three threads in small
    blocks give what one thread gives, and the file's progress adds up to its size."""
    path = write(tmp_path / "shape.jsonl", shaped(random.Random(2), 2000, 2, 2, 2))
    small_blocks(monkeypatch, 50_000, 300)
    got = same(path, threads=3)
    assert len(got) == 8000 and len(got.tasks) == 2000
    ticks: list[int] = []
    scan.parse_range(str(path), 0, path.stat().st_size, FieldMap(), "r0", progress=ticks.append, threads=3)
    assert sum(ticks) == path.stat().st_size


def test_names_table() -> None:
    """Names numbers strings in the order first seen, each once."""
    from flaketui import _linescan

    names = _linescan.Names()
    ids = [names.add(s) for s in ["b", "a", "b", "é", "", "a", "x" * 1000]]
    assert ids == [0, 1, 0, 2, 3, 1, 4] and len(names) == 5
    assert names.names == ["b", "a", "é", "", "x" * 1000]
    big = [f"task-{i}" for i in range(50_000)]
    assert [names.add(s) for s in big] == list(range(5, 50_005))
    assert [names.add(s) for s in reversed(big)] == list(range(50_004, 4, -1))
    with pytest.raises(TypeError):
        names.add(b"bytes")  # type: ignore[arg-type]


def test_populated_memory_is_zeroed_and_writable() -> None:
    """loading.pages: arrays and buffers mapped in one call are zeros, writable, of the shape
    asked, small or large."""
    from flaketui.loading.pages import SMALL, populated, populated_buffer

    for shape, dtype in (((7,), np.int64), ((SMALL // 8 + 3,), np.float64), ((SMALL // 13 + 1, 13), np.uint8)):
        a = populated(shape, dtype)
        assert a.shape == shape and a.dtype == dtype and not a.any()
        a[...] = 1
        assert a.all()
    for size in (10, SMALL * 3):
        buf = populated_buffer(size)
        assert len(buf) == size and bytes(buf[:5]) == bytes(5)
        buf[:3] = b"abc"
        assert bytes(buf[:3]) == b"abc"


def test_the_seam_is_typed() -> None:
    """One status enum, the C's: the Python side reads it from the module; a Scanner owns its
    spec and gives a Part whose fields are named, a row a line."""
    from enum import IntEnum

    from flaketui import _linescan as c

    assert issubclass(c.Status, IntEnum) and scanned.Status is c.Status
    assert [(s.name, int(s)) for s in c.Status] == [("OK", 0), ("DEFER", 1), ("GIL", 2), ("BAD", 3)]
    scanner = scanned.Scanner(["task", "score", "metrics"], {"task": (0,), "score": (1,), "metrics": (2,)},
                              0.5, "r0", rows=8)
    buf = bytearray(b'{"task": "a", "score": 1, "metrics": {"m": 2}}\n{"task": 7, "score": 0}\n'
                    b'{"task": "b", "score": "x"}\n[1,\n')
    (part,) = scanner.scan(buf, len(buf), len(buf))
    out = part.out
    assert part.n == 4 and out.status[:4].tolist() == [c.Status.GIL, c.Status.OK, c.Status.DEFER, c.Status.BAD]
    cols = scanner.number(buf, part)  # the new metric name is learnt with the GIL
    assert cols.keep.tolist() == [True, True, False, False]
    assert scanner.tables["task"].names == ["a", "7"] and cols.ids[:, 1].tolist() == [0, 1]
    assert cols.score.tolist() == [1.0, 0.0] and cols.metrics["m"].tolist()[0] == 2.0
    assert (out.starts[:2].tolist(), out.ends[:2].tolist()) == ([0, 47], [46, 70])


def test_equal_names_share_an_id_across_scans() -> None:
    """The scanner's own hash (not CPython's, which it may not call without the GIL) gives
    equal bytes one id, whether the scan found the name, the line before had it, or Python
    added it."""
    scanner = scanned.Scanner(["task", "passed"], {"task": (0,), "passed": (1,)}, 0.5, "r0", rows=64)
    table = scanner.tables["task"]
    assert table.add("é-b") == 0
    lines = [b'{"task": "%s", "passed": true}' % name.encode() for name in ("a", "a", "\u00e9-b", "é-b", "c", "a")]
    buf = bytearray(b"\n".join(lines).replace(b"\\u00e9", "é".encode()) + b"\n")
    for _ in range(2):
        (part,) = scanner.scan(buf, len(buf), len(buf))
        assert scanner.number(buf, part).ids[:, 1].tolist() == [1, 1, 0, 0, 2, 1]
    assert table.names == ["é-b", "a", "c"]


def test_past_the_named_problems_counts_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More bad lines than are named: the scanner counts lines that are not JSON or not UTF-8
    at once, and its summary (each reason's count, in the same order) is the per-line
    parser's."""
    rng = random.Random(21)
    lines = []
    for i in range(9000):
        line = orjson.dumps(clean_record(rng, i))
        what = rng.random()
        if what < 0.3:
            line = mutate(rng, line)
        elif what < 0.4:
            line = bytes(rng.getrandbits(8) for _ in range(rng.randrange(3, 30))).replace(b"\n", b" ")
        elif what < 0.45:
            line = b"[1, 2]" if i % 2 else b'"just a string"'
        lines.append(line)
    small_blocks(monkeypatch, 30_000, 700)
    got = same(write(tmp_path / "many-bad.jsonl", lines), threads=2)
    assert len(got.problems) == 1001 and "more lines skipped" in got.problems[-1].reason


def test_a_name_the_trial_does_not_use_is_not_numbered(tmp_path: Path) -> None:
    """Only the key a role is read from names the trial: a ``task_id`` beside ``task``, or a
    line the rule refuses, leaves no task (or run, or group) in the tables."""
    lines = [
        b'{"task": "real", "task_id": "phantom", "passed": true}',
        b'{"task": null, "task_id": "second", "run": "r1", "passed": true}',
        b'{"task": "", "run": "ghost-run", "group": "ghost-group", "passed": true}',
        b'{"task": "real", "run": "r1", "group": "g", "passed": 2}',
    ]
    got = same(write(tmp_path / "phantom.jsonl", lines))
    assert got.tasks == ["real", "second"] and got.runs == ["r0", "r1"] and got.groups == []


def test_metric_names_come_from_the_trials_kept(tmp_path: Path) -> None:
    """A metric name met first on a line the rule refuses is not a column, and the columns of
    a trial are in its own order, as the per-line parser has them."""
    lines = [
        b'{"task": "", "passed": true, "metrics": {"b": 1, "c": 3}}',
        b'{"task": "x", "passed": 7, "metrics": {"d": 1}}',
        b'{"task": "y", "passed": true, "metrics": {"a": 1, "b": 2}}',
        b'{"task": "z", "passed": true, "metrics": {"d": 4, "a": 5}}',
    ]
    got = same(write(tmp_path / "metrics.jsonl", lines))
    assert list(got.metrics) == ["a", "b", "d"]


def test_blank_lines_of_form_feeds_past_the_named_problems(tmp_path: Path) -> None:
    """Lines of only vertical tabs and form feeds (blank to the per-line parser, which strips
    them, though JSON does not call them whitespace) are nothing on both paths, before and
    after the problems named."""
    lines = [b"\x0b", b"{nope"] * 1100 + [b"\x0c \x0b", b'{"task": "a", "passed": true}', b"\x0c"] * 3
    got = same(write(tmp_path / "ff.jsonl", lines))
    assert got.problems[-1].reason.startswith("100 more lines skipped") and len(got) == 3


def test_an_empty_trace_list_padded_with_spaces_is_no_trace(tmp_path: Path) -> None:
    """``[`` and ``]`` around any number of spaces is an empty trace, on the scanner and in the
    per-line parser's loose decode, as the full parse (``bool([])``) says."""
    pad = [b"[" + b" " * n + b"]" for n in (0, 1, 62, 63, 64, 200)]
    lines = [b'{"task": "t%d", "passed": true, "trace": %s}' % (i, p) for i, p in enumerate(pad)]
    lines.append(b'{"task": "full", "passed": true, "trace": [' + b" " * 70 + b"{}]}")
    got = same(write(tmp_path / "pad.jsonl", lines))
    assert got.has_trace.tolist() == [0] * len(pad) + [1]
    sink = jsonl.RecordSink(FieldMap(), "r0")
    parser = jsonl.LineParser("pad.jsonl", sink)
    for i, line in enumerate(lines):  # the full parse, for each line
        assert sink.add(orjson.loads(line), 0, len(line), i + 1) is None
    assert list(sink.has_trace) == got.has_trace.tolist() and not parser.problems


def test_utf8_is_checked_as_python_checks_it(tmp_path: Path) -> None:
    """The scanner's own UTF-8 check defers exactly the lines Python's strict decoder refuses:
    overlong forms, encoded surrogates, code points past U+10FFFF, cut and stray bytes,
    in a name, in a skipped value and in a metric name; valid ones of every length are kept."""
    spellings = [b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xf4\x8f\xbf\xbf", b"\xef\xbf\xbf",
                 b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xf0\x8f\xbf\xbf",
                 b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xc3", b"\xe2\x82", b"\x80", b"\xff", b"\xfe"]
    lines = []
    for i, s in enumerate(spellings):
        lines.append(b'{"task": "t%d-%s", "passed": true}' % (i, s))
        lines.append(b'{"task": "u%d", "passed": true, "note": "%s"}' % (i, s * 9))
        lines.append(b'{"task": "m%d", "passed": true, "metrics": {"m%s": 1}}' % (i, s))
    got = same(write(tmp_path / "utf8.jsonl", lines))
    assert len(got) == 6 * 3 and len(got.problems) == 12 * 3


def test_metric_names_of_one_deferred_trial_keep_its_order(tmp_path: Path) -> None:
    """A trial the scanner defers (a metric that is a bool) brings metric names in its own
    order, even when a trial the scanner takes later in the block has one of them first."""
    lines = [
        b'{"task": "a", "passed": true, "metrics": {"x": true, "b": 1, "a": 2}}',
        b'{"task": "b", "passed": true, "metrics": {"a": 3}}',
        b'{"task": "c", "passed": true, "metrics": {"c": 1, "d": true, "a": 1}}',
        b'{"task": "d", "passed": true, "metrics": {"e": 1, "c": 2}}',
    ]
    got = same(write(tmp_path / "order.jsonl", lines))
    assert list(got.metrics) == ["b", "a", "c", "e"]


def test_lines_marking_an_attempt_go_line_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines marking an attempt or retry (valid, null, refused, mutated): the scanner keeps what the rule keeps."""
    rng = random.Random(11)
    marks = [{"attempt": 2}, {"attempt": 1}, {"attempt": None}, {"attempt": 0}, {"attempt": "2"},
             {"attempt": 2.0}, {"attempt": 2.5}, {"retry": True}, {"retry": False}, {"retry": 3},
             {"retry": None}, {"retry": -1}, {"retry": [1]}, {"attempt": 3, "retry": False},
             {"retry": 1, "metrics": {"attempt": 1, "m": 2}}, {}]
    lines = []
    for i in range(900):
        rec = {"task": f"t{i % 13}", "passed": rng.random() < 0.6, "trial": i, **rng.choice(marks)}
        line = orjson.dumps(rec)
        lines.append(mutate(rng, line) if rng.random() < 0.2 else line)
    small_blocks(monkeypatch, 2048, 7)
    got = same(write(tmp_path / "attempts.jsonl", lines))
    attempt = got.metrics["attempt"]
    assert {1.0, 2.0, 3.0, 4.0} <= set(attempt[~np.isnan(attempt)].tolist())
    assert any("attempt must be a positive integer" in p.reason for p in got.problems)
    same(write(tmp_path / "attempts.jsonl", lines), threads=3)
    numbered = same(write(tmp_path / "attempts.jsonl", lines), FieldMap(trial=("attempt",)))
    assert set(numbered.trial.tolist()) >= {1, 2, 3}  # the field a role reads numbers the trials
