"""The C scanner built with AddressSanitizer and UndefinedBehaviorSanitizer
(``scripts/build_sanitized.py``) reads a seeded corpus of hostile JSON Lines files through
the public reader (``JsonLines.read``) without a memory error or undefined behaviour, and
keeps exactly the trials the per-line parser keeps on the same files.

Two child processes read the corpus: one with the sanitized module in place of
``flaketui._linescan`` (the ASan runtime preloaded), one with the scanner switched off the way
a build without it is (``flaketui._linescan`` not importable), so the comparison depends
only on the reader's public result (:class:`~flaketui.loading.parsed.Parsed`), not on how
the loader drives the scanner. Each file's read is summarised by name, never by internal
number: ids and name tables are free to differ, the trials kept are not.

The run is seeded (``SEED``) and bounded (``BUDGET`` seconds for the sanitized reader); a
failure names the file and the folder the corpus is kept in, so it can be read again by hand
with the command it prints.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261201
BUDGET = float(os.environ.get("FLAKETUI_FUZZ_SECONDS", "25"))
"""Seconds the sanitized reader may spend reading (building the module, writing the corpus
and starting the processes take about 10 s more); ``FLAKETUI_FUZZ_SECONDS`` sets it for a
longer run by hand."""
FILES = int(60 * BUDGET)
"""Files generated; the sanitized reader reads as many as fit in :data:`BUDGET`."""
POOL = 3000
"""Valid lines generated for the files to draw from (generating each file's afresh takes
longer than reading it)."""
MIN_READ = 150
"""Fewer files read in the budget than this means the run tested too little: a failure."""

SANITIZER_REPORT = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", "SUMMARY: AddressSanitizer",
                    "SUMMARY: UndefinedBehaviorSanitizer")
"""What ASan and UBSan print when they find something."""


def _build_script() -> Any:
    spec = importlib.util.spec_from_file_location("build_sanitized", ROOT / "scripts" / "build_sanitized.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the corpus ------------------------------------------------------------------------------

HUGE = [b"1e999", b"-1e999", b"1e-999", b"1.7976931348623157e309", b"123456789012345678901234567890",
        b"-9223372036854775809", b"-9223372036854775808", b"9223372036854775807", b"18446744073709551616",
        b"1" * 4301, b"-" + b"9" * 5000, b"0." + b"0" * 400 + b"1", b"1" + b"0" * 400 + b".5e-400", b"-0",
        b"4.9e-325", b"2.2250738585072011e-308", b"1E+", b"01", b"-", b"1.", b".5", b"+1", b"NaN", b"Infinity"]
"""Numbers past every limit: doubles that overflow, integers past 64 bits and past Python's
4,300-digit string limit, denormals, and near-numbers JSON forbids."""

BAD_UTF8 = [b"\xff", b"\xfe", b"\xc3", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
            b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\x80", b"\xef\xbb\xbf"]
"""Invalid UTF-8: stray and truncated sequences, overlong forms, encoded surrogates, past
U+10FFFF, and a BOM in the middle."""

CONTROL = [bytes([c]) for c in range(0x20) if c != 0x0A] + [b"\x7f", b"\\u0000", b"\\ud800", b"\\udfff\\ud800",
                                                             b"\\x41", b"\\u12", b"\\", b'\\"', b"\\uD83D\\uDE00"]
"""Raw control bytes (inside strings JSON forbids them) and escapes, valid and not."""

STRUCTURE = [b'"', b"{", b"}", b"[", b"]", b",", b":", b" ", b"null", b"true", b"false", b'"task"', b'"run"',
             b'"metrics"', b'"trace"', b'"passed"', b'"score"', b'"trial"', b'"group"', b'"error"', b'"task_id"']
"""JSON's own punctuation and the keys the readers look for."""


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value of any kind, nested a little."""
    r = rng.random()
    if depth < 3 and r < 0.15:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if depth < 3 and r < 0.3:
        return {rng.choice(["a", "kind", "content", "ü", ""]): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return rng.choice([None, True, False, 0, 1, 2, -1, 7, 1.0, 0.5, 2.5, -0.0, 1e308, 5e-324, 2**63 - 1, 2**63,
                       2**64, 10**30, "", "t", "task-1", "ü", "日本", "\u2028", "a\"b", "\\", "NaN", "é" * 40])


def _record(rng: random.Random, i: int) -> dict[str, Any]:
    """A trial of one of the shapes the reader takes, mostly valid so that the scanner keeps
    most lines and a mutation is what makes the difference."""
    rec: dict[str, Any] = {}
    if rng.random() < 0.8:
        rec["run"] = rng.choice(["r1", "r2", "run-ü", "r" * rng.randrange(1, 300)])
    key = rng.choice(["task", "task", "task_id"])
    rec[key] = rng.choice([f"t{i % 37}", i % 37, f"task/{i % 11}", "ü" * (1 + i % 5)])
    if rng.random() < 0.8:
        rec["trial"] = rng.choice([i // 37, i // 37, -1, 0, 2**40])
    outcome = rng.choice(["passed", "score", "reward", "passed"])
    rec[outcome] = rng.choice([True, False, 0, 1, 0.5, 1.0, 0.999999, 1e-7, 2, -0.5, None])
    if rng.random() < 0.3:
        rec["group"] = rng.choice(["g1", "g2", "", None])
    if rng.random() < 0.3:
        rec["error"] = rng.choice([None, "", "timeout", {"kind": "x"}, False, 0, [1]])
    if rng.random() < 0.7:
        names = rng.sample(["tokens", "cost", "latency", "turns", "ü", "m" * 50] + [f"m{j}" for j in range(20)],
                           rng.choice([1, 2, 3, 5, 17, 22]))
        rec["metrics"] = {m: rng.choice([rng.randrange(9000), rng.random(), True, "s", None, 1e308]) for m in names}
    if rng.random() < 0.7:
        rec[rng.choice(["trace", "traj", "messages"])] = [
            {"role": rng.choice(["user", "assistant", "tool"]), "content": _value(rng)}
            for _ in range(rng.randrange(4))]
    if rng.random() < 0.2:
        rec[rng.choice(["extra", "notes", "meta"])] = _value(rng)
    return rec


def _line(rng: random.Random, i: int) -> bytes:
    rec = _record(rng, i)
    if rng.random() < 0.5:
        return json.dumps(rec, ensure_ascii=rng.random() < 0.5).encode()
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False).encode()


def _nest(rng: random.Random) -> bytes:
    """A value nested ``depth`` deep, closed or left open."""
    depth = rng.choice([33, 64, 65, 255, 256, 1000, 5000, 20_000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}"), (b'[{"k":', b"}]")])
    closed = rng.random() < 0.7
    return opener * depth + b"1" + (closer * depth if closed else b"")


_NUMBER = re.compile(rb"-?[0-9][0-9.eE+-]*")


def _mutate_line(rng: random.Random, line: bytes) -> bytes:
    """``line`` with one to four damages of the kinds a hostile log holds."""
    data = bytearray(line)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data) + 1)
        what = rng.random()
        if what < 0.2 and data:  # a bit flipped
            at = min(at, len(data) - 1)
            data[at] ^= 1 << rng.randrange(8)
        elif what < 0.35:
            data[at:at] = rng.choice(HUGE)
        elif what < 0.45:  # a number replaced by one past the limits
            number = _NUMBER.search(data, at) or _NUMBER.search(data)
            if number:
                data[number.start():number.end()] = rng.choice(HUGE)
        elif what < 0.55:
            data[at:at] = rng.choice(BAD_UTF8)
        elif what < 0.67:
            data[at:at] = rng.choice(CONTROL)
        elif what < 0.8:
            data[at:at + rng.randrange(2)] = rng.choice(STRUCTURE)
        elif what < 0.87:  # a deep value where a value might be
            j = data.find(b":", at) + 1 or at
            data[j:j] = _nest(rng) + b","
        elif what < 0.94:
            del data[at:at + rng.randint(1, 8)]
        else:
            del data[at:]
    return bytes(data).replace(b"\n", b"\\n")


def _long_line(rng: random.Random, i: int) -> bytes:
    """A valid trial with one huge value: a long string, a long trace, many metrics or a long key."""
    rec = _record(rng, i)
    kind = rng.randrange(4)
    if kind == 0:
        rec["task"] = "x" * rng.choice([4096, 65_537, 200_000])
    elif kind == 1:
        rec["trace"] = [{"role": "assistant", "content": "y" * 20}] * rng.choice([500, 5000])
    elif kind == 2:
        rec["metrics"] = {f"metric_{j}": j * 0.5 for j in range(rng.choice([100, 2000]))}
    else:
        rec["k" * rng.choice([1000, 70_000])] = 1
    return json.dumps(rec).encode()


def corpus_file(rng: random.Random, pool: list[bytes]) -> bytes:
    """One hostile JSON Lines file: valid lines (from ``pool``), a share of them damaged, with the odd
    long line, blank or whitespace-only line, CRLF ending, BOM, and file-level damage."""
    n = rng.choice([1, 2, 5, 10, 30, 80, 200])
    share = rng.choice([0.0, 0.05, 0.2, 0.5, 1.0])
    lines = []
    long_at = rng.randrange(n) if rng.random() < 0.15 else -1
    for i in range(n):
        r = rng.random()
        if i == long_at:
            line = _long_line(rng, i)
        elif r < 0.03:
            line = rng.choice([b"", b" ", b"\t", b"\x0b", b"\x0c", b"\x0b\x0c" * 40, b" " * 200, b"\r", b"{}", b"[]",
                               b"null", b"1", b'"x"'])
        else:
            line = rng.choice(pool)
        if rng.random() < share:
            line = _mutate_line(rng, line)
        lines.append(line)
    end = rng.choice([b"\n", b"\n", b"\r\n"])
    data = end.join(lines) + (end if rng.random() < 0.8 else b"")
    if rng.random() < 0.05:
        data = b"\xef\xbb\xbf" + data
    r = rng.random()
    if r < 0.1 and data:  # cut anywhere, mid-character included
        data = data[:rng.randrange(len(data))]
    elif r < 0.15 and data:  # bits flipped anywhere, newlines included
        buf = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        data = bytes(buf)
    elif r < 0.18:
        data = _nest(rng) + b"\n" + data
    return data


def write_corpus(folder: Path, seed: int, files: int) -> list[Path]:
    rng = random.Random(seed)
    pool = [_line(rng, i) for i in range(POOL)]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(files):
        data = corpus_file(rng, pool)
        if not data:
            data = b"\n"
        path = folder / f"case{i:04d}.jsonl"
        path.write_bytes(data)
        paths.append(path)
    return paths


# --- the child: one reader over the corpus ---------------------------------------------------

def _summary(parsed: Any) -> dict[str, Any]:
    """What a read kept, by name: each trial's fields and metrics (floats as ``repr``), and
    the problems as printed."""
    trials = []
    metrics = {name: column.tolist() for name, column in parsed.metrics.items()}
    for i in range(len(parsed)):
        group = int(parsed.group[i])
        trials.append([
            parsed.runs[int(parsed.run[i])], parsed.tasks[int(parsed.task[i])],
            None if group < 0 else parsed.groups[group], int(parsed.trial[i]), int(parsed.outcome[i]),
            repr(float(parsed.score[i])), int(parsed.offset[i]), int(parsed.length[i]), int(parsed.line[i]),
            bool(parsed.has_trace[i]),
            sorted((name, repr(column[i])) for name, column in metrics.items() if not math.isnan(column[i])),
        ])
    return {"trials": trials, "problems": [str(p) for p in parsed.problems]}


def _use_scanner(so_path: str) -> set[str]:
    """Put the module at ``so_path`` in place of ``flaketui._linescan`` (``off``: make it
    unimportable, as in a build without the C compiler); the set the names the loader looks
    up on it are added to (it reaches the module through a proxy that records them)."""
    looked_up: set[str] = set()
    if so_path == "off":
        sys.modules["flaketui._linescan"] = None  # type: ignore[assignment]
        return looked_up
    import types

    import flaketui

    spec = importlib.util.spec_from_file_location("flaketui._linescan", so_path)
    assert spec is not None and spec.loader is not None
    real = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real)
    proxy = types.ModuleType("flaketui._linescan", real.__doc__)

    def __getattr__(name: str) -> Any:  # noqa: N807 - a module's attribute hook (PEP 562)
        looked_up.add(name)
        return getattr(real, name)

    proxy.__getattr__ = __getattr__  # type: ignore[method-assign]
    proxy.__file__ = real.__file__
    sys.modules["flaketui._linescan"] = proxy
    flaketui._linescan = proxy  # type: ignore[attr-defined]
    return looked_up


def child(so_path: str, folder: str, out: str, budget: float) -> None:
    """Read every ``case*.jsonl`` of ``folder`` in order (until ``budget`` seconds have gone),
    one JSON summary per line of ``out``; stderr names each file before it is read, so a
    sanitizer's abort says which file did it."""
    looked_up = _use_scanner(so_path)
    from flaketui.loading.formats.json_lines import JsonLines
    from flaketui.model import FieldMap

    reader = JsonLines()
    canary = Path(out + ".canary.jsonl")  # read once for the imports, then again to see the scanner used
    canary.write_bytes(b'{"task": "a", "passed": true}\n{"task": "b", "score": 0.5, "metrics": {"m": 1}}\n' * 50)
    reader.read(canary, canary.stat().st_size, FieldMap(), "r0", 1, lambda n: None)
    looked_up.clear()
    reader.read(canary, canary.stat().st_size, FieldMap(), "r0", 1, lambda n: None)
    used = sorted(looked_up)
    start = time.monotonic()
    with open(out, "w", encoding="utf-8") as fh:
        for path in sorted(Path(folder).glob("case*.jsonl")):
            if time.monotonic() - start > budget:
                break
            print(f"reading {path}", file=sys.stderr, flush=True)
            try:
                summary = _summary(reader.read(path, path.stat().st_size, FieldMap(), "r0", 1, lambda n: None))
            except Exception as exc:  # noqa: BLE001 - a reader's exception is a finding, compared like a result
                summary = {"exception": f"{type(exc).__name__}: {exc}"[:500]}
            summary["file"] = path.name
            fh.write(json.dumps(summary) + "\n")
        maps = Path("/proc/self/maps")
        runtime = "libasan" in maps.read_text(errors="replace") if maps.exists() else None
        fh.write(json.dumps({"used": used, "asan": runtime, "seconds": time.monotonic() - start}) + "\n")


