#!/usr/bin/env python3
"""Render the README's screenshots from the real app.

    python scripts/export_screenshots.py                     # writes screenshots/*.svg
    python scripts/export_screenshots.py --flaky-log PATH    # tasks.svg from another log

Each screenshot runs the app headless with ``app.run_test(size=(120, 36))``,
presses the keys a user would press, waits for the workers and saves the SVG
(``App.export_screenshot``, as ``save_screenshot`` does, with a title).

``tasks.svg`` shows a log with several flaky tasks: the τ-bench airline sample
(``../shared/realdata/tau-bench/gpt-4o-airline.json``, 50 tasks × 4 trials) when it
is beside the checkout, else the one given with ``--flaky-log``, else the bundled
fixtures. The other shots use the bundled fixtures (two runs, traces).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flaketui.app.app import make_app  # noqa: E402

OUT = ROOT / "screenshots"
SIZE = (120, 36)
FIXTURES = ROOT / "fixtures"
TAU_BENCH = ROOT.parent / "shared" / "realdata" / "tau-bench" / "gpt-4o-airline.json"
"""The τ-bench sample beside the checkout (several flaky tasks, real chat traces)."""


@dataclass(frozen=True)
class Shot:
    """One screenshot: file name, keys pressed after loading, title, and the logs."""

    name: str
    keys: list[str]
    title: str
    paths: list[str] = field(default_factory=lambda: [str(FIXTURES)])
    k: int | None = 5


def shots(flaky_log: Path | None) -> list[Shot]:
    """Every screenshot of the README, ``tasks`` on ``flaky_log`` when given."""
    tasks = (Shot("tasks", [], "A run with flaky tasks on top: their pass rates, CIs, "
                  "pass@k / pass^k, the k curves", [str(flaky_log)], None)
             if flaky_log else
             Shot("tasks", [], "The task table: the flaky task on top, k curves and the p̂ histogram"))
    return [
        tasks,
        Shot("traces", ["enter"], "searchRunbook: passing vs failing trace, the agent's first different "
             "action at step 4; step 3's reordered chunks marked"),
        Shot("inspector", ["enter", "i"], "The trial inspector: outcome, metrics, every field the log "
             "recorded"),
        Shot("fork-map", ["enter", "f"], "The fork map: every restart-first trial failed"),
        Shot("filtered", ["slash", *"alert", "enter"], "Filtered by name"),
        Shot("compare", ["c"], "Run B against run A: flipped and moved tasks, the tests and one verdict"),
        Shot("plan", ["p"], "The plan: how many more trials, on which tasks, and why"),
        Shot("runs", ["r"], "The run picker"),
        Shot("help", ["question_mark"], "Every key"),
    ]


async def shoot(shot: Shot) -> Path:
    # Triage notes in a scratch folder, named relative to it: the pictures show no path of
    # this machine, and no notes a developer left beside the fixtures.
    app = make_app(shot.paths, k=shot.k, triage="flaketui.triage.json")
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for key in shot.keys:
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        path = OUT / f"{shot.name}.svg"
        # save_screenshot takes no title; export_screenshot gives the same SVG with one.
        path.write_text(app.export_screenshot(title=f"flaketui: {shot.title}"), encoding="utf-8")
    return path


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flaky-log", type=Path, default=None,
                        help="log with several flaky tasks for tasks.svg (default: the τ-bench "
                             "sample beside the checkout, else the bundled fixtures)")
    args = parser.parse_args()
    flaky = args.flaky_log.resolve() if args.flaky_log else (TAU_BENCH if TAU_BENCH.is_file() else None)
    os.environ.setdefault("TEXTUAL_CURSOR_BLINK", "0")
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        for shot in shots(flaky):
            print(await shoot(shot))


if __name__ == "__main__":
    asyncio.run(main())
