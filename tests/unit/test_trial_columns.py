"""One list of a trial's columns: :data:`~flaketui.model.TRIAL_COLUMNS` is what the trial
table, the parser, the index cache and :meth:`~flaketui.model.TrialLog.take` hold, and no
module lists the columns again."""

from __future__ import annotations

import ast
import dataclasses
from array import array
from pathlib import Path

import numpy as np
import orjson
import pytest

import flaketui
from flaketui.loading import cache, load_logs, loader
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import RecordSink
from flaketui.model import PARSED_COLUMNS, TRIAL_COLUMNS, FieldMap, TrialLog

PACKAGE = Path(flaketui.__file__).parent

LISTS_ALLOWED = {
    "model.py": "the table itself",
    "loading/formats/parquet_checks.py": "the Parquet trial table's own column names (a file format)",
    "loading/formats/parquet_trials.py": "the Parquet trial table's own column names (a file format)",
    "output/trials.py": "the exported trial table's schema (a file format: passed, errored, source_kind)",
    "loading/scan.py": "where each column of a scanned block comes from (the scanner's outputs)",
}
"""Modules that may name several trial columns in one literal, and why: they name a file
format's columns or where a column's values come from, not the list of columns."""


def _array_fields(cls: type) -> list[str]:
    """The fields of a trial-table dataclass that hold one value a trial."""
    return [f.name for f in dataclasses.fields(cls) if f.type in ("np.ndarray", np.ndarray)]


def test_trial_log_and_parsed_declare_the_table() -> None:
    """TrialLog has a field for each column of the table, Parsed for each parsed one, and no other."""
    assert sorted(_array_fields(TrialLog)) == sorted(TRIAL_COLUMNS)
    assert sorted(_array_fields(Parsed)) == sorted(PARSED_COLUMNS)


def test_record_sink_stores_each_parsed_column_in_its_typecode() -> None:
    """The per-line parser's sink keeps each parsed column as the table's typecode says."""
    sink = RecordSink(FieldMap(), "r0")
    for name, col in PARSED_COLUMNS.items():
        got = getattr(sink, name)
        assert isinstance(got, array) and got.typecode == col.code, name


def _log(tmp_path: Path) -> Path:
    """Three tasks of four trials, one metric, a trace on every other trial."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(
        orjson.dumps({"run": "r", "task": f"t{i % 3}", "trial": i // 3, "passed": i % 2 == 0, "score": i / 12,
                      "group": "g" if i % 3 else None, "metrics": {"tokens": i},
                      **({"trace": [{"role": "assistant", "content": "x"}]} if i % 2 else {})}) + b"\n"
        for i in range(12)))
    return path


def test_every_column_loads_in_its_dtype_and_survives_the_cache(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each column of the table comes out of a cold load in the table's dtype, and a warm
    (cached) load gives every one back equal and in the same dtype."""
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    path = _log(tmp_path)
    cold = load_logs([path], use_cache=True)

    def unparsed(*args: object, **kwargs: object) -> None:
        raise AssertionError("the warm load parsed the file again")

    monkeypatch.setattr(loader, "read_file", unparsed)
    warm = load_logs([path], use_cache=True)
    for name, col in TRIAL_COLUMNS.items():
        a, b = getattr(cold, name), getattr(warm, name)
        assert a.dtype == np.dtype(col.dtype) == b.dtype, name
        assert np.array_equal(a, b, equal_nan=True), name


@pytest.mark.parametrize("as_index", [False, True])
def test_take_selects_every_column_and_metric(tmp_path: Path, as_index: bool) -> None:
    """take(mask) and take(rows) give each column of the table and each metric at the selected
    trials, and share the names, sources and problems."""
    log = load_logs([_log(tmp_path)], use_cache=False)
    mask = log.outcome == 1
    got = log.take(np.flatnonzero(mask) if as_index else mask)
    assert len(got) == int(mask.sum()) == 6
    for name in TRIAL_COLUMNS:
        assert np.array_equal(getattr(got, name), getattr(log, name)[mask]), name
    assert np.array_equal(got.metrics["tokens"], log.metrics["tokens"][mask])
    assert (got.runs, got.tasks, got.groups, got.sources, got.problems) == \
        (log.runs, log.tasks, log.groups, log.sources, log.problems)


@dataclasses.dataclass
class _WithExtra(TrialLog):
    """A trial table with one column more, as TrialLog would be with a field added."""

    extra: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))


def test_take_keeps_a_column_added_to_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A column added to TRIAL_COLUMNS (and a field of the table) is selected by take with no other edit."""
    log = load_logs([_log(tmp_path)], use_cache=False)
    wide = _WithExtra(**{f.name: getattr(log, f.name) for f in dataclasses.fields(log)},
                      extra=np.arange(len(log)) * 10)
    monkeypatch.setitem(TRIAL_COLUMNS, "extra", TRIAL_COLUMNS["line"])
    got = wide.take(np.array([1, 4]))
    assert got.extra.tolist() == [10, 40]
    assert got.line.tolist() == log.line[[1, 4]].tolist()


def _literals_naming_columns(tree: ast.AST, at_least: int) -> list[tuple[int, list[str]]]:
    """Literal tuples, lists, sets and dict keys, and ``replace(...)`` keywords, naming
    ``at_least`` trial columns or more."""
    names = set(TRIAL_COLUMNS)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        elif isinstance(node, ast.Dict):
            words = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "replace":
            words = [k.arg for k in node.keywords]
        else:
            continue
        got = sorted(names.intersection(w for w in words if isinstance(w, str)))
        if len(got) >= at_least:
            found.append((node.lineno, got))
    return found


@pytest.mark.slow
def test_no_module_lists_the_columns_again() -> None:
    """Outside the table (and the file formats' own column names), no module names five or
    more trial columns in one literal or one ``replace``: it iterates the table instead."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in LISTS_ALLOWED:
            continue
        hits = _literals_naming_columns(ast.parse(path.read_text(encoding="utf-8")), 5)
        if hits:
            found[rel] = hits
    assert not found, found
