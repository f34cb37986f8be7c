"""No output is written through a link planted at its name or at a predictable temp name:
``export --format parquet`` wrote ``.OUT.tmp-PID``; the palette's
screenshot opened ``flaketui_TIMESTAMP.svg`` with a plain ``open(…, "w")``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from flaketui.app.app import make_app
from flaketui.cli import main
from tests.conftest import BASELINE, SIZE

pytest.importorskip("pyarrow")

PRECIOUS = b"do not overwrite\n"


def victim(tmp_path: Path) -> Path:
    target = tmp_path / "victim" / "precious.txt"
    target.parent.mkdir()
    target.write_bytes(PRECIOUS)
    return target


def test_export_parquet_never_writes_through_the_old_temp_name(tmp_path: Path) -> None:
    """export never writes through a link planted at its old temporary name."""
    target = victim(tmp_path)
    out = tmp_path / "trials.parquet"
    planted = tmp_path / f".{out.name}.tmp-{os.getpid()}"  # the name the export used to write
    planted.symlink_to(target)
    result = CliRunner().invoke(main, ["export", str(BASELINE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert target.read_bytes() == PRECIOUS
    assert out.is_file() and not out.is_symlink() and out.read_bytes()[:4] == b"PAR1"


def test_export_parquet_replaces_a_link_at_the_output_name(tmp_path: Path) -> None:
    """export replaces a link at the output name instead of writing through it."""
    target = victim(tmp_path)
    out = tmp_path / "trials.parquet"
    out.symlink_to(target)
    result = CliRunner().invoke(main, ["export", str(BASELINE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert target.read_bytes() == PRECIOUS
    assert not out.is_symlink() and out.read_bytes()[:4] == b"PAR1"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


@pytest.mark.ui
@pytest.mark.parametrize("via", ["save_screenshot", "deliver_screenshot"])
async def test_screenshot_never_writes_through_a_link(tmp_path: Path, via: str) -> None:
    """A screenshot never writes through a link."""
    target = victim(tmp_path)
    name = "flaketui_2026-01-01T00_00_00.svg"
    (tmp_path / name).symlink_to(target)
    app = make_app([str(BASELINE)])
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        getattr(app, via)(name, str(tmp_path))
    assert target.read_bytes() == PRECIOUS
    written = tmp_path / name
    assert not written.is_symlink() and written.read_text().lstrip().startswith("<svg")
