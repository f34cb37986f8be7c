"""Hostile web servers (real aiohttp servers on 127.0.0.1, started here): one that sends its
headers and stalls, one that trickles bytes just inside the read timeout, one that declares
a terabyte, and URLs carrying a password or a presigned signature. Each ends in bounded time
with one line naming the URL (exit 2), and no credential of a URL appears in any output."""

from __future__ import annotations

import asyncio
import csv
import io
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import location
from flaketui.sanitize import mask_url
from tests.conftest import BASELINE

pytestmark = pytest.mark.slow

web = pytest.importorskip("aiohttp.web")
pytest.importorskip("fsspec.implementations.http")

Handler = Callable[[Any], Awaitable[Any]]
SIGNATURE = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
CREDENTIAL = "AKIAIOSFODNN7EXAMPLE%2F20240101%2Fus-east-1%2Fs3%2Faws4_request"
TOKEN = "FQoGZXIvYXdzEXAMPLETOKEN"
PASSWORD = "hunter2secret"
PRESIGNED = (f"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={CREDENTIAL}&X-Amz-Date=20240101T000000Z"
             f"&X-Amz-Expires=3600&X-Amz-Security-Token={TOKEN}&X-Amz-SignedHeaders=host"
             f"&X-Amz-Signature={SIGNATURE}")
SECRETS = (SIGNATURE, "AKIAIOSFODNN7EXAMPLE", TOKEN, PASSWORD)


class Hostile:
    """An aiohttp server in a thread of its own whose routes are the handlers given; each
    request is noted (method, path, Range header)."""

    def __init__(self, routes: dict[str, Handler]) -> None:
        self.routes = routes
        self.asked: list[tuple[str, str, str | None]] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.url = ""

    async def _start(self) -> None:
        app = web.Application()
        for path, handler in self.routes.items():
            app.router.add_route("*", path, self._noted(handler))
        self.runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        host, port = self.runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    def _noted(self, handler: Handler) -> Handler:
        async def noted(request: Any) -> Any:
            self.asked.append((request.method, request.path, request.headers.get("Range")))
            return await handler(request)
        return noted

    def __enter__(self) -> Hostile:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(timeout=30)
        return self

    def __exit__(self, *_: object) -> None:
        for task in asyncio.all_tasks(self.loop):  # the stalled handlers
            self.loop.call_soon_threadsafe(task.cancel)
        try:
            asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(timeout=30)
        except Exception:  # noqa: BLE001 - a cancelled handler: the server is gone either way
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)


def stalling(size: int) -> Handler:
    """HEAD answered at once (``size`` bytes); GET sends its headers, then nothing for 10 minutes."""
    async def handler(request: Any) -> Any:
        headers = {"Content-Length": str(size), "Accept-Ranges": "bytes", "ETag": '"e1"'}
        if request.method == "HEAD":
            return web.Response(headers=headers)
        response = web.StreamResponse(status=200, headers=headers)
        await response.prepare(request)
        await asyncio.sleep(600)
        return response
    return handler


def trickling(line: bytes, every: float) -> Handler:
    """HEAD says 1 GB; GET sends ``line`` every ``every`` seconds, for 10 minutes."""
    async def handler(request: Any) -> Any:
        headers = {"Content-Length": str(10**9), "Accept-Ranges": "bytes", "ETag": '"e2"'}
        if request.method == "HEAD":
            return web.Response(headers=headers)
        response = web.StreamResponse(status=206 if request.headers.get("Range") else 200, headers=headers)
        await response.prepare(request)
        for _ in range(int(600 / every)):
            await response.write(line)
            await asyncio.sleep(every)
        return response
    return handler


def terabyte(request: Any) -> Awaitable[Any]:
    """Declares 10**12 bytes of JSON; a range is answered, a whole GET streams (up to 64 MB)."""
    async def handler() -> Any:
        size = 10**12
        headers = {"Content-Length": str(size), "Accept-Ranges": "bytes", "ETag": '"e3"'}
        if request.method == "HEAD":
            return web.Response(headers=headers)
        wanted = request.headers.get("Range")
        if wanted:
            start, end = (int(x) for x in wanted.split("=")[1].split("-"))
            body = (b"[" + b" " * (end - start))[: end - start + 1]
            return web.Response(status=206, body=body, headers={
                "Content-Range": f"bytes {start}-{end}/{size}", "ETag": '"e3"'})
        response = web.StreamResponse(status=200, headers=headers)
        await response.prepare(request)
        for _ in range(64):
            await response.write(b" " * (1 << 20))
        return response
    return handler()


