"""A Parquet trial table is data: its ``source`` column is
followed only inside the table's own folder (or a ``--sources-root``), never to a secret
beside it, a URL, itself, another table or a device; ``length`` is bounded; a table whose
metadata declares a bomb of rows, or whose columns have hostile types, is one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from flaketui.loading import load_logs, location, read_trial
from flaketui.model import InputError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SECRET = b'{"task": "t", "passed": 1, "api_key": "SECRET-KEY-123", "trace": [{"role": "x"}]}\n'


def checks() -> Any:
    """The module under test, imported when a test needs it (not at collection)."""
    from flaketui.loading.formats import parquet_checks

    return parquet_checks


def write_table(path: Path, rows: list[dict[str, Any]], **types: Any) -> Path:
    """A trial table of ``rows`` (each gives source, and optionally kind, offset, length)."""
    cols: dict[str, Any] = {
        "run": ["r"] * len(rows), "task": [f"t{i}" for i in range(len(rows))],
        "outcome": ["pass"] * len(rows),
        "source": [r["source"] for r in rows],
        "source_kind": [r.get("kind", "jsonl") for r in rows],
        "offset": [r.get("offset", 0) for r in rows],
        "length": [r.get("length", len(SECRET)) for r in rows],
    }
    arrays = {k: pa.array(v, type=types.get(k)) for k, v in cols.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(arrays), path)
    return path


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """tables/ holds the table and an honest log; the secret lies beside tables/."""
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(SECRET)
    honest = tmp_path / "tables" / "logs" / "honest.jsonl"
    honest.parent.mkdir(parents=True)
    honest.write_bytes(SECRET.replace(b"SECRET-KEY-123", b"honest"))
    return {"secret": secret, "honest": honest, "table": tmp_path / "tables" / "t.parquet", "root": tmp_path}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any fsspec filesystem asked for is a URL followed: the test fails."""
    def refuse(protocol: str) -> None:
        raise AssertionError(f"a {protocol}:// URL named by a table was fetched")

    monkeypatch.setattr(location, "_filesystem", refuse)


def refused(table: Path, row: int = 0, sources_roots: tuple[str, ...] = ()) -> str:
    """Reading row ``row`` of ``table`` back is refused (with ``--sources-root`` ``sources_roots``):
    the one-line message, which names the table and row and no secret."""
    from flaketui.loading.options import LoadOptions

    log = load_logs([table], use_cache=False, options=LoadOptions(sources_roots=sources_roots))
    with pytest.raises(ValueError) as info:
        read_trial(log, row)
    message = str(info.value)
    assert "\n" not in message and f"{table}:{row + 1}" in message
    assert "SECRET-KEY-123" not in message
    return message


def test_an_honest_row_inside_the_tables_folder_opens(layout: dict[str, Path]) -> None:
    """A row whose source lies inside the table's folder opens its trace."""
    write_table(layout["table"], [{"source": str(layout["honest"])}, {"source": "logs/honest.jsonl"}])
    log = load_logs([layout["table"]], use_cache=False)
    assert read_trial(log, 0).extra["api_key"] == "honest"
    assert read_trial(log, 1).extra["api_key"] == "honest"


@pytest.mark.parametrize("how", ["absolute", "relative", "link"])
def test_a_secret_beside_the_folder_is_never_read(layout: dict[str, Path], how: str) -> None:
    """A source outside the table's folder (absolute, relative or through a link) is never read."""
    source = {"absolute": str(layout["secret"]), "relative": "../secret.jsonl", "link": "logs/link.jsonl"}[how]
    if how == "link":
        (layout["honest"].parent / "link.jsonl").symlink_to(layout["secret"])
    write_table(layout["table"], [{"source": source}])
    assert "outside the table's folder" in refused(layout["table"])


def test_etc_passwd_is_never_read(layout: dict[str, Path]) -> None:
    """A source of /etc/passwd is refused."""
    write_table(layout["table"], [{"source": "/etc/passwd", "length": 100}])
    assert "outside" in refused(layout["table"])


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/x.jsonl", "s3://bucket/x.jsonl",
                                 "https://user:pw@example.invalid/x.jsonl"])
def test_a_url_named_by_a_local_table_is_never_fetched(layout: dict[str, Path], url: str) -> None:
    """A URL named by a local table is never fetched."""
    write_table(layout["table"], [{"source": url}])
    message = refused(layout["table"])
    assert "URL outside" in message


