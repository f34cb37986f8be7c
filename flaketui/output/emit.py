"""``plan --emit HARNESS``: the shell commands that run a plan's extra trials in that harness.

One command per (run, count): the tasks needing the same number of extra trials are grouped,
in the plan's order. Task ids are data from a log: each is passed through
:func:`shlex.quote`, so a name holding ``;``, ``$(…)`` or quotes stays one argument. The
parts a plan cannot know (the task file or dataset, the agent, the model) are shell
variables the user sets first (``"$TASK"``, ``"$MODEL"``…), named in a comment above the
commands.

Flags, from each harness's own CLI:

- **Inspect** (``inspect eval``; ``src/inspect_ai/_cli/eval.py`` in UKGovernmentBEIS/inspect_ai,
  and the CLI reference https://inspect.aisi.org.uk/reference/inspect_eval.html):
  ``--sample-id`` "Evaluate specific sample(s) (comma separated list of ids)" and ``--epochs``
  "Number of times to repeat dataset". Each id of the list is stripped of spaces and matched
  as an :mod:`fnmatch` pattern (``sample_id_filter`` in ``inspect_ai/_eval/task/util.py``,
  0.3.x), so ``*?[`` in a task id are escaped as :func:`glob.escape` does (a task ``*`` would
  otherwise select every sample). An id holding a comma, or starting or ending with a space,
  cannot be written in that list. (An id ``NAME:rest`` whose ``NAME`` is the Inspect task's own
  name is read by Inspect as ``rest`` scoped to that task: flaketui cannot know the task's name.)
- **Harbor** (``harbor run``; ``harbor/cli/jobs.py`` ``start``, harbor 0.6.6): ``--dataset``
  (or ``--path``), ``--include-task-name`` (repeatable; a name or a glob, so ``*?[`` in a task
  id are escaped as :func:`glob.escape` does) and ``-k/--n-attempts`` (attempts per task), with
  ``--agent`` and ``--model``.
- **τ²-bench** (``tau2 run``; ``docs/running_simulations.md`` in sierra-research/tau2-bench:
  ``tau2 run --domain retail --agent llm_agent --agent-llm openai/gpt-4.1 --task-ids 0 1
  --num-trials 3``): ``--task-ids`` takes the ids as separate arguments, ``--num-trials`` the
  trials per task; an id starting with ``-`` would be read as an option there.

An id that cannot be passed as it is (those, and any holding a control character or line
break) is left out of its command, with a comment saying which and why.
"""

from __future__ import annotations

import glob
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

HARNESSES = ("inspect", "harbor", "tau2")


@dataclass(frozen=True)
class Batch:
    """Tasks of one run that all need ``trials`` more trials."""

    run: str
    trials: int
    tasks: tuple[str, ...]


def batches(lines: Iterable[tuple[str, str, int]]) -> list[Batch]:
    """``(run, task, extra_trials)`` lines grouped by run and count, in order of first
    appearance (lines asking for no trial left out)."""
    groups: dict[tuple[str, int], list[str]] = {}
    for run, task, extra in lines:
        if extra > 0:
            groups.setdefault((run, extra), []).append(task)
    return [Batch(run, n, tuple(tasks)) for (run, n), tasks in groups.items()]


def _comment(text: str) -> str:
    """A log string inside a ``#`` comment: one line, nothing that could end it."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


HEADERS = {
    "inspect": "# Set TASK (the Inspect task: file.py@name or a registry name) and MODEL first.",
    "harbor": "# Set DATASET (name@version), AGENT and MODEL first (for a local dataset, --path DIR "
              "instead of --dataset).",
    "tau2": "# Set DOMAIN (airline, retail, telecom, ...) and AGENT_LLM first.",
}


def commands(harness: str, plan_batches: Sequence[Batch], known: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """The script for ``harness`` (one of :data:`HARNESSES`): a header naming the variables,
    then per batch a comment (run, tasks, trials) and its command. ``known``: per run, what its
    log says of how it was run (Harbor's job ``config.json``: ``agent``, ``model``, ``dataset``
    or ``path``), written into its commands shell-quoted; a placeholder stays only for what the
    log does not say (and the header then names it)."""
    if harness not in HARNESSES:
        raise ValueError(f"harness ({harness!r}) must be one of {', '.join(HARNESSES)}")
    # a value holding a control character or line break is never written (it could act on the
    # terminal that shows the script): its placeholder stays, as for a value the log lacks
    known = {run: {k: v for k, v in got.items() if v.isprintable()} for run, got in (known or {}).items()}
    lines = [line for b in plan_batches for line in
             [f"# run {_comment(b.run)}: {len(b.tasks)} task(s), {b.trials} more trial(s) each",
              *_command(harness, b, known.get(b.run, {}))]]
    out = [HEADERS[harness]]
    if harness == "harbor" and any(known.values()):
        unset = [name for name in ("DATASET", "AGENT", "MODEL") if any(f'"${name}"' in line for line in lines)]
        out = [("# Set " + " and ".join(unset) + " first; the rest is from each job's config.json."
                if unset else "# Agent, model and dataset from each job's config.json.")]
    if not plan_batches:
        out.append("# The plan asks for no more trials.")
    return "\n".join(out + lines) + "\n"


def _why_not(harness: str, task: str) -> str | None:
    """Why ``task`` cannot be passed to ``harness`` as it is, or None."""
    if not task.isprintable():
        return "it holds a control character or line break"
    if harness == "inspect" and "," in task:
        return "a comma cannot be written in --sample-id"
    if harness == "inspect" and task != task.strip():
        return "--sample-id strips the spaces around an id"
    if harness == "tau2" and task.startswith("-"):
        return "--task-ids would read it as an option"
    return None


def _command(harness: str, b: Batch, known: Mapping[str, str] | None = None) -> list[str]:
    ok = [t for t in b.tasks if _why_not(harness, t) is None]
    out = [f"# left out ({_why_not(harness, t)}): {_comment(t)}" for t in b.tasks if _why_not(harness, t)]
    if not ok:
        return out
    if harness == "inspect":
        ids = ",".join(glob.escape(t) for t in ok)
        return [*out, f'inspect eval "$TASK" --model "$MODEL" --sample-id {shlex.quote(ids)} '
                      f"--epochs {b.trials}"]
    if harness == "harbor":
        got = known or {}
        names = " ".join(f"--include-task-name {shlex.quote(glob.escape(t))}" for t in ok)
        where = (f"--dataset {shlex.quote(got['dataset'])}" if "dataset" in got
                 else f"--path {shlex.quote(got['path'])}" if "path" in got else '--dataset "$DATASET"')
        agent = shlex.quote(got["agent"]) if "agent" in got else '"$AGENT"'
        model = shlex.quote(got["model"]) if "model" in got else '"$MODEL"'
        return [*out, f"harbor run {where} --agent {agent} --model {model} {names} --n-attempts {b.trials}"]
    ids = " ".join(shlex.quote(t) for t in ok)
    return [*out, f'tau2 run --domain "$DOMAIN" --agent-llm "$AGENT_LLM" --task-ids {ids} --num-trials {b.trials}']
