"""Harbor job folders (``harbor run`` / ``harbor jobs start``; the Terminal-Bench 2 harness).

Layout (Harbor ``src/harbor/models/job/result.py``, ``models/trial/result.py``,
``models/trial/paths.py``)::

    JOB/config.json            the job's configuration (agents, datasets, n_attempts, ...)
    JOB/result.json            JobResult: id, started_at, n_total_trials, stats (no trials)
    JOB/<task cut>__<random>/  one folder per trial
        result.json            TrialResult: task_name, trial_name, config, agent_info,
                               agent_result, verifier_result.rewards, exception_info, ...
        agent/trajectory.json  the trace, in ATIF (:mod:`flaketui.loading.formats.atif`)
        verifier/reward.txt|reward.json

A trial's ``result.json`` is one trial: ``task_name`` its task (never the cut folder name;
never the checksum, which differs between variants of one task), its reward
``verifier_result.rewards[--reward]`` (default ``reward``; a lone reward of another name is
taken) its score, passing at ``>= --threshold`` (alias ``--pass-threshold``, default 1).
``exception_info`` makes it *errored*, its type and message the reason, also when a reward
is present (a timeout is verified with reward 0); so does ``verifier_result: null``.
Harbor's own figures count every trial: ``--errored-as fail`` reproduces them. The reward is
also the metric ``reward``, 0 where there is none (Harbor's ``Mean`` metric: a missing reward
counts 0, divided by all trials); token counts and cost are metrics where reported (0 and
null are "not reported", never a measured 0).

The run is the folder that directly holds the trial folders (the job folder), named by that
folder; a folder of several job folders gives one run per job. The job-level ``result.json``
is a summary: it gives no trials, and a notice names the trials it lists that are not on
disk. Every other file inside a trial folder (the trajectory, the agent's own logs) is read
with its trial, never as trials of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from flaketui.loading.formats.base import LogFormat, Record, Tick, finish
from flaketui.loading.formats.wrapped import flat_head, top_fields
from flaketui.loading.location import RemotePath, open_binary
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import RecordSink, _is_number, _type_name
from flaketui.model import FieldMap, Problem, Source

TRAJECTORY = Path("agent") / "trajectory.json"
"""Where a trial folder keeps its ATIF trace."""
HEAD = 512
DEPTH = 3
"""How far below a trial folder its files may sit (``agent/sessions/x.jsonl``)."""


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(HEAD)
    except OSError:
        return b""


def _is_trial_head(head: bytes) -> bool:
    flat = flat_head(head)
    return flat.startswith(b"{") and b'"task_name":' in flat and b'"trial_name":' in flat


def _is_job_head(head: bytes) -> bool:
    flat = flat_head(head)
    return flat.startswith(b"{") and b'"n_total_trials":' in flat and b'"task_name":' not in flat


def trial_folder(path: Path) -> Path | None:
    """The Harbor trial folder that ``path`` (a file) sits in, below or beside its ``result.json``."""
    if isinstance(path, RemotePath):
        return None
    folder = path.parent
    for _ in range(DEPTH + 1):
        result = folder / "result.json"
        if result != path and result.is_file() and _is_trial_head(_head(result)):
            return folder
        if folder.parent == folder:
            break
        folder = folder.parent
    return None


def _is_trial_result(path: Path, head: bytes) -> bool:
    return path.name == "result.json" and _is_trial_head(head)


def _one_line(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else str(value)
    lines = text.strip().splitlines()
    return (lines[0] if lines else "")[:limit]


class HarborJob(LogFormat):
    """Harbor's trial ``result.json`` files (one trial each), the job's ``result.json`` and
    ``config.json``, and every other file of a trial folder (read with its trial)."""

    suffixes: ClassVar[tuple[str, ...]] = (".json",)
    kinds: ClassVar[tuple[str, ...]] = ("harbor",)

    def matches(self, path: Path, head: bytes) -> bool:
        name = path.name.lower()
        if name == "result.json" and (_is_trial_head(head) or _is_job_head(head)):
            return True
        if isinstance(path, RemotePath):
            return False
        if name == "config.json" and _is_job_head(_head(path.parent / "result.json")):
            return True
        return trial_folder(path) is not None

    def run_folder(self, path: Path) -> Path:
        if path.name == "result.json" and _is_trial_head(_head(path)):
            return path.parent.parent
        trial = trial_folder(path)
        if trial is not None:
            return trial.parent
        return path.parent  # the job's own files

    def run_name(self, path: Path) -> str:
        return self.run_folder(path).absolute().name or "harbor"

    def run_meta(self, path: Path, fields: FieldMap) -> dict[str, Any]:
        job = self.run_folder(path)
        out: dict[str, Any] = {}
        try:
            top = top_fields((job / "config.json").read_bytes())
        except (OSError, ValueError):
            top = {}
        from flaketui.loading.jsonl import loads

        for key in ("job_name", "n_attempts", "timeout_multiplier"):
            if key in top:
                value = loads(bytes(memoryview(top[key])))
                if value is not None and not isinstance(value, (dict, list)):
                    out[key] = value
        if "agents" in top:
            agents = loads(bytes(memoryview(top["agents"])))
            if isinstance(agents, list) and agents and isinstance(agents[0], dict):
                for key, name in (("name", "agent"), ("model_name", "model")):
                    value = agents[0].get(key)
                    if isinstance(value, str):
                        out[name] = value
        return out

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        spath = str(path)
        if path.name != "result.json":
            tick(size)
            return Parsed.empty([])  # the job's config, or a file of a trial folder: read with its trial
        with open_binary(path) as fh:
            data = fh.read()
        tick(size)
        if _is_job_head(data[:HEAD]):
            return Parsed.empty(self._missing_trials(path, data))
        from flaketui.loading.jsonl import loads

        try:
            obj = loads(data)
        except ValueError as exc:
            return Parsed.empty([Problem(spath, None, f"not valid JSON ({exc})")])
        if not isinstance(obj, dict):
            return Parsed.empty([Problem(spath, None, "not a JSON object")])
        problems: list[Problem] = []
        rec = self.convert(obj, fields)
        if isinstance(rec, str):
            return Parsed.empty([Problem(spath, 1, rec)])
        trajectory = path.parent / TRAJECTORY
        if trajectory.is_file():
            from flaketui.loading.formats.atif import head_problem

            why = head_problem(_head(trajectory))
            if why is None:
                rec["trace"] = [None]  # marks the trial as traced; read_record reads the steps
            else:
                problems.append(Problem(str(trajectory), None, f"{why}; the trial is kept without its trace",
                                        notice=True))
        sink = RecordSink(FieldMap(threshold=fields.threshold), default_run)
        reason = sink.add(rec, 0, len(data), 1)
        if reason is not None:
            problems.append(Problem(spath, 1, reason))
        return finish(spath, sink, problems)

    def _missing_trials(self, path: Path, data: bytes) -> list[Problem]:
        """A notice naming the trials the job's ``result.json`` lists that are not on disk."""
        from flaketui.loading.jsonl import loads

        try:
            doc = loads(data)
        except ValueError as exc:
            return [Problem(str(path), None, f"not valid JSON ({exc})")]
        stats = doc.get("stats") if isinstance(doc, dict) else None
        evals = stats.get("evals") if isinstance(stats, dict) else None
        listed: set[str] = set()
        for ev in evals.values() if isinstance(evals, dict) else ():
            if not isinstance(ev, dict):
                continue
            tables = [ev["exception_stats"]] if isinstance(ev.get("exception_stats"), dict) else []
            if isinstance(ev.get("reward_stats"), dict):  # {reward name: {value: [trial names]}}
                tables.extend(t for t in ev["reward_stats"].values() if isinstance(t, dict))
            for table in tables:
                for names in table.values():
                    if isinstance(names, list):
                        listed.update(n for n in names if isinstance(n, str) and n and "/" not in n
                                      and "\\" not in n and n not in (".", ".."))
        missing = sorted(n for n in listed if not (path.parent / n / "result.json").is_file())
        if not missing:
            return []
        shown = ", ".join(missing[:5]) + (f", and {len(missing) - 5} more" if len(missing) > 5 else "")
        return [Problem(str(path), None, f"the job lists {len(missing)} trials not on disk: {shown}", notice=True)]

    def convert(self, obj: dict[str, Any], fields: FieldMap) -> dict[str, Any] | str:
        """One trial's ``result.json`` in flaketui's field names, or why it can't be a trial."""
        task = obj.get("task_name")
        if not isinstance(task, str) or not task:
            got = "an empty string" if task == "" else "null" if task is None else _type_name(task)
            return f"task_name must be a non-empty string, got {got}"
        rec: dict[str, Any] = {"task": task}
        metrics: dict[str, float] = {}
        agent = obj.get("agent_result")
        if isinstance(agent, dict):
            for key, name in (("n_input_tokens", "input_tokens"), ("n_output_tokens", "output_tokens"),
                              ("n_cache_tokens", "cache_tokens"), ("cost_usd", "cost_usd")):
                value = agent.get(key)
                if _is_number(value) and value > 0:
                    metrics[name] = value
        verifier = obj.get("verifier_result")
        exception = obj.get("exception_info")
        reward: Any = None
        if verifier is not None:
            if not isinstance(verifier, dict):
                return f"verifier_result must be an object or null, got {_type_name(verifier)}"
            rewards = verifier.get("rewards")
            if rewards is not None and not isinstance(rewards, dict):
                return f"verifier_result.rewards must be an object or null, got {_type_name(rewards)}"
            if rewards:
                if fields.reward in rewards:
                    reward = rewards[fields.reward]
                elif fields.reward == FieldMap.reward and len(rewards) == 1:
                    reward = next(iter(rewards.values()))
                else:
                    names = ", ".join(str(k) for k in list(rewards)[:8])
                    return f"verifier_result.rewards has no {fields.reward!r} (has {names}; --reward NAME to choose)"
                if reward is not None and (not _is_number(reward) or reward != reward or abs(reward) == float("inf")):
                    return f"verifier_result.rewards.{fields.reward} must be a finite number, got {_type_name(reward)}"
        if reward is not None:
            rec["score"] = reward
        metrics["reward"] = reward if reward is not None else 0  # Harbor's Mean: no reward counts 0
        if exception is not None:
            if isinstance(exception, dict):
                kind = exception.get("exception_type")
                message = _one_line(exception.get("exception_message") or "")
                kind_s = kind if isinstance(kind, str) and kind else "exception"
                rec["error"] = f"{kind_s}: {message}" if message else kind_s
            else:
                rec["error"] = f"exception_info: {_one_line(exception)}"
        elif verifier is None:
            rec["error"] = "verifier_result is null (the trial was not verified)"
        elif reward is None:
            rec["error"] = "verifier_result has no reward"
        rec["metrics"] = metrics
        return rec

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        from flaketui.loading.jsonl import loads

        path = Path(source.path)
        with open_binary(path) as fh:
            obj = loads(fh.read())
        if not isinstance(obj, dict):
            return Record({}, None)
        rec = self.convert(obj, FieldMap())
        merged = {k: v for k, v in obj.items() if not isinstance(rec, dict) or k not in rec}
        if isinstance(rec, dict):
            merged.update(rec)
        merged.pop("trace", None)
        trajectory = path.parent / TRAJECTORY
        if trajectory.is_file():
            from flaketui.loading.formats.atif import AtifError, to_steps

            name = trace_names[0] if trace_names else "trace"
            try:
                merged[name] = to_steps(loads(trajectory.read_bytes()))
            except (AtifError, ValueError) as exc:
                merged["trace_problem"] = f"{trajectory}: {exc}"
        return Record(merged, None)
