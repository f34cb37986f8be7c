"""Every log format's reader, fuzzed briefly: a small valid sample of the format and seeded
mutations of it (values of the wrong kind, numbers past every limit, deep nesting, lone
surrogates, long strings, keys removed, bits flipped, files cut short) read by ``flaketui
report FILE --format json`` in-process. Whatever the file holds, the command exits 0 with a
JSON report or 2 with a one-line error naming the file, and never shows a traceback.

Each format has a time budget (:data:`BUDGET` seconds) and a seed of its own, so a failure
is reproduced by the format's name (and the budget) alone; the message gives the case's
mutations and the path the mutated file is kept at. The Inspect samples are Inspect's own
logs in ``../shared/realdata`` and skip where that folder is absent.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.conftest import ROOT, SHARED

pytestmark = pytest.mark.slow

DATA = ROOT / "tests" / "data"
FIXTURE = ROOT / "fixtures" / "oncall-baseline.jsonl"
INSPECT = SHARED / "realdata" / "inspect-ai"

BUDGET = float(os.environ.get("FLAKETUI_FUZZ_SECONDS", "2.5"))
"""Seconds of mutated files read per format (a case started inside the budget finishes);
``FLAKETUI_FUZZ_SECONDS`` sets it for a longer hunt by hand."""
MIN_CASES = 3
"""Fewer cases than this inside the budget means a format was hardly fuzzed: a failure."""
SLOW = 15.0
"""A single report taking longer than this is a finding (bounded time for every input)."""


# --- hostile values ----------------------------------------------------------------------------

RAW = [b"1e999", b"-1e999", b"1" * 4301, b"-" + b"9" * 5000, b"123456789012345678901234567890",
       b"-9223372036854775809", b"18446744073709551616", b"NaN", b"-Infinity", b"1e-400", b"-0",
       b"[" * 5000 + b"]" * 5000, b'{"a":' * 3000 + b"1" + b"}" * 3000, b"[" * 100_000]
"""Values no JSON library writes: spelled as raw text into the serialised document."""
ALL_RAW = tuple(range(len(RAW)))
VALUES: list[Any] = [None, True, False, 0, -1, 1, 2, 2**63, -(2**63) - 1, 2**64, 1e308, -1e308, 5e-324, 0.5, "",
                     "\ud800", "a\udc00b", "\x1b]0;x\x07", "\x00", "x" * 100_000, "1", "true", "+-@=", "\u202e",
                     [], [None], [[[]]], {}, {"": None}, {"a": [1, {"b": None}]}, [1, "a", {}], float("nan"),
                     float("inf")]
"""Values of every kind, each put where any value of the document was."""


class _Raw(str):
    """A placeholder for one of :data:`RAW` inside a document being mutated."""


def _nodes(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths to every value inside ``doc`` (list indices and dict keys)."""
    out = [path]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _nodes(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:50]):
            out += _nodes(value, (*path, i))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _mutate_tree(rng: random.Random, doc: Any, notes: list[str], raw: tuple[int, ...]) -> Any:
    """``doc`` with one value replaced (by one of :data:`VALUES`, or of :data:`RAW` numbered
    ``raw``), removed, renamed or repeated."""
    paths = _nodes(doc)
    path = rng.choice(paths)
    what = rng.random()
    if not path:  # the whole document
        notes.append(f"document replaced ({what:.2f})")
        return rng.choice([[], {}, None, 1, "x", [doc, doc], {"a": doc}])
    parent, key = _get(doc, path[:-1]), path[-1]
    if what < 0.55:
        value: Any = rng.choice(VALUES)
        if rng.random() < 0.3:
            value = _Raw(f"\x00RAW{rng.choice(raw)}\x00")
        notes.append(f"{list(path)} = {str(value)[:40]!r}")
        parent[key] = value
    elif what < 0.7:
        notes.append(f"del {list(path)}")
        del parent[key]
    elif what < 0.8 and isinstance(parent, dict):
        new = rng.choice(["", "task", "id", "scores", "\ud800", "x" * 3000, str(key) + " "])
        notes.append(f"{list(path)} renamed {new[:20]!r}")
        parent[new] = parent.pop(key)
    elif what < 0.9 and isinstance(parent, list):
        notes.append(f"{list(path)} repeated")
        parent[key:key] = [parent[key]] * rng.choice([2, 50, 2000])
    else:
        value = _get(doc, path)
        notes.append(f"{list(path)} wrapped")
        parent[key] = rng.choice([[value], {"value": value}, str(value)[:200]])
    return doc


