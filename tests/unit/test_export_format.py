"""``flaketui export`` takes its format from --out's extension: ``.csv`` was
written as Parquet when --format was not given; ``-`` is standard output."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.cli import main
from tests.conftest import BASELINE

PARQUET_MAGIC = b"PAR1"


def invoke(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("name", ["trials.csv", "TRIALS.CSV"])
def test_a_csv_name_writes_csv(tmp_path: Path, name: str) -> None:
    """A .csv name writes CSV."""
    out = tmp_path / name
    code, _, err = invoke("export", BASELINE, "--out", out)
    assert code == 0, err
    head = out.read_bytes()[:40]
    assert not head.startswith(PARQUET_MAGIC)
    assert head.decode("utf-8").startswith("run,task,trial")


@pytest.mark.parametrize("name", ["trials.parquet", "trials.pq"])
def test_a_parquet_name_writes_parquet(tmp_path: Path, name: str) -> None:
    """A .parquet or .pq name writes Parquet."""
    pytest.importorskip("pyarrow")
    out = tmp_path / name
    code, _, err = invoke("export", BASELINE, "--out", out)
    assert code == 0, err
    assert out.read_bytes()[:4] == PARQUET_MAGIC


def test_dash_is_csv_on_standard_output() -> None:
    """--out - writes CSV to standard output."""
    code, out, _ = invoke("export", BASELINE, "--out", "-")
    assert code == 0 and out.startswith("run,task,trial")


def test_an_unknown_extension_is_a_usage_error_naming_the_choices(tmp_path: Path) -> None:
    """An unknown extension is a usage error naming the choices."""
    out = tmp_path / "trials.txt"
    code, _, err = invoke("export", BASELINE, "--out", out)
    assert code == 2 and not out.exists()
    assert ".csv" in err and ".parquet" in err and ".pq" in err and "--format" in err


def test_format_given_wins_over_the_extension(tmp_path: Path) -> None:
    """--format wins over the extension."""
    out = tmp_path / "trials.txt"
    code, _, err = invoke("export", BASELINE, "--format", "csv", "--out", out)
    assert code == 0, err
    assert out.read_text(encoding="utf-8").startswith("run,task,trial")