def test_a_url_outside_a_remote_tables_prefix_is_refused() -> None:
    """A URL outside a remote table's prefix is refused."""
    parquet_checks = checks()
    check = parquet_checks.resolve_source
    table = "s3://bucket/team/tables/t.parquet"
    assert check(table, 0, "s3://bucket/team/tables/runs/a.jsonl", "jsonl", ("parquet",)) \
        == "s3://bucket/team/tables/runs/a.jsonl"
    assert check(table, 0, "runs/a.jsonl", "jsonl", ("parquet",)) == "s3://bucket/team/tables/runs/a.jsonl"
    for bad in ("s3://bucket/team/secrets.jsonl", "s3://other/team/tables/a.jsonl",
                "gs://bucket/team/tables/a.jsonl", "s3://bucket/team/tables/../x.jsonl",
                "s3://bucket/team/tables/%2e%2e/x.jsonl", "/etc/passwd", "../x.jsonl",
                "https://evil.example/team/tables/a.jsonl"):
        with pytest.raises(parquet_checks.SourceRefused):
            check(table, 0, bad, "jsonl", ("parquet",))


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_the_table_itself_is_refused(layout: dict[str, Path], kind: str) -> None:
    """A row pointing at the table itself is refused without recursion."""
    write_table(layout["table"], [{"source": str(layout["table"]), "kind": kind}])
    refused(layout["table"])  # no RecursionError


def test_another_parquet_table_is_refused(layout: dict[str, Path]) -> None:
    """A row pointing at another Parquet table is refused."""
    inner = write_table(layout["table"].parent / "inner.parquet", [{"source": str(layout["honest"])}])
    write_table(layout["table"], [{"source": str(inner)}])
    assert "Parquet" in refused(layout["table"])


def test_dev_zero_with_a_huge_length_is_refused(layout: dict[str, Path]) -> None:
    """/dev/zero with a huge length is refused before reading."""
    write_table(layout["table"], [{"source": "/dev/zero", "length": 2 ** 40}])
    refused(layout["table"])
    assert "not a regular file" in refused(layout["table"], sources_roots=("/dev",))  # even where the user allows it


@pytest.mark.parametrize(("offset", "length"), [(0, 2 ** 40), (-1, 10), (0, -5)])
def test_a_length_out_of_bounds_is_refused(layout: dict[str, Path], offset: int, length: int) -> None:
    """An offset or length out of the file's bounds is refused."""
    write_table(layout["table"], [{"source": str(layout["honest"]), "offset": offset, "length": length}])
    refused(layout["table"])


