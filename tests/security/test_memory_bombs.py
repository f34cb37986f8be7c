"""Memory bombs (Parquet is tested with its reader). Each hostile file
is read in a subprocess under an address-space limit (RLIMIT_AS) and a time limit: it exits
0 or 2, with no traceback, and what it was refused for is named."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 3 << 29
"""1.5 GB of address space: far more than any of these files honestly needs."""

HEADER = {"version": 2, "status": "success",
          "eval": {"run_id": "r", "created": "2024-11-05T20:04:20+00:00", "task": "t", "task_id": "t",
                   "task_version": 0, "dataset": {"name": "d", "samples": 1}, "model": "m", "config": {}},
          "plan": {"name": "plan", "steps": [], "config": {}},
          "results": {"total_samples": 1, "completed_samples": 1,
                      "scores": [{"name": "match", "scorer": "match", "params": {}, "metrics": {}}]},
          "stats": {"started_at": "2024-11-05T20:04:20+00:00", "completed_at": "2024-11-05T20:04:20+00:00",
                    "model_usage": {}}}
"""A minimal Inspect log header that ``inspect_ai`` reads."""


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def report(path: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flaketui", "report", str(path), "--no-cache", "--format", "json"],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, preexec_fn=_limit)


def assert_refused(proc: subprocess.CompletedProcess[str], words: str) -> None:
    assert proc.returncode in (0, 2), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-2000:]
    assert words in proc.stderr, proc.stderr[-2000:]


def summaries_member(target: int) -> bytes:
    item = json.dumps({"id": 1, "epoch": 1, "input": "x", "target": "y",
                       "scores": {"match": {"value": "C"}}}).encode()
    return b"[" + b",".join([item] * (target // (len(item) + 1))) + b"]"


def test_eval_of_many_summary_members_under_the_ratio_floor(tmp_path: Path) -> None:
    """20 summary members of 7.6 MB each, every one under the per-member floor (0.5 MB): read
    whole, inspect_ai built 1.7 GB of objects. Their total is capped before reading."""
    pytest.importorskip("inspect_ai")
    bomb = tmp_path / "many.eval"
    body = summaries_member(int((8 << 20) * 0.95))
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("header.json", json.dumps(HEADER))
        for n in range(20):
            z.writestr(f"_journal/summaries/{n + 1}.json", body)
    assert bomb.stat().st_size < 1 << 20
    assert_refused(report(bomb, timeout=60), "refused as a likely decompression bomb")


def test_eval_members_expanding_too_much_together(tmp_path: Path) -> None:
    """Six members each under the floor, 1000 times smaller packed: the total ratio refuses them."""
    pytest.importorskip("inspect_ai")
    bomb = tmp_path / "ratio.eval"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("header.json", json.dumps(HEADER))
        for n in range(6):
            z.writestr(f"samples/{n}_epoch_1.json", b" " * ((8 << 20) - 1))
    assert_refused(report(bomb, timeout=60), "members expand")


def test_inspect_json_nested_deeply(tmp_path: Path) -> None:
    """20 KB nested 10,000 deep: inspect_ai's streaming reader spent 350 MB (100 KB: 5.8 GB)."""
    pytest.importorskip("inspect_ai")
    bomb = tmp_path / "deep.json"
    depth = 50_000
    bomb.write_text('{"version": 2, "status": "success", "eval": ' + "[" * depth + "]" * depth + "}")
    assert_refused(report(bomb, timeout=60), "nested deeper than about 1,000 levels")


MEASURE = """
import sys
from flaketui.loading import load_logs
def peak():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(status["VmPeak"].split()[0]) << 10
before = peak()
log = load_logs([sys.argv[1]], use_cache=False)
print(peak() - before, len(log), len(log.problems))
"""


def address_space(path: Path) -> tuple[int, int, int]:
    """(address space the load added, trials, problems), read in a subprocess.

    With one malloc arena: glibc reserves 64 MB of address space for each thread's arena, and
    how many the scanner's threads get depends on their timing (the growth measured here went
    from 284 to 327 MB between runs of one file, against 90–96 MB with one arena); those
    reservations are not memory the load uses."""
    env = {**os.environ, "MALLOC_ARENA_MAX": "1"}
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, check=True, preexec_fn=_limit, env=env).stdout.split()
    return int(out[0]), int(out[1]), int(out[2])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_blank_lines_before_the_first_trial_reserve_no_name_table(tmp_path: Path) -> None:
    """16,384 blank lines, then trials: the name table reserved room for about half the file's
    bytes in names (12 times the file). Now the guess is made from lines that can hold trials."""
    p = tmp_path / "blanks.jsonl"
    p.write_bytes(b"\n" * 16384 + (b'{"task": "b", "passed": true, "pad": "' + b"x" * 200 + b'"}\n') * 200_000)
    grown, trials, problems = address_space(p)
    assert trials == 200_000 and problems == 0
    assert grown < 4 * p.stat().st_size, (grown, p.stat().st_size)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_short_first_trial_does_not_size_the_columns(tmp_path: Path) -> None:
    """One 21-byte trial, then long ones (the first past the 8 MB block): the columns were
    sized as if every line were that short (688 MB for a 157 MB file)."""
    p = tmp_path / "short_first.jsonl"
    with p.open("wb") as fh:
        fh.write(b'{"task":0,"score":0}\n')
        fh.write(b'{"task": "c", "passed": true, "pad": "' + b"y" * (9 << 20) + b'"}\n')
        line = b'{"task": "d", "passed": true, "pad": "' + b"z" * 100_000 + b'"}\n'
        for _ in range(1500):
            fh.write(line)
    grown, trials, _ = address_space(p)
    assert trials == 1502
    assert grown < 2 * p.stat().st_size, (grown, p.stat().st_size)