def _dump(doc: Any, compact: bool) -> bytes:
    text = json.dumps(doc, separators=(",", ":") if compact else None, indent=None if compact else 1)
    data = text.encode()  # ASCII: lone surrogates and control characters are escapes
    for i, raw in enumerate(RAW):
        data = data.replace(f'"\\u0000RAW{i}\\u0000"'.encode(), raw)
    return data


def mutate_json(rng: random.Random, data: bytes, notes: list[str], raw: tuple[int, ...] = ALL_RAW) -> bytes:
    doc = json.loads(data)
    for _ in range(rng.randint(1, 3)):
        doc = _mutate_tree(rng, doc, notes, raw)
    return _dump(doc, compact=b"\n" not in data.strip())


def mutate_lines(rng: random.Random, data: bytes, notes: list[str]) -> bytes:
    """JSON Lines with one to three lines mutated as documents."""
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        try:
            doc = json.loads(lines[i])
        except ValueError:
            continue
        doc = _mutate_tree(rng, doc, notes, ALL_RAW)
        lines[i] = _dump(doc, compact=True).replace(b"\n", b" ")
        notes[-1] = f"line {i + 1}: {notes[-1]}"
    return b"\n".join(lines)


def mutate_bytes(rng: random.Random, data: bytes, notes: list[str], raw: tuple[int, ...] = ALL_RAW) -> bytes:
    """Bits flipped, bytes inserted (of :data:`RAW` too, those numbered ``raw``), or the file cut short."""
    buf = bytearray(data)
    what = rng.random()
    if what < 0.3:
        at = rng.randrange(len(buf) + 1)
        notes.append(f"cut at {at}")
        return bytes(buf[:at])
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(buf))
        if what < 0.7:
            buf[at] ^= 1 << rng.randrange(8)
        else:
            buf[at:at] = rng.choice([b"\xff", b"\xed\xa0\x80", b"\x00", b'"', b"{", b"]", b",", b"\n",
                                     *(RAW[i] for i in raw[:6])])
    notes.append(f"bytes damaged ({'flipped' if what < 0.7 else 'inserted'})")
    return bytes(buf)


# --- the samples ---------------------------------------------------------------------------------

@dataclass
class Sample:
    """A valid file (or folder) of one format: ``build`` writes it under a folder and returns
    (the path to report on, the file inside it to mutate); ``mutate`` damages that file."""

    build: Callable[[Path], tuple[Path, Path]]
    mutate: Callable[[random.Random, bytes, list[str]], bytes]
    needs: list[str] = field(default_factory=list)
    """Modules (importorskip) or paths that must exist."""
    valid_exit: int = 0
    """What the valid sample exits with (2 for a file that holds no trial by design)."""


def _copy(src: Path, name: str | None = None) -> Callable[[Path], tuple[Path, Path]]:
    def build(folder: Path) -> tuple[Path, Path]:
        target = folder / (name or src.name)
        shutil.copyfile(src, target)
        return target, target
    return build


def _jsonl(folder: Path) -> tuple[Path, Path]:
    target = folder / "run.jsonl"
    target.write_bytes(b"".join(FIXTURE.read_bytes().splitlines(keepends=True)[:40]))
    return target, target


def _json_array(folder: Path) -> tuple[Path, Path]:
    records = [json.loads(line) for line in FIXTURE.read_bytes().splitlines()[:30]]
    target = folder / "results.json"
    target.write_text(json.dumps(records, indent=1))
    return target, target


def _lm_eval(folder: Path) -> tuple[Path, Path]:
    src = DATA / "lm_eval" / "asdiv_llama-3-8b-instruct"
    run = folder / "asdiv"
    run.mkdir()
    for path in src.iterdir():
        if path.name.startswith("samples_"):
            lines = path.read_bytes().splitlines(keepends=True)[:20]
            (run / path.name).write_bytes(b"".join(lines))
        else:
            shutil.copyfile(path, run / path.name)
    samples = next(run.glob("samples_*.jsonl"))
    return samples, samples


def _harbor_file(rel: str) -> Callable[[Path], tuple[Path, Path]]:
    def build(folder: Path) -> tuple[Path, Path]:
        job = folder / "hello-world-job"
        shutil.copytree(DATA / "harbor" / "hello-world-job", job)
        return job, job / rel
    return build


def _parquet(folder: Path) -> tuple[Path, Path]:
    log = folder / "run.jsonl"
    log.write_bytes(b"".join(FIXTURE.read_bytes().splitlines(keepends=True)[:40]))
    target = folder / "trials.parquet"
    result = CliRunner().invoke(main, ["export", str(log), "--out", str(target)])
    assert result.exit_code == 0, result.output
    return target, target


