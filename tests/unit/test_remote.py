"""Logs read by s3:// URL from a real S3-compatible server (moto's server mode on 127.0.0.1,
a random port, started and stopped here): every command gives the local figures, a trace
is read by one range request of exactly its bytes, the cache misses when an object
changes, and a missing extra or bucket is one line (exit 2) that never shows a secret."""

from __future__ import annotations

import csv
import gzip
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import cache, load_logs, loader, read_trial
from flaketui.model import InputError
from tests.conftest import BASELINE, CANDIDATE

pytestmark = pytest.mark.slow

moto_server = pytest.importorskip("moto.server")
pytest.importorskip("s3fs")
boto3 = pytest.importorskip("boto3")

SECRET = "s3cr3t-Never-Printed-7f31"
BUCKET = "evals"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A moto S3 server on a random port; the SDK finds it through the environment."""
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_ENDPOINT_URL", f"http://{host}:{port}")
        mp.setenv("AWS_ACCESS_KEY_ID", "AKIDFLAKETUITEST")
        mp.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
            mp.delenv(name, raising=False)
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        for path in (BASELINE, CANDIDATE):
            client.upload_file(str(path), BUCKET, f"runs/{path.name}")
        client.put_object(Bucket=BUCKET, Key="gz/oncall-baseline.jsonl.gz", Body=gzip.compress(BASELINE.read_bytes()))
        try:
            yield f"s3://{BUCKET}"
        finally:
            import s3fs

            s3fs.S3FileSystem.clear_instance_cache()
            srv.stop()


def cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert SECRET not in result.output and SECRET not in result.stderr
    return result


def test_report_of_a_folder_a_file_and_a_glob_equals_the_local_report(server: str) -> None:
    """report on an S3 folder, file or glob equals the local report."""
    local = cli("report", str(BASELINE.parent), "-k", "5", "--format", "json")
    assert local.exit_code == 0
    for url in (f"{server}/runs/", f"{server}/runs", f"{server}/runs/*.jsonl", f"{server}/runs/oncall-*.jsonl"):
        remote = cli("report", url, "-k", "5", "--format", "json")
        assert remote.exit_code == 0, remote.output
        assert remote.stdout == local.stdout, url
    one = cli("report", f"{server}/runs/{BASELINE.name}", "-k", "5", "--format", "json")
    assert one.stdout == cli("report", str(BASELINE), "-k", "5", "--format", "json").stdout


def test_a_gzip_object_is_read_as_the_plain_file(server: str) -> None:
    """A gzipped object reads as the plain file."""
    remote = cli("report", f"{server}/gz/oncall-baseline.jsonl.gz", "-k", "5", "--format", "json")
    assert remote.exit_code == 0
    assert remote.stdout == cli("report", str(BASELINE), "-k", "5", "--format", "json").stdout


def test_compare_and_gate_give_the_local_figures(server: str) -> None:
    """compare and gate on S3 objects give the local figures."""
    a, b = f"{server}/runs/{BASELINE.name}", f"{server}/runs/{CANDIDATE.name}"
    remote = cli("compare", a, b, "--format", "json")
    local = cli("compare", str(BASELINE), str(CANDIDATE), "--format", "json")
    assert remote.exit_code == local.exit_code == 0 and remote.stdout == local.stdout
    gate = ("-k", "5", "--min-pass-hat-k", "0.7", "--max-flakiness", "0.2", "--format", "json")
    remote = cli("gate", a, *gate)
    local = cli("gate", str(BASELINE), *gate)
    assert remote.exit_code == local.exit_code and remote.stdout == local.stdout
    strict = ("-k", "5", "--min-pass-hat-k", "0.99", "--max-flakiness", "0.2")
    assert cli("gate", a, *strict).exit_code == cli("gate", str(BASELINE), *strict).exit_code == 1


def test_export_rows_equal_the_local_ones_and_name_the_url(server: str) -> None:
    """export from a bucket gives the local rows, sources named by URL."""
    remote = cli("export", f"{server}/runs/", "--format", "csv", "--out", "-")
    local = cli("export", str(BASELINE.parent), "--format", "csv", "--out", "-")
    assert remote.exit_code == local.exit_code == 0
    rows_r = list(csv.DictReader(io.StringIO(remote.stdout)))
    rows_l = list(csv.DictReader(io.StringIO(local.stdout)))
    assert len(rows_r) == len(rows_l) > 0
    assert {r["source"] for r in rows_r} == {f"{server}/runs/{BASELINE.name}", f"{server}/runs/{CANDIDATE.name}"}
    drop = ("source",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in rows_r] == \
        [{k: v for k, v in r.items() if k not in drop} for r in rows_l]


def test_a_trace_is_read_by_one_range_request_of_its_own_bytes(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace is read by one range request of its own bytes."""
    import s3fs

    log = load_logs([f"{server}/runs/{BASELINE.name}"], use_cache=False)
    asked: list[tuple[str, int, int]] = []
    fetch = s3fs.core.S3File._fetch_range

    def counted(self: Any, start: int, end: int) -> bytes:
        asked.append((self.path, start, end))
        return fetch(self, start, end)

    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", counted)
    row = 137
    trial = read_trial(log, row)
    offset, length = int(log.offset[row]), int(log.length[row])
    assert asked == [(f"{BUCKET}/runs/{BASELINE.name}", offset, offset + length)]
    assert trial.trace and trial.location == f"{server}/runs/{BASELINE.name}:{int(log.line[row])}"
    local = load_logs([BASELINE], use_cache=False)
    assert read_trial(local, row).trace == trial.trace


