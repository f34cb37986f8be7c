"""Logs read by http:// URL from a real web server (aiohttp's, serving a folder on 127.0.0.1,
a random port, started and stopped here): the report is the local one, a trace is read by
one range request of exactly its bytes, the cache misses when the file changes, and a
missing object is one line (exit 2)."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import cache, load_logs, loader, read_trial
from tests.conftest import BASELINE, CANDIDATE

pytestmark = pytest.mark.slow

web = pytest.importorskip("aiohttp.web")
pytest.importorskip("fsspec.implementations.http")


class Server:
    """An aiohttp server of ``root``'s files in a thread of its own, noting each request
    (method, path, Range header)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.asked: list[tuple[str, str, str | None]] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.url = ""

    @web.middleware
    async def note(self, request: Any, handler: Any) -> Any:
        self.asked.append((request.method, request.path, request.headers.get("Range")))
        return await handler(request)

    async def _start(self) -> None:
        app = web.Application(middlewares=[self.note])
        app.router.add_static("/", self.root)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        host, port = self.runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    def start(self) -> None:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(timeout=30)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("served")
    for path in (BASELINE, CANDIDATE):
        shutil.copy(path, root / path.name)
    srv = Server(root)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_the_report_of_a_url_is_the_local_report(server: Server) -> None:
    """report on http:// URLs equals the local report."""
    remote = cli("report", f"{server.url}/{BASELINE.name}", f"{server.url}/{CANDIDATE.name}",
                 "-k", "5", "--format", "json")
    local = cli("report", str(BASELINE), str(CANDIDATE), "-k", "5", "--format", "json")
    assert remote.exit_code == 0 and remote.stdout == local.stdout


def test_a_trace_is_read_by_one_range_request_of_its_own_bytes(server: Server) -> None:
    """A trace is read by one range request of its own bytes."""
    url = f"{server.url}/{BASELINE.name}"
    log = load_logs([url], use_cache=False)
    row = 137
    server.asked.clear()
    trial = read_trial(log, row)
    offset, length = int(log.offset[row]), int(log.length[row])
    gets = [a for a in server.asked if a[0] == "GET"]
    assert gets == [("GET", f"/{BASELINE.name}", f"bytes={offset}-{offset + length - 1}")]
    assert trial.trace and trial.location == f"{url}:{int(log.line[row])}"
    assert read_trial(load_logs([BASELINE], use_cache=False), row).trace == trial.trace


def test_the_cache_is_used_while_the_file_is_the_same_and_missed_when_it_changes(
        server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index cache serves an unchanged file and is missed once it changes."""
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    parsed: list[str] = []
    read_file = loader.read_file

    def counting(path: Any, *args: Any) -> Any:
        parsed.append(str(path))
        return read_file(path, *args)

    monkeypatch.setattr(loader, "read_file", counting)
    served = server.root / "changing.jsonl"
    body = BASELINE.read_bytes()
    served.write_bytes(body)
    url = f"{server.url}/changing.jsonl"
    first = load_logs([url])
    second = load_logs([url])
    assert parsed == [url] and len(first) == len(second) > 0
    # the same size, one outcome flipped, a later time: a new ETag, so the entry is not used
    changed = body.replace(b'"passed": true', b'"passed": 0   ', 1)  # 0 and blanks: valid JSON
    assert len(changed) == len(body) and changed != body
    served.write_bytes(changed)
    stamp = served.stat().st_mtime_ns + 2_000_000_000
    os.utime(served, ns=(stamp, stamp))
    third = load_logs([url])
    assert parsed == [url, url]
    assert int((third.outcome != first.outcome).sum()) == 1


def test_a_missing_object_is_one_line(server: Server) -> None:
    """A missing object is one line, exit 2."""
    for url in (f"{server.url}/nothing/here.jsonl", f"{server.url}/"):
        result = cli("report", url)
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"flaketui: error: {url}: ")