def served_file(path: Path) -> Handler:
    """A file served with ranges (aiohttp's FileResponse), whatever the query string."""
    async def handler(request: Any) -> Any:
        return web.FileResponse(path)
    return handler


async def refused(request: Any) -> Any:
    """Every request refused (403), as a store refuses an expired signature."""
    return web.Response(status=403, text="SignatureDoesNotMatch")


def run_cli(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, killed after ``timeout`` s (a hang fails the test
    rather than stopping the suite)."""
    return subprocess.run([sys.executable, "-m", "flaketui", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def one_line_error(result: Any, url: str) -> str:
    err = result.stderr
    code = result.returncode if isinstance(result, subprocess.CompletedProcess) else result.exit_code
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("flaketui: error: ") and url in err, err
    return err


def test_a_server_that_stalls_after_its_headers_is_a_timeout_not_a_hang() -> None:
    """A server that stalls after its headers is a timeout, not a hang."""
    with Hostile({"/stall.jsonl": stalling(1000)}) as srv:
        url = f"{srv.url}/stall.jsonl"
        start = time.monotonic()
        result = run_cli("report", url, "--timeout", "1", "--no-cache")
        took = time.monotonic() - start
    err = one_line_error(result, url)
    assert "timed out" in err and "--timeout" in err
    assert took < 30


def test_the_default_timeout_is_documented_and_a_bad_one_refused() -> None:
    """The default timeout is in --help and a bad one is refused."""
    result = CliRunner().invoke(main, ["report", "--help"])
    assert "--timeout SECONDS" in result.stdout and "30.0" in result.stdout
    assert "--max-bytes BYTES" in result.stdout and str(2 << 30) in result.stdout
    for bad in ("0", "-1", "nan"):
        refused_run = CliRunner().invoke(main, ["report", str(BASELINE), "--timeout", bad])
        assert refused_run.exit_code == 2 and "--timeout" in refused_run.stderr


def test_a_trickling_server_is_stopped_by_the_load_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes every 0.2 s never trip a 1 s read timeout; the load's deadline (here 3 × 1 s) does."""
    monkeypatch.setattr(location, "DEADLINE_FACTOR", 3)
    line = b'{"run": "r", "task": "t", "trial": 0, "passed": true}\n'
    with Hostile({"/slow.jsonl": trickling(line, 0.2)}) as srv:
        url = f"{srv.url}/slow.jsonl"
        start = time.monotonic()
        result = CliRunner().invoke(main, ["report", url, "--timeout", "1", "--no-cache"])
        took = time.monotonic() - start
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    err = one_line_error(result, url)
    assert "timed out" in err
    assert took < 20


def test_a_whole_file_format_declaring_a_terabyte_is_refused_before_it_is_read() -> None:
    """A whole-file log declaring a terabyte is refused before it is read."""
    with Hostile({"/big.json": terabyte}) as srv:
        url = f"{srv.url}/big.json"
        result = run_cli("report", url, "--no-cache")
        whole = [a for a in srv.asked if a[0] == "GET" and a[2] is None]
        ranges = [a for a in srv.asked if a[0] == "GET" and a[2] is not None]
    err = one_line_error(result, url)
    assert "1000000000000 bytes" in err and "--max-bytes" in err
    assert whole == []  # never asked for the body
    assert all(int(r.split("-")[1]) < 1 << 16 for _, _, r in ranges if r)


def test_max_bytes_is_the_cap(tmp_path: Path) -> None:
    """A .json array under the cap loads; the same file over a smaller --max-bytes is refused."""
    log = tmp_path / "small.json"
    log.write_text('[{"task": "a", "passed": true}, {"task": "a", "passed": false}]')
    with Hostile({"/small.json": served_file(log)}) as srv:
        url = f"{srv.url}/small.json"
        ok = CliRunner().invoke(main, ["report", url, "--format", "json", "--no-cache"])
        small = CliRunner().invoke(main, ["report", url, "--max-bytes", "10", "--no-cache"])
    assert ok.exit_code == 0, ok.stderr
    err = one_line_error(small, url)
    assert "--max-bytes" in err


def test_jsonl_is_streamed_and_not_capped(tmp_path: Path) -> None:
    """JSON Lines is streamed, not capped by --max-bytes."""
    with Hostile({"/base.jsonl": served_file(BASELINE)}) as srv:
        result = CliRunner().invoke(main, ["report", f"{srv.url}/base.jsonl", "--max-bytes", "10",
                                           "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.stderr


def no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, (secret, text)


def test_a_password_in_a_url_is_never_printed() -> None:
    """A password in a URL is never printed."""
    with Hostile({"/runs/{name}": refused}) as srv:
        host = srv.url.split("://", 1)[1]
        url = f"http://alice:{PASSWORD}@{host}/runs/log.jsonl"
        result = CliRunner().invoke(main, ["report", url, "--no-cache"])
        missing = CliRunner().invoke(main, ["report", f"http://{PASSWORD}@{host}/nothing.jsonl", "--no-cache"])
    assert result.exit_code == 2 and missing.exit_code == 2
    no_secret(result.stderr + result.stdout + missing.stderr + missing.stdout)
    assert f"http://***@{host}/runs/log.jsonl" in result.stderr


def test_a_refused_presigned_url_is_named_without_its_signature() -> None:
    """A refused presigned URL is named without its signature."""
    with Hostile({"/runs/{name}": refused}) as srv:
        url = f"{srv.url}/runs/log.jsonl?{PRESIGNED}"
        result = CliRunner().invoke(main, ["report", url, "--no-cache"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    no_secret(result.stderr)
    assert "X-Amz-Signature=***" in result.stderr


def test_a_presigned_url_gives_no_secret_to_the_run_name_or_the_export(tmp_path: Path) -> None:
    """A presigned URL gives no secret to the run name or the export."""
    with Hostile({"/runs/{name}": served_file(BASELINE)}) as srv:
        url = f"{srv.url}/runs/{BASELINE.name}?{PRESIGNED}"
        report = CliRunner().invoke(main, ["report", url, "--format", "json", "--no-cache"])
        table = CliRunner().invoke(main, ["report", url, "--no-cache"])
        export = CliRunner().invoke(main, ["export", url, "--format", "csv", "--out", "-", "--no-cache"])
    assert report.exit_code == 0 and table.exit_code == 0 and export.exit_code == 0, report.stderr
    for out in (report, table, export):
        no_secret(out.stdout + out.stderr)
    assert f'"{BASELINE.name.split(".")[0]}"' in report.stdout  # the run is named by the file
    sources = {row["source"] for row in csv.DictReader(io.StringIO(export.stdout))}
    assert sources == {mask_url(url)} and "X-Amz-Signature=***" in mask_url(url)


def test_a_url_without_secrets_stays_readable_in_the_export(tmp_path: Path) -> None:
    """Credentials given by the environment leave the URL whole: the source column reads it again."""
    with Hostile({"/runs/{name}": served_file(BASELINE)}) as srv:
        url = f"{srv.url}/runs/{BASELINE.name}?versionId=3"
        export = CliRunner().invoke(main, ["export", url, "--format", "csv", "--out", "-", "--no-cache"])
        sources = {row["source"] for row in csv.DictReader(io.StringIO(export.stdout))}
        again = CliRunner().invoke(main, ["report", *sources, "--format", "json", "--no-cache"])
    assert sources == {url} and again.exit_code == 0


@pytest.mark.parametrize(("url", "masked"), [
    ("https://u:p@h/a.jsonl", "https://***@h/a.jsonl"),
    ("https://tok@h:8/a", "https://***@h:8/a"),
    ("s3://bucket/runs/a.jsonl", "s3://bucket/runs/a.jsonl"),
    ("https://h/a?sv=2020&sig=abc%2Bd&se=1#x", "https://h/a?sv=2020&sig=***&se=1#x"),
    ("https://h/a?Signature=s&Key-Pair-Id=k&Expires=1", "https://h/a?Signature=***&Key-Pair-Id=k&Expires=1"),
    ("https://h/a?X-Goog-Signature=s&X-Goog-Credential=c", "https://h/a?X-Goog-Signature=***&X-Goog-Credential=***"),
    ("https://h/a?token=t&api_key=k&key=v&keyword=w", "https://h/a?token=***&api_key=***&key=***&keyword=w"),
    ("error at 'https://u:p@h/x?sig=1' (403)", "error at 'https://***@h/x?sig=***' (403)"),
    ("no url here: user:pass@host", "no url here: user:pass@host"),
])
def test_mask_url(url: str, masked: str) -> None:
    """mask_url masks credentials and signatures, and is idempotent."""
    assert mask_url(url) == masked
    assert mask_url(masked) == masked


def test_the_remote_sidecar_name_has_no_secret() -> None:
    """A remote log's triage file name has no secret."""
    from flaketui.triage.store import remote_sidecar_name

    url = f"https://alice:{PASSWORD}@h/runs/log.jsonl?{PRESIGNED}"
    name = remote_sidecar_name(url)
    no_secret(name)
    assert name.startswith("log.jsonl-") and name.endswith(".triage.json")
    resigned = url.replace(SIGNATURE, "f" * 64)
    assert remote_sidecar_name(resigned) == name  # a link signed anew finds the same notes
    assert remote_sidecar_name("https://h/runs/other.jsonl") != name
