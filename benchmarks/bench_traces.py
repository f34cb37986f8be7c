#!/usr/bin/env python3
"""Opening a pair of long traces: the trace screen's first screenful and the whole pair.

    .venv/bin/python benchmarks/bench_traces.py                       # both pairs, this checkout
    .venv/bin/python benchmarks/bench_traces.py --pairs atif --repeat 3
    .venv/bin/python benchmarks/bench_traces.py --checkout /tmp/old   # another checkout's flaketui

Two pairs, each one task with a passing and a failing trial:

- ``atif``: the real Harbor ATIF pair of ``../shared/realdata/harbor-datagen`` (two trials' folders,
  0.7 MB of ``agent/trajectory.json`` each, copied to a temporary job with one task name; skipped when
  ``../shared`` is absent);
- ``5000``: two 5,000-step JSONL traces (an agent's call and a tool's 1–3 kB output a step),
  diverging at step 4,000, with every step's output reworded after it.

For each pair: ``model`` is the headless work in the screen's reading thread (reading both trials,
:func:`~flaketui.traces.task_view.task_traces`, :func:`~flaketui.traces.trace_diff.pair_diff`) plus
every row's changed words (:meth:`~flaketui.traces.trace_diff.PairDiff.row_highlights`, computed
when a row is drawn); ``first`` is the app's time from ``enter`` on the task table to the first frame
that shows a trace row (the first frame after the view mounted its rows), and ``whole`` to the last
frame drawn while the screen draws the pair, its evidence line included (the app driven by
Textual's Pilot at 200×50, frames as ``bench_app.py`` counts them). Each pair runs in
a process of its own; the figure is the median of ``--repeat`` runs. The machine's load is printed
beside them: on a machine other processes share, the times scale with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HARBOR = ROOT.parent / "shared" / "realdata" / "harbor-datagen"
ATIF_TRIALS = (
    "auth_token_race_condition/example_runs/successful_run_2025-11-19/draft_dp_96443054__fSr5gkt",
    "etl_checkpoint_resume_bug/example_runs/run_2025-11-19__14-39-23",
)
"""The two real trial folders (reward 1 and 0) made one task's pair."""


def atif_job(out: Path) -> Path | None:
    """A Harbor job folder in ``out`` holding the two real ATIF trials as trials of one task
    (``result.json``'s ``task_name`` rewritten); None when ``../shared`` is absent."""
    if not HARBOR.is_dir():
        return None
    job = out / "atif-job"
    for n, rel in enumerate(ATIF_TRIALS):
        trial = job / f"pair_task__{n}"
        shutil.copytree(HARBOR / rel, trial)
        for p in trial.rglob("*"):
            p.chmod(0o644 if p.is_file() else 0o755)
        result = json.loads((trial / "result.json").read_text())
        result["task_name"], result["trial_name"] = "pair_task", trial.name
        (trial / "result.json").write_text(json.dumps(result))
    return job