def test_sources_root_opens_a_folder_the_user_names(layout: dict[str, Path]) -> None:
    """--sources-root opens a folder the user names, for that load only: the log it loaded reads
    its trials back from there, and a load without it (in the same process) does not."""
    from flaketui.loading.options import LoadOptions

    write_table(layout["table"], [{"source": str(layout["secret"])}])
    result = CliRunner().invoke(main, ["report", str(layout["table"]), "--sources-root", str(layout["root"]),
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    log = load_logs([layout["table"]], use_cache=False, options=LoadOptions(sources_roots=(str(layout["root"]),)))
    assert read_trial(log, 0).extra["api_key"] == "SECRET-KEY-123"  # the user asked for it
    refused(layout["table"])


def test_a_tag_copied_from_another_table_gives_no_trust(layout: dict[str, Path], tmp_path: Path) -> None:
    """A trust tag copied from another table gives it no trust."""
    parquet_checks = checks()
    own = tmp_path / "own.parquet"
    result = CliRunner().invoke(main, ["export", str(layout["honest"]), "--out", str(own)])
    assert result.exit_code == 0, result.output
    tag = pq.read_schema(own).metadata[parquet_checks.SOURCES_TAG]
    write_table(layout["table"], [{"source": str(layout["secret"])}])
    t = pq.read_table(layout["table"])
    pq.write_table(t.replace_schema_metadata({parquet_checks.SOURCES_TAG: tag}), layout["table"])
    refused(layout["table"])


# --- bombs and hostile columns --------------------------------------------------------


def test_a_table_declaring_too_many_rows_is_one_line(layout: dict[str, Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A table declaring too many rows is one line."""
    parquet_checks = checks()
    write_table(layout["table"], [{"source": str(layout["honest"])}] * 20)
    monkeypatch.setattr(parquet_checks, "MAX_ROWS", 10)
    result = CliRunner().invoke(main, ["report", str(layout["table"])])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert "declares 20 rows" in result.stderr


def test_rows_per_byte_refuses_an_rle_bomb() -> None:
    """Too many rows per byte is refused as a run-length bomb."""
    parquet_checks = checks()
    assert parquet_checks.row_count_problem(10_000_000, 292_000) is not None  # the issue's: 34 rows a byte
    assert parquet_checks.row_count_problem(10_000_000, 130_000_000) is None  # an export: 13 bytes a row
    assert parquet_checks.row_count_problem(60_000_000, 10 ** 12) is not None
    assert parquet_checks.row_count_problem(900_000, 100) is None  # small counts are cheap


@pytest.mark.slow
def test_a_real_rle_bomb_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    """A real run-length bomb is refused before it is decoded."""
    parquet_checks = checks()
    path = tmp_path / "bomb.parquet"
    n = 3_000_000
    table = pa.table({c: pa.repeat(pa.scalar(v), n) for c, v in
                      [("run", "r"), ("task", "t"), ("outcome", "pass"), ("source", "s"),
                       ("source_kind", "jsonl"), ("offset", 0), ("length", 1)]})
    pq.write_table(table, path, compression="zstd")
    assert n > parquet_checks.MAX_ROWS_PER_BYTE * path.stat().st_size
    with pytest.raises(InputError, match="decompression bomb"):
        load_logs([path], use_cache=False)
    result = CliRunner().invoke(main, ["report", str(path)])
    assert result.exit_code == 2 and "decompression bomb" in result.stderr
    assert isinstance(result.exception, SystemExit)


HOSTILE = {
    "list run": ("run", pa.list_(pa.string()), [["a"], ["b", "c"]]),
    "struct run": ("run", pa.struct([("x", pa.string())]), [{"x": "a"}, {"x": "b"}]),
    "ragged run": ("run", pa.list_(pa.int64()), [[1], [1, 2, 3]]),
    "list group": ("group", pa.list_(pa.string()), [["g"], []]),
    "string trial": ("trial", pa.string(), ["one", "2"]),
    "string score": ("score", pa.string(), ["high", "0.5"]),
    "string metric": ("metric_cost", pa.string(), ["x", "1"]),
    "list offset": ("offset", pa.list_(pa.int64()), [[0], [1]]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_column_types_are_one_line_problems(layout: dict[str, Path], case: str) -> None:
    """Each hostile column type is a one-line problem."""
    name, typ, values = HOSTILE[case]
    cols: dict[str, Any] = {"run": pa.array(["r", "r"]), "task": pa.array(["a", "b"]),
                            "outcome": pa.array(["pass", "fail"]),
                            "source": pa.array([str(layout["honest"])] * 2), "source_kind": pa.array(["jsonl"] * 2),
                            "offset": pa.array([0, 0]), "length": pa.array([len(SECRET)] * 2)}
    cols[name] = pa.array(values, type=typ)
    pq.write_table(pa.table(cols), layout["table"])
    result = CliRunner().invoke(main, ["report", str(layout["table"]), "--format", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 2)
    assert f"column {name} has type" in result.stderr
    if name in ("run", "offset"):
        assert result.exit_code == 2
    else:  # an optional column is left out; the trials load
        assert result.exit_code == 0


@pytest.mark.ui
async def test_the_app_opening_a_refused_trace_says_so_in_one_line(layout: dict[str, Path]) -> None:
    """The trace screen of a row pointing at the secret: an error shown, the secret never."""
    from flaketui.app.app import make_app
    from tests.conftest import SIZE

    write_table(layout["table"], [{"source": str(layout["secret"])}])
    app = make_app([str(layout["table"])])
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = app.export_screenshot()
        assert app.is_running
        said = [str(n.message) for n in app._notifications]
    assert "SECRET-KEY-123" not in shown and not any("SECRET-KEY-123" in m for m in said)
    assert any("t.parquet:1: source" in m and "outside the table's folder" in m and "\n" not in m
               for m in said), said


@pytest.mark.parametrize("name", ["run", "metric_cost"])
def test_a_column_name_given_twice_is_one_line(layout: dict[str, Path], name: str) -> None:
    """A column name given twice is one line."""
    base = {"run": ["r"], "task": ["a"], "outcome": ["pass"], "source": [str(layout["honest"])],
            "source_kind": ["jsonl"], "offset": [0], "length": [len(SECRET)], "metric_cost": [1.0]}
    names = [*base, name]
    arrays = [pa.array(v) for v in base.values()] + [pa.array(base[name])]
    pq.write_table(pa.Table.from_arrays(arrays, names=names), layout["table"])
    result = CliRunner().invoke(main, ["report", str(layout["table"]), "--format", "json"])
    assert isinstance(result.exception, SystemExit) or result.exception is None, result.exception
    assert f"column {name} appears 2 times" in result.stderr
    assert result.exit_code == (2 if name == "run" else 0)


@pytest.mark.ui
def test_the_apps_sources_roots_option_names_a_root(layout: dict[str, Path]) -> None:
    """The app's sources-roots option names a root to read from."""
    from flaketui.app.app import make_app

    app = make_app([str(layout["table"])], sources_roots=[str(layout["root"])])
    assert app.options.load is not None and app.options.load.sources_roots == (str(layout["root"]),)
    assert checks().sources_roots() == ()  # given to the app's loads, not set for the process
