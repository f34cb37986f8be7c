#!/usr/bin/env python3
"""Render the README's screenshots from the real app on the bundled fixtures.

    python scripts/export_screenshots.py          # writes screenshots/*.svg

Each screenshot runs the app headless with ``app.run_test(size=(120, 36))``,
presses the keys a user would press, waits for the workers and saves the SVG
(``App.export_screenshot``, as ``save_screenshot`` does, with a title).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flaketui.app.app import make_app  # noqa: E402

OUT = ROOT / "screenshots"
SIZE = (120, 36)

SHOTS: list[tuple[str, list[str], str]] = [
    ("tasks", [], "The task table: the flaky task on top, k curves and the p̂ histogram"),
    ("traces", ["enter"], "searchRunbook: passing vs failing trace, first divergence at step 3"),
    ("fork-map", ["enter", "f"], "The fork map: every restart-first trial failed"),
    ("filtered", ["slash", *"alert", "enter"], "Filtered by name"),
    ("help", ["question_mark"], "Every key"),
]
"""(file name, keys pressed after loading, title)."""


async def shoot(name: str, keys: list[str], title: str) -> Path:
    app = make_app([str(ROOT / "fixtures")], k=5)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
        await pilot.pause()
        path = OUT / f"{name}.svg"
        # save_screenshot takes no title; export_screenshot gives the same SVG with one.
        path.write_text(app.export_screenshot(title=f"flaketui: {title}"), encoding="utf-8")
    return path


async def main() -> None:
    os.environ.setdefault("TEXTUAL_CURSOR_BLINK", "0")
    OUT.mkdir(exist_ok=True)
    for name, keys, title in SHOTS:
        print(await shoot(name, keys, title))


if __name__ == "__main__":
    asyncio.run(main())
