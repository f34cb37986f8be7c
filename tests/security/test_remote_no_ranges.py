"""A remote log on an HTTP server that ignores ``Range`` (Python's own ``http.server``, which
answers every request with the whole file): the report, its page and its causes read each trial
back from the start of the file instead of ending in fsspec's error."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.cli import run

pytest.importorskip("fsspec.implementations.http")
pytest.importorskip("aiohttp")


class Quiet(http.server.SimpleHTTPRequestHandler):
    """Serves a folder, whole files only (no Range support), without logging."""

    def log_message(self, *_: object) -> None:
        """Nothing on stderr."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """The bundled demo logs (plain and gzipped) on a server without Range support."""
    demo = ROOT / "flaketui" / "demo" / "oncall-baseline.jsonl.gz"
    shutil.copy(demo, tmp_path / "log.jsonl.gz")
    import gzip

    (tmp_path / "log.jsonl").write_bytes(gzip.decompress(demo.read_bytes()))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["log.jsonl", "log.jsonl.gz"])
@pytest.mark.parametrize("args", [["--format", "html"], ["--causes"]])
def test_server_without_ranges(server: str, name: str, args: list[str]) -> None:
    """report --format html and --causes on a server that ignores Range: exit 0, no traceback."""
    code, out, err = run("report", f"{server}/{name}", *args, "--no-cache")
    assert code == 0, err
    assert out


def test_skip_then_read_reads_the_span() -> None:
    """The span read from a stream that cannot seek is the span read by seeking."""
    import io

    from flaketui.loading import location

    data = bytes(range(256)) * 10_000
    assert location.skip_then_read(io.BytesIO(data), 1_500_000, 300) == data[1_500_000:1_500_300]
    assert location.skip_then_read(io.BytesIO(data), len(data) + 5, 10) == b""