def mutate_parquet(rng: random.Random, data: bytes, notes: list[str]) -> bytes:
    """A trial table with one column of another type, or null, or dropped; or its bytes damaged."""
    if rng.random() < 0.3:
        return mutate_bytes(rng, data, notes)
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    name = rng.choice(table.column_names)
    n = table.num_rows
    choices: list[tuple[str, Any]] = [
        ("null", pa.nulls(n)),
        ("strings", pa.array([rng.choice(["", "x", "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
                                          "1e999", "\x1b[2J", "9" * 5000]) for _ in range(n)])),
        ("int64 extremes", pa.array([rng.choice([-(2**63), 2**63 - 1, -1, 0]) for _ in range(n)], pa.int64())),
        ("uint64", pa.array([2**64 - 1] * n, pa.uint64())),
        ("floats", pa.array([rng.choice([float("nan"), float("inf"), -1e308, 0.5]) for _ in range(n)])),
        ("lists", pa.array([[1, 2]] * n)),
        ("structs", pa.array([{"a": 1}] * n)),
        ("bools", pa.array([True] * n)),
        ("ragged", pa.array([[1]] * (n // 2) + [None] * (n - n // 2))),
    ]
    what, column = rng.choice(choices)
    if rng.random() < 0.15:
        notes.append(f"column {name} dropped")
        table = table.drop_columns([name])
    else:
        notes.append(f"column {name} as {what}")
        table = table.set_column(table.column_names.index(name), name, column)
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def mutate_eval(rng: random.Random, data: bytes, notes: list[str], raw: tuple[int, ...] = ALL_RAW) -> bytes:
    """An Inspect ``.eval`` (a zip of JSON members) with one member's JSON mutated, or its bytes damaged."""
    if rng.random() < 0.25:
        return mutate_bytes(rng, data, notes, raw)
    src = zipfile.ZipFile(io.BytesIO(data))
    names = [n for n in src.namelist() if n.endswith(".json")]
    victim = rng.choice(names)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == victim:
                body = mutate_json(rng, body, notes, raw)
                notes[-1] = f"{victim}: {notes[-1]}"
            dst.writestr(info.filename, body)
    return out.getvalue()


def _gzipped(build: Callable[[Path], tuple[Path, Path]]) -> Callable[[Path], tuple[Path, Path]]:
    def gz(folder: Path) -> tuple[Path, Path]:
        plain, _ = build(folder)
        target = plain.with_name(plain.name + ".gz")
        target.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
        plain.unlink()
        return target, target
    return gz


def mutate_gzip(rng: random.Random, data: bytes, notes: list[str]) -> bytes:
    if rng.random() < 0.3:
        return mutate_bytes(rng, data, notes)
    return gzip.compress(mutate_lines(rng, gzip.decompress(data), notes), mtime=0)


def _structured(rng: random.Random, data: bytes, notes: list[str], raw: tuple[int, ...] = ALL_RAW) -> bytes:
    """A JSON document mutated as a tree (mostly) or as bytes."""
    return mutate_bytes(rng, data, notes, raw) if rng.random() < 0.25 else mutate_json(rng, data, notes, raw)


def _lined(rng: random.Random, data: bytes, notes: list[str]) -> bytes:
    return mutate_bytes(rng, data, notes) if rng.random() < 0.25 else mutate_lines(rng, data, notes)


TB = DATA / "terminal_bench"
TRAJECTORY = Path("agent") / "trajectory.json"
SAMPLES: dict[str, Sample] = {
    "jsonl": Sample(_jsonl, _lined),
    "jsonl.gz": Sample(_gzipped(_jsonl), mutate_gzip),
    "json-array": Sample(_json_array, _structured),
    "tau2": Sample(_copy(DATA / "tau2" / "airline_langchain_agent_gpt-oss-120b_1trial.json"), _structured),
    "tau2-folder": Sample(lambda f: (lambda d: (d, d / "results.json"))(
        Path(shutil.copytree(DATA / "tau2" / "dir_format_voice_retail", f / "voice"))), _structured),
    "terminal-bench": Sample(_copy(TB / "20250829_goose_claude-4-sonnet" / "2025-08-25__12-29-38__results.json"),
                             _structured),
    "terminal-bench-trial": Sample(lambda f: (lambda d: (d, d / "create-bucket.1-of-5" / "results.json"))(
        Path(shutil.copytree(TB / "20250902_orchestrator_claude-4-sonnet" / "create-bucket", f / "create-bucket"))),
        _structured),
    "lm-eval": Sample(_lm_eval, _lined),
    "otel-jsonl": Sample(_copy(DATA / "otel" / "console_exporter_agent_framework" / "traces.jsonl"), _lined),
    "otel-otlp-json": Sample(_copy(DATA / "otel" / "otlp_json_genai_interlingua" / "openinference" / "in.json"),
                             _structured),
    "harbor-result": Sample(_harbor_file("result.json"), _structured),
    "harbor-trial": Sample(_harbor_file("hello-world__Tm2xQ7a/result.json"), _structured),
    "harbor-atif-trajectory": Sample(_harbor_file("hello-world__Tm2xQ7a/agent/trajectory.json"), _structured),
    "atif-alone": Sample(_copy(DATA / "harbor" / "hello-world-job" / "hello-world__Tm2xQ7a" / TRAJECTORY), _structured,
                         valid_exit=2),
    "inspect-eval": Sample(_copy(INSPECT / "log_streaming.eval"), partial(mutate_eval, raw=ALL_RAW),
                           needs=["inspect_ai", str(INSPECT)]),
    "inspect-json": Sample(_copy(INSPECT / "log_formats.json"), partial(_structured, raw=ALL_RAW),
                           needs=["inspect_ai", str(INSPECT)]),
    "parquet": Sample(_parquet, mutate_parquet, needs=["pyarrow"]),
}
"""One sample per registered format (and per shape a format reads: a τ² file and folder, a
Terminal-Bench run and trial, Harbor's job, trial and ATIF trajectory files, and an ATIF
trajectory alone, which is parsed whole to say what it holds)."""


def _report(target: Path) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(main, ["report", str(target), "--format", "json"])
    exception = None if result.exception is None or isinstance(result.exception, SystemExit) else result.exception
    return result.exit_code, result.stdout, result.stderr, exception


def _check(target: Path, victim: Path, notes: list[str]) -> None:
    start = time.monotonic()
    code, out, err, exception = _report(target)
    took = time.monotonic() - start
    case = f"{victim} ({'; '.join(notes)})"
    assert exception is None, f"{case}: {type(exception).__name__}: {exception}"
    assert "Traceback" not in out + err, f"{case}: a traceback:\n{err[-3000:]}"
    assert code in (0, 2), f"{case}: exit {code}:\n{err[-2000:]}"
    assert took < SLOW, f"{case}: took {took:.1f} s"
    if code == 0:
        json.loads(out)
    else:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("flaketui: error:"), f"{case}: not one error line:\n{err}"
        assert target.name in lines[0] or victim.name in lines[0], f"{case}: the error names no file: {lines[0]}"


@pytest.mark.parametrize("name", list(SAMPLES))
def test_mutated_files_exit_0_or_2_with_one_line(name: str, tmp_path: Path) -> None:
    """A format's valid sample reads; each seeded mutation of it exits 0 with JSON or 2 with one
    line naming the file, never a traceback, within the time bound."""
    sample = SAMPLES[name]
    for need in sample.needs:
        if need.startswith("/"):
            if not Path(need).exists():
                pytest.skip(f"{need} is not here")
        else:
            pytest.importorskip(need)
    base = tmp_path / "sample"
    base.mkdir()
    target, victim = sample.build(base)
    code, out, err, exception = _report(target)
    assert (code, exception) == (sample.valid_exit, None), f"the valid sample does not read as it should: {err}"
    original = victim.read_bytes()
    rng = random.Random(f"{name}-fuzz")
    start, cases = time.monotonic(), 0
    while time.monotonic() - start < BUDGET:
        cases += 1
        folder = tmp_path / f"case{cases}"
        folder.mkdir()
        target, victim = sample.build(folder)
        notes: list[str] = []
        try:
            data = sample.mutate(rng, original, notes)
        except (ValueError, RecursionError):  # a document the mutation can't write (e.g. a huge int)
            shutil.rmtree(folder)
            continue
        victim.write_bytes(data)
        _check(target, victim, notes)
        shutil.rmtree(folder)
    assert cases >= MIN_CASES, f"only {cases} cases in {BUDGET} s"


def test_inspect_json_with_a_huge_integer_is_refused(tmp_path: Path) -> None:
    """An Inspect ``.json`` log holding an integer of 5,000 digits exits 2 with one line (run in
    a child process, as a crash of the interpreter would end this one: ijson's C backend, which
    ``inspect_ai`` reads ``.json`` logs with, crashes on such an integer)."""
    if not (INSPECT / "log_formats.json").exists():
        pytest.skip(f"{INSPECT} is not here")
    pytest.importorskip("inspect_ai")
    doc = json.loads((INSPECT / "log_formats.json").read_bytes())
    doc["results"]["scores"][0]["params"] = "HUGE"
    log = tmp_path / "huge_int.json"
    log.write_bytes(json.dumps(doc).encode().replace(b'"HUGE"', b"-" + b"9" * 5000))
    done = subprocess.run([sys.executable, "-m", "flaketui", "report", str(log), "--format", "json"],
                          capture_output=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2, f"exit {done.returncode}: {done.stderr[-500:]!r}"
    assert b"Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
