"""``--timeout`` reaches every remote store in the words of its filesystem package, and the
load's deadline stops new requests on every store: the options built for gcsfs (``gs://``)
and adlfs (``az://``) are checked as built, and against the packages' constructors where
they are installed; the deadline on fsspec's in-memory filesystem (no server needed)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import fsspec
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import location
from flaketui.loading.options import LoadOptions, in_effect

aiohttp = pytest.importorskip("aiohttp")


@pytest.fixture
def timeout() -> Iterator[Callable[[float], object]]:
    """Puts ``--timeout SECONDS`` in effect for the rest of the test, as the loader does for a load."""
    with contextlib.ExitStack() as stack:
        yield lambda seconds: stack.enter_context(in_effect(LoadOptions(timeout=seconds)))


def _same_limit(limit: object, seconds: float) -> None:
    assert isinstance(limit, aiohttp.ClientTimeout)
    assert (limit.sock_connect, limit.sock_read) == (seconds, seconds)
    assert limit.total == location.DEADLINE_FACTOR * seconds


@pytest.mark.parametrize("protocol", ["gs", "gcs"])
def test_gcs_requests_carry_the_connect_and_read_timeouts(protocol: str, timeout: Callable[[float], object]) -> None:
    """gcsfs passes ``requests_timeout`` to every request, where aiohttp takes ``None`` (its
    default) as no timeout at all: the limit is set there, and on the session it opens."""
    timeout(7.0)
    options = location._storage_options(protocol)
    _same_limit(options["requests_timeout"], 7.0)
    _same_limit(options["session_kwargs"]["timeout"], 7.0)
    assert options["session_kwargs"]["trace_configs"], "no deadline check before each request"


@pytest.mark.parametrize("protocol", ["az", "abfs", "abfss"])
@pytest.mark.parametrize(("seconds", "whole"), [(30.0, 30), (0.25, 1), (2.5, 3)])
def test_azure_reads_carry_the_connect_and_read_timeouts(protocol: str, seconds: float, whole: int,
                                                         timeout: Callable[[float], object]) -> None:
    """adlfs takes whole seconds: a fraction is rounded up, never down to no time at all."""
    timeout(seconds)
    assert location._storage_options(protocol) == {"connection_timeout": whole, "read_timeout": whole}


def test_http_and_s3_keep_their_timeouts(timeout: Callable[[float], object]) -> None:
    """HTTP and S3 options carry the timeout."""
    timeout(4.0)
    _same_limit(location._storage_options("https")["client_kwargs"]["timeout"], 4.0)
    assert location._storage_options("s3")["config_kwargs"] == {"connect_timeout": 4.0, "read_timeout": 4.0}


def test_gcsfs_takes_the_options(timeout: Callable[[float], object]) -> None:
    """gcsfs's constructor takes the options built for it."""
    gcsfs = pytest.importorskip("gcsfs")
    timeout(5.0)
    fs = gcsfs.GCSFileSystem(token="anon", skip_instance_cache=True, **location._storage_options("gs"))
    _same_limit(fs.requests_timeout, 5.0)
    _same_limit(fs.session_kwargs["timeout"], 5.0)


def test_adlfs_takes_the_options(timeout: Callable[[float], object]) -> None:
    """adlfs's constructor takes the options built for it."""
    adlfs = pytest.importorskip("adlfs")
    timeout(5.0)
    fs = adlfs.AzureBlobFileSystem(account_name="flaketuitest", anon=True, skip_instance_cache=True,
                                   **location._storage_options("az"))
    assert fs._timeout_kwargs == {"connection_timeout": 5, "read_timeout": 5}


@pytest.fixture
def memory_log() -> Iterator[str]:
    """A log on fsspec's in-memory filesystem, as a URL."""
    fs = fsspec.filesystem("memory")
    fs.pipe("/flaketui-deadline/run.jsonl", b'{"task": "a", "passed": true}\n')
    yield "memory://flaketui-deadline/run.jsonl"
    fs.rm("/flaketui-deadline", recursive=True)


def test_past_the_deadline_no_store_is_asked_again(memory_log: str) -> None:
    """Stores without a hook before each request (botocore, azure) still stop at the
    deadline: looking a file up or opening it past it is a timeout naming the deadline."""
    remote = location.RemotePath(memory_log)
    assert remote.stat().st_size > 0
    with location.deadline(0.01):
        time.sleep(0.05)
        with pytest.raises(OSError, match="deadline"):
            remote.stat()
        with pytest.raises(OSError, match="deadline"):
            location.open_binary(remote).close()
    assert remote.stat().st_size > 0  # the deadline belongs to the load that set it


def test_a_load_past_its_deadline_is_one_line(memory_log: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load past its deadline is one line."""
    monkeypatch.setattr(location, "DEADLINE_FACTOR", 0)
    result = CliRunner().invoke(main, ["report", memory_log, "--no-cache"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "deadline" in result.stderr
