"""``--scheduler`` (and ``FLAKETUI_SCHEDULER``): the CLI parses on a Dask LocalCluster of worker
processes started here, and prints the report a local load prints; the index cache is kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import cache, distributed, load_logs, loader
from tests.helpers.folders import same, write_folder

pytestmark = pytest.mark.slow

dask_distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with dask_distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=50) as c:
        yield c


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(distributed.SCHEDULER_ENV, raising=False)


def report(*args: str) -> Any:
    result = CliRunner().invoke(main, ["report", *args, "-k", "3", "--format", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_scheduler_report_equals_the_local_report(cluster: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """report --scheduler equals the local report."""
    write_folder(tmp_path / "logs", files=12)
    local = report(str(tmp_path / "logs"), "--no-cache")
    on_cluster = report(str(tmp_path / "logs"), "--no-cache", "--scheduler", cluster.scheduler_address)
    assert local.exit_code == on_cluster.exit_code == 0
    assert on_cluster.stdout == local.stdout and on_cluster.stderr == local.stderr
    assert "part007.jsonl:121: not valid JSON" in on_cluster.stderr  # the bad line, named as locally
    monkeypatch.setenv(distributed.SCHEDULER_ENV, cluster.scheduler_address)
    asked: list[str] = []
    parse = distributed.parse_on_cluster
    monkeypatch.setattr(distributed, "parse_on_cluster", lambda *a, **kw: asked.append(a[2]) or parse(*a, **kw))
    from_env = report(str(tmp_path / "logs"), "--no-cache")
    assert from_env.stdout == local.stdout and asked == [cluster.scheduler_address]


def test_the_cache_is_kept_and_files_in_it_are_not_sent(cluster: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache is kept and cached files are not sent to the cluster."""
    files = write_folder(tmp_path / "logs", files=6)
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    load_logs([files[0], files[1]])  # two files already in the cache
    sent: list[list[str]] = []
    parse = distributed.parse_on_cluster

    def spy(todo: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append([str(f) for f in todo])
        return parse(todo, *args, **kwargs)

    monkeypatch.setattr(distributed, "parse_on_cluster", spy)
    first = load_logs([tmp_path / "logs"], scheduler=cluster.scheduler_address)
    assert sent == [[str(f) for f in files[2:]]]
    same(first, load_logs([tmp_path / "logs"], use_cache=False))

    def parse_again(path: Any, *args: Any) -> Any:
        raise AssertionError(f"{path} parsed again")

    monkeypatch.setattr(loader, "read_file", parse_again)
    again = load_logs([tmp_path / "logs"])  # every file now from the cache the cluster's parse filled
    same(again, first)


def test_files_go_to_the_cluster_in_batches_of_consecutive_files() -> None:
    """Files go to the cluster in batches of consecutive files."""
    from flaketui.loading.distributed import _batches

    sizes = [10] * 20 + [1000] + [10] * 20
    batches = _batches(sizes, 8)
    assert [i for a, b in batches for i in range(a, b)] == list(range(len(sizes)))  # each file once, in order
    assert (20, 21) in batches  # a file larger than a share is a batch alone
    assert len(batches) <= 8 + 1 and _batches([], 8) == [] and _batches([5], 8) == [(0, 1)]
