"""Check that a refactor held the output: run two flaketui commands (the tree before, this tree)
over the same logs and count the runs whose stdout, stderr and exit code are byte-identical.

The logs: the bundled fixtures, every log file and folder under ``../shared/realdata/`` (when
present), and logs written to a temporary folder by ``../shared/bench/gen_trials.py`` with varied
``--seed``, ``--tasks``, ``--trials``, ``--causes``, ``--style`` and ``--cause-set``. Each log is
reported in text (table), JSON, Markdown and CSV; a few also go through ``compare``, ``gate`` and
``diff``. Each tree gets an index cache of its own (``XDG_CACHE_HOME``), so neither reads what the
other wrote. A run that differs is named with the first differing line of each stream::

    .venv/bin/python scripts/report_identity.py --before /work/wt-old/.venv/bin/flaketui
    .venv/bin/python scripts/report_identity.py --quick     # a few logs, for a look while working

Exit 0 when every run is identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
REALDATA = SHARED / "realdata"
GENERATOR = SHARED / "bench" / "gen_trials.py"
LOG_SUFFIXES = (".jsonl", ".json", ".eval", ".gz", ".parquet")
FORMATS = ("table", "json", "markdown", "csv")

GENERATED = [  # (name, gen_trials.py arguments): every shape and option the generator has
    *[(f"plain-s{seed}-t{tasks}-n{trials}", ["--seed", str(seed), "--tasks", str(tasks), "--trials", str(trials)])
      for seed, tasks, trials in [(1, 40, 5), (2, 120, 8), (3, 300, 3), (4, 25, 20), (5, 200, 10), (6, 60, 1),
                                  (7, 500, 4), (8, 90, 12)]],
    *[(f"runs-s{seed}", ["--seed", str(seed), "--tasks", "150", "--trials", "6", "--runs", "baseline,candidate"])
      for seed in (11, 12, 13)],
    *[(f"groups-s{seed}", ["--seed", str(seed), "--tasks", "120", "--trials", "5", "--groups", "7"])
      for seed in (21, 22)],
    *[(f"causes-{style}-{cset}-s{seed}",
       ["--seed", str(seed), "--tasks", "60", "--trials", "8", "--causes", "--style", style, "--cause-set", cset])
      for seed in (31, 32) for style in ("steps", "openai") for cset in ("v1", "v2")],
    *[(f"causes-runs-s{seed}", ["--seed", str(seed), "--tasks", "80", "--trials", "6", "--causes",
                                "--runs", "baseline,candidate"]) for seed in (41, 42)],
    *[(f"steps-s{seed}", ["--seed", str(seed), "--tasks", "50", "--trials", "6", "--steps", str(steps)])
      for seed, steps in [(51, 3), (52, 40)]],
    *[(f"mixed-s{seed}", ["--seed", str(seed), "--tasks", str(tasks), "--trials", str(trials), "--groups", str(groups),
                          "--runs", runs])
      for seed, tasks, trials, groups, runs in [(61, 70, 2, 0, "a"), (62, 35, 30, 3, "a,b"), (63, 400, 5, 0, "a,b,c"),
                                                (64, 15, 9, 2, "base"), (65, 250, 7, 11, "x,y"), (66, 10, 4, 0, "r"),
                                                (67, 180, 6, 5, "one,two"), (68, 45, 16, 0, "a,b"),
                                                (69, 600, 3, 20, "only"), (70, 30, 11, 4, "p,q,r")]],
    *[(f"causes-groups-s{seed}", ["--seed", str(seed), "--tasks", "90", "--trials", "7", "--causes", "--groups", "6",
                                  "--cause-set", "v2"]) for seed in (71, 72)],
]
"""Logs written by the generator (enough, with the fixtures and the real logs, for 80 and more)."""


@dataclass(frozen=True)
class Case:
    """One command to run in both trees."""

    name: str
    args: tuple[str, ...]


def real_logs() -> list[Path]:
    """Every log file and every folder of logs under ``../shared/realdata/`` (none when absent)."""
    if not REALDATA.is_dir():
        return []
    files = sorted(p for p in REALDATA.rglob("*") if p.is_file() and p.name.endswith(LOG_SUFFIXES))
    folders = sorted(p for p in REALDATA.iterdir() if p.is_dir())
    harbor = REALDATA / "harbor-datagen"
    jobs = sorted(p.parent for p in harbor.rglob("result.json") if (p.parent / "config.json").is_file()
                  and any(q.is_dir() for q in p.parent.iterdir())) if harbor.is_dir() else []
    return [*files, *folders, *jobs]


def generated_logs(folder: Path) -> list[Path]:
    """The :data:`GENERATED` logs, written into ``folder``."""
    out = []
    for name, args in GENERATED:
        path = folder / f"{name}.jsonl"
        subprocess.run([sys.executable, str(GENERATOR), *args, "--out", str(path)], check=True)
        out.append(path)
    return out


def cases(logs: Sequence[Path], fixtures: Sequence[Path]) -> Iterator[Case]:
    """``report`` in every format on every log; ``compare``, ``gate`` and ``diff`` on a few."""
    for log in logs:
        for fmt in FORMATS:
            yield Case(f"report {fmt} {log}", ("report", str(log), "--format", fmt))
    for log in logs[:6]:
        yield Case(f"report -k 1 json {log}", ("report", str(log), "-k", "1", "--format", "json"))
    baseline, candidate = fixtures[0], fixtures[1]
    for fmt in ("table", "json", "csv", "markdown"):
        yield Case(f"compare {fmt} fixtures", ("compare", str(baseline), str(candidate), "--format", fmt))
    yield Case("compare summary fixtures", ("compare", str(baseline), str(candidate), "--format", "markdown",
                                            "--summary"))
    yield Case("report baseline fixtures", ("report", str(baseline), str(candidate), "--baseline",
                                            "oncall-baseline", "--format", "json"))
    for fmt in ("text", "json"):
        yield Case(f"gate {fmt} fixtures", ("gate", str(baseline), str(candidate), "--min-pass-hat-k", "0.5",
                                            "--max-flakiness", "0.3", "--format", fmt))
        yield Case(f"gate evidence {fmt} fixtures", ("gate", str(baseline), "--max-flakiness", "0.2",
                                                     "--require-evidence", "--format", fmt))
    for fmt in ("text", "json", "markdown"):
        yield Case(f"diff {fmt} fixtures", ("diff", str(baseline), "--task", "searchRunbook", "--format", fmt))
        yield Case(f"diff runs {fmt} fixtures", ("diff", str(baseline), str(candidate), "--task", "searchRunbook",
                                                 "--format", fmt))
    yield Case("diff missing task", ("diff", str(baseline), "--task", "no-such-task"))
    yield Case("report causes json fixtures", ("report", str(baseline), "--causes", "--format", "json"))
    yield Case("report causes markdown fixtures", ("report", str(baseline), "--causes", "--format", "markdown"))


def run(command: Sequence[str], case: Case, cache: Path) -> tuple[int, bytes, bytes]:
    """Exit code, stdout and stderr of ``command`` with ``case``'s arguments (a terminal of 120
    columns, a fixed locale, the given cache folder), run in the cache's parent folder: a
    ``python -m flaketui`` there imports the flaketui of its own tree, never this one's."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "COLUMNS": "120", "LINES": "50", "LC_ALL": "C.UTF-8",
           "NO_COLOR": "1"}
    env.pop("FLAKETUI_SCHEDULER", None)
    proc = subprocess.run([*command, *case.args], capture_output=True, env=env, cwd=cache.parent, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def first_difference(a: bytes, b: bytes) -> str:
    """The first line that differs between ``a`` and ``b``, both sides."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: {x[:160]!r} / {y[:160]!r}"
    return f"lengths {len(la)} / {len(lb)} lines"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="/work/wt-old/.venv/bin/flaketui", help="the flaketui before the change (a command line)")
    ap.add_argument("--after", default=str(ROOT / ".venv" / "bin" / "flaketui"), help="the flaketui after it (a command line)")
    ap.add_argument("--quick", action="store_true", help="the fixtures and three generated logs only")
    args = ap.parse_args(argv)
    fixtures = [ROOT / "fixtures" / "oncall-baseline.jsonl", ROOT / "fixtures" / "oncall-candidate.jsonl"]
    with tempfile.TemporaryDirectory(prefix="flaketui-identity-") as tmp:
        folder = Path(tmp)
        if args.quick:
            del GENERATED[3:]
        logs = [*fixtures, ROOT / "fixtures", *([] if args.quick else real_logs()), *generated_logs(folder)]
        todo = list(cases(logs, fixtures))
        same = 0
        for i, case in enumerate(todo, 1):
            before = run(shlex.split(args.before), case, folder / "cache-before")
            after = run(shlex.split(args.after), case, folder / "cache-after")
            if before == after:
                same += 1
                continue
            print(f"DIFFERS [{i}] flaketui {' '.join(case.args)}")
            if before[0] != after[0]:
                print(f"  exit code {before[0]} / {after[0]}")
            for label, x, y in (("stdout", before[1], after[1]), ("stderr", before[2], after[2])):
                if x != y:
                    print(f"  {label}: {first_difference(x, y)}")
        print(f"{same} of {len(todo)} runs byte-identical (stdout, stderr and exit code) over {len(logs)} logs "
              f"({len(real_logs()) if not args.quick else 0} real, {len(GENERATED)} generated, the fixtures)")
    return 0 if same == len(todo) else 1


if __name__ == "__main__":
    sys.exit(main())
