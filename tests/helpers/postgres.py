"""A real PostgreSQL server for the tests (Debian's ``postgresql`` package: ``initdb`` and
``pg_ctl``), started and stopped by a fixture. Run as root, the server runs as the ``postgres``
user (PostgreSQL refuses root), through ``runuser``. Without a server binary the tests skip.

pytest-postgresql's ``postgresql_proc`` starts ``pg_ctl`` as the current user, which root may
not be; :func:`pg_server` does what it does (initdb, pg_ctl start -w, a database per test, stop).
A test module uses the fixtures by importing them (``from tests.helpers.postgres import pg_server,
pg_url``).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def pg_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[3]))
    return Path(versions[-1]).parent if versions else None


def as_server_user() -> list[str]:
    """The prefix that runs a command as a user PostgreSQL accepts (root: ``postgres``)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root and there is no postgres user to run the server as")
    return ["runuser", "-u", "postgres", "--"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server for this module; yields its base URL (``postgresql://postgres@…:PORT``)."""
    bindir = pg_bin()
    if bindir is None:
        pytest.skip("no PostgreSQL server binary (pg_ctl): apt-get install postgresql")
    prefix = as_server_user()
    data = Path(tempfile.mkdtemp(prefix="flaketui-pg-"))
    if prefix:
        shutil.chown(data, "postgres", "postgres")
    port = free_port()
    run = lambda *args: subprocess.run([*prefix, *map(str, args)], capture_output=True, text=True,  # noqa: E731
                                       timeout=120)
    done = run(bindir / "initdb", "-D", data / "db", "-U", "postgres", "--auth=trust", "-E", "UTF8")
    assert done.returncode == 0, done.stderr
    done = run(bindir / "pg_ctl", "-D", data / "db", "-l", data / "server.log", "-w", "-t", "60",
               "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
    assert done.returncode == 0, done.stderr + (data / "server.log").read_text(errors="replace")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        run(bindir / "pg_ctl", "-D", data / "db", "-m", "fast", "-w", "stop")
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server: str, request: pytest.FixtureRequest) -> str:
    """A new, empty database on the server for each test."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:50].lower()
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(f"{pg_server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{pg_server}/{name}"
