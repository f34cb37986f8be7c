"""Parsing on a Dask cluster (a LocalCluster of worker processes started here) gives the
local result; a worker killed mid-way is replaced and its files parsed again."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from flaketui.loading import load_logs
from flaketui.loading.distributed import parse_on_cluster, scheduler_address
from flaketui.loading.loader import build_log
from flaketui.model import FieldMap, InputError, Source

distributed = pytest.importorskip("distributed")


def write_folder(folder: Path, files: int = 40, tasks: int = 30, trials: int = 4) -> list[Path]:
    rng = np.random.default_rng(3)
    out = []
    for f in range(files):
        path = folder / f"run{f % 3}" / f"part{f:03d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as fh:
            for t in range(tasks):
                for k in range(trials):
                    fh.write(json.dumps({"run": f"run{f % 3}", "task": f"t{f}-{t}", "trial": k,
                                         "passed": bool(rng.random() < 0.7),
                                         "metrics": {"tokens": int(rng.integers(100, 900))},
                                         "trace": [{"role": "assistant", "content": "x" * 50}]}) + "\n")
            if f == 7:
                fh.write("not json\n")
        out.append(path)
    return sorted(out)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=50) as c:
        yield c


def same(a, b) -> None:  # type: ignore[no-untyped-def]
    assert (a.runs, a.tasks, a.groups) == (b.runs, b.tasks, b.groups)
    for name in ("run", "task", "trial", "outcome", "score", "offset", "length", "line", "source"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert sorted(a.metrics) == sorted(b.metrics)
    for name in a.metrics:
        np.testing.assert_array_equal(a.metrics[name], b.metrics[name])
    assert [str(p) for p in a.problems] == [str(p) for p in b.problems]


def test_cluster_parse_equals_local(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    files = write_folder(tmp_path)
    local = load_logs([tmp_path], use_cache=False)
    ticks: list[int] = []
    pieces = parse_on_cluster(files, FieldMap(), cluster.scheduler_address, ticks.append)
    remote = build_log([Source(str(f), kind) for f, (kind, _) in zip(files, pieces, strict=True)],
                       [p for _, p in pieces])
    same(remote, local)
    assert sum(ticks) == sum(f.stat().st_size for f in files)
    assert any("part007.jsonl" in str(p) for p in remote.problems)


def test_a_killed_worker_is_replaced_and_the_result_is_the_same(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    files = write_folder(tmp_path, files=60, tasks=200)
    local = load_logs([tmp_path], use_cache=False)
    with distributed.Client(cluster.scheduler_address) as client:
        before = client.run(os.getpid)
    victim = sorted(before.values())[0]
    killed = []

    def tick(_n: int) -> None:
        if not killed:  # the first file is back: the workers are busy with the rest
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    pieces = parse_on_cluster(files, FieldMap(), cluster.scheduler_address, tick)
    remote = build_log([Source(str(f), kind) for f, (kind, _) in zip(files, pieces, strict=True)],
                       [p for _, p in pieces])
    same(remote, local)
    with distributed.Client(cluster.scheduler_address) as client:
        client.wait_for_workers(2, timeout=60)
        after = client.run(os.getpid)
    assert killed and victim not in after.values()


def test_an_unreadable_file_is_named(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    files = write_folder(tmp_path, files=2)
    gone = tmp_path / "gone.jsonl"
    pieces = parse_on_cluster([*files, gone], FieldMap(), cluster.scheduler_address, lambda n: None)
    assert "gone.jsonl: cannot read it (No such file or directory); skipped" in str(pieces[-1][1].problems[0])


def test_no_scheduler_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        parse_on_cluster([], FieldMap(), "tcp://127.0.0.1:9", lambda n: None, connect_timeout=1)
    monkeypatch.setenv("FLAKETUI_SCHEDULER", "tcp://h:1")
    assert scheduler_address(None) == "tcp://h:1" and scheduler_address("tcp://x:2") == "tcp://x:2"