def long_pair(out: Path, steps: int = 5000, diverge: int = 4000) -> Path:
    """A JSONL log of one task: a passing and a failing trace of ``steps`` steps, the failing
    one's call and every tool output after step ``diverge`` (1-based) reworded."""
    words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
             "pi rho sigma tau upsilon phi chi psi omega").split()

    def trace(fail: bool) -> list[dict[str, Any]]:
        out_steps = []
        for i in range(steps):
            late = fail and i + 1 >= diverge
            if i % 2 == 0:
                query = f"record {i // 2}" + (" again" if late else "")
                out_steps.append({"role": "assistant", "tool_calls": [
                    {"name": "lookup", "arguments": {"query": query}}]})
            else:
                lines = [" ".join(words[(i + j + k) % len(words)] for k in range(12)) for j in range(8 + i % 16)]
                if late:
                    lines[len(lines) // 2] = "the service answered with another result " * 3
                out_steps.append({"role": "tool", "content": "\n".join(lines)})
        return out_steps

    log = out / "long-pair.jsonl"
    with log.open("w") as f:
        for n, fail in enumerate((False, True)):
            f.write(json.dumps({"task": "long_task", "trial": n, "passed": not fail, "trace": trace(fail)}) + "\n")
    return log


def model_seconds(path: Path) -> float:
    """Seconds of the headless work for the pair's task (see the module's docstring)."""
    from flaketui.loading import load_logs, read_trial
    from flaketui.traces.task_view import RememberingNormaliser, task_traces
    from flaketui.traces.trace_diff import pair_diff

    log = load_logs([str(path)], use_cache=False)
    start = time.perf_counter()
    trials = [read_trial(log, r, max_steps=8000) for r in range(len(log.outcome))]
    norm = RememberingNormaliser.like(None)  # as the screen's read: one normaliser for the pair, map and diff
    found = task_traces(trials, norm)
    pair = found.pair_trials
    assert pair is not None
    diff = pair_diff(*pair, norm, found.mode)
    for n in range(len(diff.rows)):
        diff.row_highlights(n)
    return time.perf_counter() - start


async def app_seconds(path: Path, timeout: float) -> tuple[float, float]:
    """Seconds from ``enter`` to the first frame showing a trace row, and to the last frame."""
    from bench_app import FRAMES, _loaded, _until, watch_frames

    from flaketui.app.app import make_app
    from flaketui.app.screens.traces import TaskTraceScreen

    from flaketui.app.widgets.trace_view import TraceDiffView

    app = make_app([str(path)])
    first: list[float] = []
    draw = TraceDiffView._draw_window

    async def drawn(self: Any, *args: Any) -> None:  # when the rows are first mounted
        await draw(self, *args)
        if not first and self.query(".diff-row"):
            first.append(app.frame_clock())

    TraceDiffView._draw_window = drawn  # type: ignore[method-assign]
    async with app.run_test(size=(200, 50)) as pilot:
        await _until(pilot, lambda: _loaded(app), timeout)
        for worker in list(app.workers):  # the table's background readers of traces
            worker.cancel()
        await pilot.pause(0.2)
        watch_frames(app)
        begin = app.frame_clock()

        def shown() -> bool:
            screen = app.screen
            return isinstance(screen, TaskTraceScreen) and screen.loaded

        await pilot.press("enter")
        await _until(pilot, shown, timeout)
        await pilot.pause(1.0)  # the rows drawn after the first frame
        frames = [f for f in FRAMES if f > begin]
        app.exit()
    first_frame = next((f for f in frames if first and f >= first[0]), frames[0] if frames else begin)
    return first_frame - begin, (frames[-1] if frames else begin) - begin


def one(pair: str, timeout: float) -> dict[str, Any]:
    """Every figure of ``pair`` (run in a process of its own)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = atif_job(Path(tmp)) if pair == "atif" else long_pair(Path(tmp))
        if path is None:
            return {"pair": pair, "skipped": "../shared/realdata/harbor-datagen is absent"}
        model = model_seconds(path)
        first, whole = asyncio.run(app_seconds(path, timeout))
    return {"pair": pair, "model_s": round(model, 3), "first_s": round(first, 3), "whole_s": round(whole, 3),
            "load": round(os.getloadavg()[0], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", default="atif,5000", help="which pairs: atif, 5000 (comma-separated)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each pair; the median is shown")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take")
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the checkout whose flaketui is measured")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        sys.path.insert(0, str(a.checkout.resolve()))
        sys.path.insert(1, str(HERE))
        print(json.dumps(one(a.one, a.timeout)))
        return
    print(f"{'pair':6} {'model s':>8} {'first s':>8} {'whole s':>8} {'load':>5}   ({a.checkout})")
    for pair in a.pairs.split(","):
        runs = []
        for _ in range(a.repeat):
            out = subprocess.run([sys.executable, __file__, "--one", pair, "--checkout", str(a.checkout),
                                  "--timeout", str(a.timeout)], capture_output=True, text=True,
                                 check=False, cwd=a.checkout)
            if out.returncode:
                raise SystemExit(f"{pair}: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        if "skipped" in runs[0]:
            print(f"{pair:6} skipped: {runs[0]['skipped']}")
            continue
        med = {k: statistics.median(r[k] for r in runs) for k in ("model_s", "first_s", "whole_s", "load")}
        print(f"{pair:6} {med['model_s']:8.3f} {med['first_s']:8.3f} {med['whole_s']:8.3f} {med['load']:5.1f}")


if __name__ == "__main__":
    main()