# --- the test --------------------------------------------------------------------------------

def _sanitizer_env() -> dict[str, str]:
    """ASan and UBSan stop at their first finding (``abort_on_error``, ``halt_on_error``);
    Python's allocator is bypassed (``PYTHONMALLOC=malloc``) so that a read past a buffer
    Python allocated lands in ASan's red zone, not inside a pymalloc arena."""
    env = dict(os.environ)
    env.update(ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1", PYTHONMALLOC="malloc")
    return env


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the sanitized module, the ASan runtime to preload); skipped where either can't be had."""
    script = _build_script()
    try:
        asan = script.runtime("libasan.so")
        module = script.build(tmp_path_factory.mktemp("sanitized"))
    except script.Unavailable as exc:
        pytest.skip(f"no sanitizer build here: {exc}")
    except RuntimeError:
        if importlib.util.find_spec("flaketui._linescan") is None:  # nor could setup.py build it here
            pytest.skip("the C scanner does not compile on this platform")
        raise
    return module, asan


OVERFLOW = r"""
#include <Python.h>
#include <stdlib.h>
static PyObject *overflow(PyObject *self, PyObject *arg) {
    long n = 8 + PyLong_AsLong(arg); /* a size unknown at compile time: ASan's to catch, not UBSan's */
    volatile char *buf = malloc(n);
    buf[n] = 1; /* one past the end */
    free((void *)buf);
    Py_RETURN_NONE;
}
static PyMethodDef methods[] = {{"overflow", overflow, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "overflow", NULL, -1, methods};
PyMODINIT_FUNC PyInit_overflow(void) { return PyModule_Create(&module); }
"""
"""A module with a heap overflow: what the harness must catch."""