def test_the_cache_is_used_while_the_object_is_the_same_and_missed_when_it_changes(
        server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index cache serves an unchanged object and is missed once it changes."""
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    parsed: list[str] = []
    read_file = loader.read_file

    def counting(path: Any, *args: Any) -> Any:
        parsed.append(str(path))
        return read_file(path, *args)

    monkeypatch.setattr(loader, "read_file", counting)
    url = f"{server}/changing/log.jsonl"
    body = BASELINE.read_bytes()
    client = boto3.client("s3")
    client.put_object(Bucket=BUCKET, Key="changing/log.jsonl", Body=body)
    first = load_logs([url])
    second = load_logs([url])
    assert parsed == [url] and len(first) == len(second) > 0
    assert (second.outcome == first.outcome).all()
    # the same size, one outcome flipped: a new ETag, so the entry is not used
    changed = body.replace(b'"passed": true', b'"passed": 0   ', 1)  # 0 and blanks: valid JSON
    assert len(changed) == len(body) and changed != body
    client.put_object(Bucket=BUCKET, Key="changing/log.jsonl", Body=changed)
    third = load_logs([url])
    assert parsed == [url, url]
    assert int((third.outcome != first.outcome).sum()) == 1


def test_a_damaged_cache_entry_of_an_object_is_parsed_again(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged cache entry of an object is parsed again."""
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    url = f"{server}/runs/{CANDIDATE.name}"
    first = load_logs([url])
    (entry,) = cache.cache_dir().glob("*.idx")
    data = bytearray(entry.read_bytes())
    data[-9] ^= 0xFF  # a flipped bit in a column: the checksum no longer matches
    entry.write_bytes(bytes(data))
    assert cache.load(loader.location.RemotePath(url), loader.location.RemotePath(url).stat(), first.fields) is None
    again = load_logs([url])
    assert (again.outcome == first.outcome).all() and (again.offset == first.offset).all()


def test_a_missing_extra_is_one_line_naming_it(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without s3fs an s3:// log is one line naming the extra, exit 2."""
    monkeypatch.setitem(sys.modules, "s3fs", None)
    result = cli("report", f"{server}/runs/")
    assert result.exit_code == 2
    assert result.stderr == ("flaketui: error: reading s3:// URLs needs the s3 extra: "
                             "pip install 'flaketui[s3]'\n")


def test_a_missing_bucket_or_object_is_one_line(server: str) -> None:
    """A missing bucket, object or glob match is one line, exit 2."""
    for url in ("s3://no-such-bucket-here/runs/", f"{server}/nothing/here.jsonl", f"{server}/runs/*.nope"):
        result = cli("report", url)
        assert result.exit_code == 2, url
        assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"flaketui: error: {url}: ")


def test_a_refused_request_names_the_fault_but_not_the_secret(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused connection names the fault but never the secret key."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    try:
        result = cli("report", f"{server}/runs/")
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"flaketui: error: {server}/runs/: ")


def test_watch_refuses_a_url(server: str) -> None:
    """--watch on a URL is refused: it follows local files only."""
    result = cli("report", f"{server}/runs/", "--watch")
    assert result.exit_code == 2 and "--watch follows local files only" in result.stderr


def test_load_logs_raises_input_error_for_a_missing_object(server: str) -> None:
    """load_logs raises InputError for a missing object."""
    with pytest.raises(InputError, match="no such object"):
        load_logs([f"{server}/runs/missing.jsonl"])
    assert os.environ["AWS_SECRET_ACCESS_KEY"] == SECRET


def test_a_store_error_quoting_a_secret_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store's error message quoting the secret is masked."""
    from flaketui.loading.location import clean_message

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    assert clean_message(f"SignatureDoesNotMatch:\n key {SECRET} rejected") == "SignatureDoesNotMatch: key *** rejected"


@pytest.mark.ui
async def test_the_app_opens_an_s3_log_and_shows_a_trace(server: str) -> None:
    """The app opens an S3 log and shows a trace read from the bucket."""
    from flaketui.app.app import make_app
    from flaketui.app.screens.traces import TaskTraceScreen
    from flaketui.app.widgets.task_table import TaskTable
    from flaketui.app.widgets.trace_view import TraceDiffView
    from tests.conftest import SIZE

    app = make_app([f"{server}/runs/{BASELINE.name}"], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.tasks_screen.query_one(TaskTable)
        assert table.row_text(0)[0] == "searchRunbook"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TaskTraceScreen) and screen.task_name == "searchRunbook"
        view = screen.query_one(TraceDiffView)
        assert view.a is not None and view.a.passed and view.a.trace
        assert view.b is not None and not view.b.passed and view.b.trace
        assert view.first_divergence == 4  # the agent's first different action (actions mode)


def test_a_parquet_table_of_s3_logs_reads_back_by_url_and_opens_traces_there(
        server: str, tmp_path: Path) -> None:
    """A Parquet table exported from S3 logs reads back and opens traces by URL."""
    pytest.importorskip("pyarrow")
    table = tmp_path / "trials.parquet"
    assert cli("export", f"{server}/runs/", "--out", str(table)).exit_code == 0
    boto3.client("s3").upload_file(str(table), BUCKET, "tables/trials.parquet")
    url = f"{server}/tables/trials.parquet"
    expected = cli("report", f"{server}/runs/", "-k", "5", "--format", "json").stdout
    for source in (str(table), url):
        assert cli("report", source, "-k", "5", "--format", "json").stdout == expected, source
    log = load_logs([url], use_cache=False)
    direct = load_logs([f"{server}/runs/"], use_cache=False)
    row = int(((log.task == log.tasks.index("searchRunbook")) & (log.trial == 3)
               & (log.run == log.runs.index("oncall-baseline"))).argmax())
    other = int(((direct.task == direct.tasks.index("searchRunbook")) & (direct.trial == 3)
                 & (direct.run == direct.runs.index("oncall-baseline"))).argmax())
    assert read_trial(log, row).trace == read_trial(direct, other).trace


DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.mark.parametrize(("folder", "flags"), [
    ("tau2", ()), ("tau2/dir_format_voice_retail", ()), ("terminal_bench", ()),
    ("terminal_bench/20250829_goose_claude-4-sonnet", ("--runs-as-trials",)), ("lm_eval", ()), ("otel", ()),
])
def test_every_format_reads_the_same_from_a_bucket(server: str, folder: str, flags: tuple[str, ...]) -> None:
    """Every bundled format reads the same from a bucket as from disk."""
    client = boto3.client("s3")
    for path in sorted((DATA / folder).rglob("*")):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"data/{path.relative_to(DATA)}")
    local = cli("report", str(DATA / folder), *flags, "--format", "json")
    remote = cli("report", f"{server}/data/{folder}/", *flags, "--format", "json")
    assert local.exit_code == 0 and remote.exit_code == 0, remote.stderr
    assert without_run_files(remote.stdout) == without_run_files(local.stdout)
    assert remote.stderr == local.stderr.replace(str(DATA) + "/", f"{server}/data/")


