"""A lone surrogate after a number past the double range. orjson stops at
``1e999``; the second parse (Python's ``json``) accepted ``"\\ud800"``, whose name then broke
``Names.add``, the JSON writer and Parquet export. It is refused at parse time, as orjson
refuses it, by every path alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs
from flaketui.loading.jsonl import LineParser, read_range
from flaketui.loading.records import RecordSink
from flaketui.loading.scan import parse_range
from flaketui.model import FieldMap

LINES = [rb'{"x": 1e999, "task": "\ud800", "passed": true}',
         rb'{"task": "a", "x": [1e999, "\udc00"], "passed": true}',
         rb'{"x": -1e999, "run": "\udfff", "task": "b", "passed": true}',
         rb'{"x": 1e999, "metrics": {"\ud800": 1}, "task": "c", "passed": true}',
         rb'{"x": 1e999, "task": "\ud83d\ude00", "passed": true}',  # a pair: one character
         rb'{"task": "ok", "passed": true}']


def _file(tmp_path: Path, suffix: str = ".jsonl") -> Path:
    p = tmp_path / f"run{suffix}"
    p.write_bytes(b"\n".join(LINES) + b"\n")
    return p


def test_every_path_refuses_them_alike(tmp_path: Path) -> None:
    """Every parse path refuses lone surrogates alike."""
    p = _file(tmp_path)
    batch, _ = parse_range(str(p), 0, p.stat().st_size, FieldMap(), "run")
    sink = RecordSink(FieldMap(), "run")
    parser = LineParser(str(p), sink)
    read_range(str(p), 0, p.stat().st_size, parser)
    assert batch.tasks == list(sink.tasks) == ["\U0001f600", "ok"]
    assert [str(q) for q in batch.problems] == [str(q) for q in parser.problems]
    assert [(q.line, q.reason) for q in batch.problems] == [(n, "not valid UTF-8") for n in (1, 2, 3, 4)]


@pytest.mark.parametrize("fmt", ["json", "csv", "table", "markdown"])
def test_outputs_write_the_rest(tmp_path: Path, fmt: str) -> None:
    """Each output writes the other trials when some hold lone surrogates."""
    p = _file(tmp_path)
    result = CliRunner().invoke(main, ["report", str(p), "--format", fmt, "--no-cache"])
    assert result.exit_code == 0 and result.exception is None, result.exception
    assert "not valid UTF-8" in result.stderr


def test_load_logs_names_them(tmp_path: Path) -> None:
    """load_logs names the lines with lone surrogates."""
    log = load_logs([_file(tmp_path)], use_cache=False)
    assert log.tasks == ["\U0001f600", "ok"] and len(log.problems) == 4
