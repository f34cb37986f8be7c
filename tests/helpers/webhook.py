"""A real HTTP server on 127.0.0.1 standing in for a webhook: it records each POST body and
answers as told (200, a 500, a stall longer than the client's read timeout, an answer dripped
a byte at a time, or a dropped connection)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Hook:
    """The server's state: how it answers next (``mode``: ``ok``, ``500``, ``stall``, ``drip``, ``drop``)
    and what it received (the bodies it answered 2xx to in ``taken``, every body in ``seen``)."""

    url: str = ""
    mode: str = "ok"
    stall: float = 2.0
    seen: list[Any] = field(default_factory=list)
    taken: list[Any] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


@contextmanager
def webhook(path: str = "/hook/T000/SECRET") -> Iterator[Hook]:
    """A webhook server on 127.0.0.1 (a free port) for the ``with`` block; its URL is ``hook.url``."""
    hook = Hook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802  (http.server's name)
            data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            doc = json.loads(data)
            hook.seen.append(doc)
            hook.paths.append(self.path)
            hook.headers.append(dict(self.headers))
            if hook.mode == "stall":
                time.sleep(hook.stall)
                return
            if hook.mode == "drip":  # a status line, then a header byte every 0.1 s for ``stall`` seconds
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                end = time.monotonic() + hook.stall
                while time.monotonic() < end:
                    try:
                        self.wfile.write(b"a")
                        self.wfile.flush()
                    except OSError:
                        return
                    time.sleep(0.1)
                return
            if hook.mode == "drop":
                self.connection.close()
                return
            status = 500 if hook.mode == "500" else 200
            if status == 200:
                hook.taken.append(doc)
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hook.url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
