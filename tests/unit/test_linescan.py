"""The C scanner of the batch parser (flaketui/_linescan.c, flaketui.loading.scanned) keeps
exactly what the per-line parser (msgspec, then orjson) keeps: the same trials, values,
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

from flaketui.loading import batch, jsonl, scanned
from flaketui.model import FieldMap
from tests.unit.test_batch import assert_same, per_line, shaped, write
from tests.unit.test_formats import clean_record

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


def same(path: Path, fields: FieldMap | None = None, threads: int = 1) -> batch.Parsed:
    """The scanner's result (``threads`` scanning ahead), checked against the per-line parser's."""
    fields = fields or FieldMap()
    size = path.stat().st_size
    assert batch.scans(fields)
    got = batch.parse_range(str(path), 0, size, fields, "r0", threads=threads)
    assert_same(got, per_line(path, 0, size, fields))
    return got[0]


def small_blocks(monkeypatch: pytest.MonkeyPatch, block: int, rows: int) -> None:
    """Blocks of ``block`` bytes, ``rows`` lines an output set: many of both in a small file."""
    monkeypatch.setattr(batch, "BLOCK", block)
    monkeypatch.setattr(jsonl, "BLOCK", block)
    monkeypatch.setattr(scanned, "ROWS", rows)


def test_scans_the_field_maps_it_takes() -> None:
    """The scanner reads flaketui's own field map; dotted names are read line by line."""
    assert batch.scans(FieldMap())
    assert not batch.scans(FieldMap(task=("meta.task",)))


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
    """issue 15's shape, small: three threads in small blocks give what one thread gives,
    and the file's progress adds up to its size."""
    path = write(tmp_path / "shape.jsonl", shaped(random.Random(2), 2000, 2, 2, 2))
    small_blocks(monkeypatch, 50_000, 300)
    got = same(path, threads=3)
    assert len(got) == 8000 and len(got.tasks) == 2000
    ticks: list[int] = []
    batch.parse_range(str(path), 0, path.stat().st_size, FieldMap(), "r0", progress=ticks.append, threads=3)
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


def test_kinds_are_the_scanners() -> None:
    """The kinds scanned.py reads are the ones the C module writes."""
    from flaketui import _linescan as c

    assert (scanned.ABSENT, scanned.NULL, scanned.FALSE, scanned.TRUE, scanned.INT, scanned.FLOAT,
            scanned.STRING, scanned.ARRAY, scanned.OBJECT, scanned.OTHER) == (
        c.ABSENT, c.NULL, c.FALSE, c.TRUE, c.INT, c.FLOAT, c.STRING, c.ARRAY, c.OBJECT, c.OTHER)


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
