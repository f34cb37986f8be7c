"""Parsing on a Dask cluster (a LocalCluster of worker processes started here) gives the
local result; a worker killed mid-way is replaced and its files parsed again."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from flaketui.loading import load_logs
from flaketui.loading.distributed import parse_on_cluster, scheduler_address
from flaketui.loading.loader import build_log
from flaketui.model import FieldMap, InputError, Source
from tests.helpers.folders import same, write_folder

pytestmark = pytest.mark.slow

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=50) as c:
        yield c


def test_cluster_parse_equals_local(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Parsing on a LocalCluster equals the local parse."""
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
    """A killed worker is replaced and the result is the same."""
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
    """An unreadable file is named."""
    files = write_folder(tmp_path, files=2)
    gone = tmp_path / "gone.jsonl"
    pieces = parse_on_cluster([*files, gone], FieldMap(), cluster.scheduler_address, lambda n: None)
    assert "gone.jsonl: cannot read it (No such file or directory); skipped" in str(pieces[-1][1].problems[0])


def test_no_scheduler_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unreachable scheduler is one line."""
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        parse_on_cluster([], FieldMap(), "tcp://127.0.0.1:9", lambda n: None, connect_timeout=1)
    monkeypatch.setenv("FLAKETUI_SCHEDULER", "tcp://h:1")
    assert scheduler_address(None) == "tcp://h:1" and scheduler_address("tcp://x:2") == "tcp://x:2"