def test_the_harness_catches_a_heap_overflow(sanitized: tuple[Path, Path], tmp_path: Path) -> None:
    """Built with the same flags and run with the same environment, a one-byte heap overflow
    aborts the child with ASan's report: a quiet sanitized run means no finding, not a blind
    harness."""
    _, asan = sanitized
    source = tmp_path / "overflow.c"
    source.write_text(OVERFLOW)
    module = _build_script().build(tmp_path, source=source)
    env = _sanitizer_env()
    env["LD_PRELOAD"] = str(asan)
    code = f"import sys; sys.path.insert(0, {str(module.parent)!r}); import overflow; overflow.overflow(0)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, errors="replace",
                          timeout=120)
    assert done.returncode != 0 and "heap-buffer-overflow" in done.stderr, done.stderr[-2000:]


def _start(so_path: str, folder: Path, out: Path, env: dict[str, str], budget: float) -> subprocess.Popen[str]:
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.security.test_sanitized_scanner import child; "
            f"child({so_path!r}, {str(folder)!r}, {str(out)!r}, {budget!r})")
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")


def _results(out: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return {row["file"]: row for row in rows[:-1]}, rows[-1]


def test_sanitized_scanner_agrees_with_the_per_line_parser(sanitized: tuple[Path, Path], tmp_path: Path) -> None:
    """A seeded corpus of hostile files (bit flips, cuts, numbers past every limit, deep
    nesting, bad UTF-8, control characters, very long lines) read with the sanitized scanner:
    no sanitizer report, no crash, and on each file the trials and problems the per-line
    parser gives."""
    module, asan = sanitized
    folder = tmp_path / "corpus"
    write_corpus(folder, SEED, FILES)
    env = _sanitizer_env()
    env["LD_PRELOAD"] = f"{asan} {env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(asan)
    scanned_out, plain_out = tmp_path / "scanned.jsonl", tmp_path / "plain.jsonl"
    scanning = _start(str(module), folder, scanned_out, env, BUDGET)
    plain = _start("off", folder, plain_out, dict(os.environ), 10 * BUDGET)
    _, scan_err = scanning.communicate(timeout=10 * BUDGET)
    _, plain_err = plain.communicate(timeout=10 * BUDGET)

    read = [line for line in scan_err.splitlines() if line.startswith("reading ")]
    replay = (f"LD_PRELOAD={asan} ASAN_OPTIONS={env['ASAN_OPTIONS']} UBSAN_OPTIONS={env['UBSAN_OPTIONS']} "
              f"PYTHONMALLOC=malloc {sys.executable} {Path(__file__).relative_to(ROOT)} {module} {folder} OUT 600")
    where = f"corpus in {folder}; last file read: {read[-1][8:] if read else 'none'}; replay: {replay}"
    reports = [marker for marker in SANITIZER_REPORT if marker in scan_err]
    assert not reports and scanning.returncode == 0, f"sanitized reader failed ({where}):\n{scan_err[-6000:]}"
    assert plain.returncode == 0, plain_err[-3000:]

    got, scan_end = _results(scanned_out)
    want, _ = _results(plain_out)
    assert scan_end["asan"] is not False, "the ASan runtime is not in the sanitized reader's process"
    assert scan_end["used"], "reading a file looked nothing up on the sanitized scanner: was it used at all?"
    assert len(got) >= MIN_READ, f"only {len(got)} files read in {BUDGET} s"
    for name, result in got.items():
        assert result == want[name], f"{name}: the scanner and the per-line parser differ ({where})"
    assert sum(len(r.get("trials", ())) for r in got.values()) > 10 * len(got)


if __name__ == "__main__":  # python tests/security/test_sanitized_scanner.py SO_PATH|off FOLDER OUT BUDGET
    child(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))
