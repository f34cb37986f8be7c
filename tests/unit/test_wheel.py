"""The wheel works outside a checkout: ``flaketui demo``'s logs ship inside the package."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from flaketui.cli.tui import FIXTURES as PACKAGED
from tests.conftest import FIXTURES, ROOT


def test_packaged_demo_logs_are_the_fixtures() -> None:
    """``flaketui/demo/*.jsonl.gz`` hold the same bytes as ``fixtures/*.jsonl``
    (``scripts/make_fixtures.py`` writes both)."""
    plain = sorted(p.name for p in FIXTURES.glob("*.jsonl"))
    packed = sorted(p.name.removesuffix(".gz") for p in PACKAGED.glob("*.jsonl.gz"))
    assert plain == packed == ["oncall-baseline.jsonl", "oncall-candidate.jsonl"]
    for name in plain:
        assert gzip.decompress((PACKAGED / f"{name}.gz").read_bytes()) == (FIXTURES / name).read_bytes()


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="venv layout of POSIX")
def test_wheel_installed_in_a_fresh_venv_reports_the_demo_logs(tmp_path: Path) -> None:
    """Build the wheel, install it (no checkout on the path) in a new venv, and report the
    demo logs it carries; dependencies come from this environment's site-packages."""
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(dist)],
        capture_output=True, text=True, timeout=300,
    )
    if build.returncode != 0 and "Could not find a version that satisfies" in build.stderr:
        pytest.skip("no package index for the build backend")  # offline machine without setuptools
    assert build.returncode == 0, build.stderr
    (wheel,) = dist.glob("flaketui-*.whl")

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    target = Path(subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    # the wheel goes in; its dependencies are read from here (a path line: no .pth of ours,
    # so this checkout's editable install is not seen)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                    "--target", str(target), str(wheel)], check=True, capture_output=True, timeout=300)
    (target / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    where = subprocess.run([py, "-c", "import flaketui.cli.tui as c; print(c.__file__, c.FIXTURES)"],
                           cwd=elsewhere, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(target)), where
    proc = subprocess.run(
        [py, "-m", "flaketui", "report", where.split()[1], "-k", "5", "--format", "json"],
        cwd=elsewhere, capture_output=True, text=True, timeout=120,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr
    runs = {r["run"]: r["summary"] for r in json.loads(proc.stdout)["runs"]}
    assert sorted(runs) == ["oncall-baseline", "oncall-candidate"]
    assert round(runs["oncall-baseline"]["pass_hat_k"], 3) == 0.773