def without_run_files(out: str) -> dict:
    """A report's JSON without what a run's own side files give (its ``meta`` and the harness's
    ``published`` figures: ``run_metadata.json`` and the run-level summary are read beside local
    logs only), the trials' figures whole."""
    doc = orjson.loads(out)
    for run in doc["runs"]:
        run.pop("meta", None)
        run.pop("published", None)
    return doc


def test_an_inspect_log_reads_the_same_from_a_bucket(server: str) -> None:
    """An Inspect log reads the same from a bucket as from disk."""
    pytest.importorskip("inspect_ai")
    from tests.conftest import SHARED

    log = SHARED / "realdata" / "inspect-ai" / "log_streaming.eval"
    if not log.exists():
        pytest.skip("the shared Inspect AI sample is not beside this checkout")
    boto3.client("s3").upload_file(str(log), BUCKET, f"inspect/{log.name}")
    url = f"{server}/inspect/{log.name}"
    remote = cli("report", url, "--format", "json")
    assert remote.exit_code == 0, remote.stderr
    assert remote.stdout == cli("report", str(log), "--format", "json").stdout
    loaded = load_logs([url], use_cache=False)
    assert read_trial(loaded, 0).trace == read_trial(load_logs([log], use_cache=False), 0).trace


def test_an_object_that_fails_mid_read_is_named_and_the_others_read(
        server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An object failing mid-read is named and the others still read."""
    import s3fs

    fetch = s3fs.core.S3File._fetch_range

    def failing(self: Any, start: int, end: int) -> bytes:
        if self.path.endswith(CANDIDATE.name) and end - start > 256:  # past the head formats look at
            raise RuntimeError(f"connection reset (key {SECRET})")
        return fetch(self, start, end)

    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", failing)
    result = cli("report", f"{server}/runs/", "-k", "5", "--format", "json", "--no-cache")
    assert result.exit_code == 0
    assert result.stderr == (f"flaketui: skipped {server}/runs/{CANDIDATE.name}: cannot read it "
                             "(RuntimeError: connection reset (key ***)); skipped\n")
    assert result.stdout == cli("report", str(BASELINE), "-k", "5", "--format", "json").stdout


def test_a_load_streams_each_object_once_and_asks_its_size_twice(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load streams each object once and asks its size no more than twice."""
    import s3fs

    from flaketui.loading.location import RemotePath

    fetched: list[tuple[int, int]] = []
    infos: list[str] = []
    fs = RemotePath(server).fs  # the filesystem every URL of this server is read through
    fetch, info = s3fs.core.S3File._fetch_range, fs.info

    def counted_fetch(self: Any, start: int, end: int) -> bytes:
        fetched.append((start, end))
        return fetch(self, start, end)

    def counted_info(path: str, *args: Any, **kwargs: Any) -> Any:
        infos.append(path)
        return info(path, *args, **kwargs)

    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", counted_fetch)
    monkeypatch.setattr(fs, "info", counted_info)
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    size = BASELINE.stat().st_size
    load_logs([f"{server}/runs/{BASELINE.name}"])
    # the first bytes (which format is it?), then the whole object once; the size and
    # identity asked before the read and again before the index is cached
    assert fetched == [(0, 256), (0, size)]
    assert infos == [f"{BUCKET}/runs/{BASELINE.name}"] * 3  # the URL itself, then twice


def test_a_trace_of_an_object_rewritten_since_the_load_is_refused_not_misread(server: str) -> None:
    """A trace of an object rewritten since the load is refused, not misread."""
    client = boto3.client("s3")
    client.put_object(Bucket=BUCKET, Key="rewritten/log.jsonl", Body=BASELINE.read_bytes())
    log = load_logs([f"{server}/rewritten/log.jsonl"], use_cache=False)
    client.put_object(Bucket=BUCKET, Key="rewritten/log.jsonl", Body=CANDIDATE.read_bytes())
    with pytest.raises(OSError, match="rewritten/log.jsonl"):  # s3fs's FileExpired: the ETag moved
        read_trial(log, 5)
