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
disk, and how many of the ``n_total_trials`` it counts are. Every other file inside a trial
folder (the trajectory, the agent's own logs) is read with its trial, never as trials of its own.

A folder someone assembled may hold the trials of several jobs (each trial's
``config.job_id`` says which). It stays one run, and a notice names the jobs and the
configuration keys that differ between them (``timeout_multiplier 1.0 vs 2.0``): a
confound within the run. The run's metadata (what a comparison's confound check reads) is
the job's ``config.json`` where there is one, else the trials' own ``config``: agent,
model, timeout multiplier, the jobs and what differs between them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from functools import lru_cache
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


def _is_atif_head(head: bytes) -> bool:
    flat = flat_head(head)
    return flat.startswith(b"{") and b'"schema_version":"ATIF-v' in flat


def _is_trial_result(path: Path, head: bytes) -> bool:
    return path.name == "result.json" and _is_trial_head(head)


CONFIG_SKIPPED = frozenset({"trial_name", "trials_dir", "job_id", "task", "env"})
"""Parts of a trial's ``config`` that differ between trials of one job (its name, its task)
or say nothing about how it was run (``env``, which Harbor redacts): never a confound."""
CONFIG_VALUE_CHARS = 80
"""A configuration value longer than this (as JSON) is shown cut."""


@dataclass(frozen=True)
class JobMix:
    """The Harbor jobs whose trials one run folder holds: each job's name and trial count, in
    order of appearance, and the configuration keys whose values differ between the jobs
    (dotted key → the distinct values, as JSON text)."""

    jobs: tuple[tuple[str, int], ...]
    differ: dict[str, tuple[str, ...]]
    first: dict[str, str]
    """The first trial's flattened ``config`` (agent, model, timeouts), as JSON text."""

    def describe(self) -> str:
        """``timeout_multiplier 1.0 vs 2.0; agent.model_name "a" vs "b"`` (empty when they agree)."""
        return "; ".join(f"{key} {' vs '.join(values)}" for key, values in self.differ.items())


CONFIG_DEPTH = 16
"""How deep a trial's ``config`` is flattened; a deeper value is one entry that says it was cut
(a config is log data: 1,000 levels must not exhaust the recursion)."""


def _flat_config(config: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, str]:
    import orjson

    out: dict[str, str] = {}
    for key, value in config.items():
        if (not prefix and key in CONFIG_SKIPPED) or key == "env":
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            if depth + 1 >= CONFIG_DEPTH:
                out[name] = f"(cut: nested over {CONFIG_DEPTH} levels)"
            else:
                out.update(_flat_config(value, name + ".", depth + 1))
            continue
        try:
            text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        except TypeError:  # orjson stops at 255 levels of lists: say what was cut, not str() it
            text = f"(cut: nested over {CONFIG_DEPTH} levels)" if isinstance(value, list) else str(value)[:200]
        out[name] = text if len(text) <= CONFIG_VALUE_CHARS else text[: CONFIG_VALUE_CHARS - 1] + "…"
    return out


def _job_label(config: dict[str, Any]) -> str:
    """A job's name as its trials give it: the last part of ``trials_dir`` (text, never opened),
    else the start of ``job_id``."""
    where = config.get("trials_dir")
    if isinstance(where, str) and where.strip("/\\"):
        label = where.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        return label if len(label) <= CONFIG_VALUE_CHARS else label[: CONFIG_VALUE_CHARS - 1] + "…"
    job = config.get("job_id")
    return str(job)[:8] if job is not None else "(no job_id)"


TrialConfig = tuple[Any, str, dict[str, str]]
_CONFIGS: dict[tuple[str, int, int], TrialConfig | None] = {}
"""Each trial ``result.json``'s job id, job name and flattened ``config`` by (path, mtime,
size): filled when the trial is read, so the job mix of a load rereads no file."""


def _config_of(obj: Any) -> TrialConfig | None:
    config = obj.get("config") if isinstance(obj, dict) else None
    if not isinstance(config, dict):
        return None
    job = config.get("job_id")
    return (job if isinstance(job, (str, int, float)) else None), _job_label(config), _flat_config(config)


def _remember(key: tuple[str, int, int], value: TrialConfig | None) -> TrialConfig | None:
    if len(_CONFIGS) >= 1 << 16:
        _CONFIGS.clear()
    _CONFIGS[key] = value
    return value


def _trial_config(path: str, mtime_ns: int, size: int) -> TrialConfig | None:
    """One trial ``result.json``'s job id, job name and flattened ``config``, read once while
    the file is unchanged."""
    key = (path, mtime_ns, size)
    if key in _CONFIGS:
        return _CONFIGS[key]
    from flaketui.loading.jsonl import loads

    try:
        with open(path, "rb") as fh:
            obj = loads(fh.read())
    except (OSError, ValueError):
        return None
    return _remember(key, _config_of(obj))


def job_mix(results: list[Path]) -> JobMix | None:
    """The jobs of the trial ``result.json`` files of one run folder, or None when none gives
    a ``config``."""
    per_job: dict[Any, list[Any]] = {}  # job id → [label, trials, flattened config]
    first: dict[str, str] | None = None
    for path in results:
        try:
            st = path.stat()
        except OSError:
            continue
        got = _trial_config(str(path), st.st_mtime_ns, st.st_size)
        if got is None:
            continue
        key, label, flat = got
        if first is None:
            first = flat
        if key not in per_job:
            per_job[key] = [label, 0, flat]
        per_job[key][1] += 1
    if first is None:
        return None
    labels = [entry[0] for entry in per_job.values()]
    for key, entry in per_job.items():  # two jobs of one name (the same trials_dir): by their ids too
        if labels.count(entry[0]) > 1:
            entry[0] = f"{entry[0]} ({str(key)[:8] if key is not None else 'no job_id'})"
    configs = [entry[2] for entry in per_job.values()]
    keys = list(dict.fromkeys(k for c in configs for k in c))
    differ = {}
    for k in keys:
        values = tuple(dict.fromkeys(c.get(k, "(absent)") for c in configs))
        if len(values) > 1:
            differ[k] = values
    return JobMix(tuple((label, n) for label, n, _ in per_job.values()), differ, first)


def _trial_results(folder: Path) -> list[Path]:
    """The trial ``result.json`` files directly below ``folder`` (one per trial folder)."""
    out = []
    try:
        children = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    for entry in children:
        if entry.is_dir(follow_symlinks=False):
            result = Path(entry.path) / "result.json"
            if result.is_file() and _is_trial_head(_head(result)):
                out.append(result)
    return out


_META: dict[tuple[str, int, bool], tuple[JobMix | None, dict[str, Any]]] = {}
""":meth:`HarborJob.run_meta` by (run folder, its ``config.json``'s mtime, whether a trial
asked), with the job mix it was built from (a newer mix builds it again)."""
_MIXES: dict[tuple[str, int], JobMix | None] = {}
""":func:`folder_mix` by (folder, its mtime); a load's :meth:`HarborJob.read_once` puts there
the mix of the trials it read, so the run metadata read next sees the same."""


def folder_mix(folder: Path, results: list[Path] | None = None) -> JobMix | None:
    """:func:`job_mix` of a run folder's trials (``results``, else those on disk), kept while
    the folder's listing is unchanged (or until ``results`` are given again)."""
    try:
        key = (str(folder.absolute()), folder.stat().st_mtime_ns)
    except OSError:
        return None
    if results is not None or key not in _MIXES:
        if len(_MIXES) >= 64:
            _MIXES.clear()
        _MIXES[key] = job_mix(_trial_results(folder) if results is None else results)
    return _MIXES[key]


def episode_steps(doc: list[Any]) -> list[dict[str, Any]]:
    """A ``trajectory.json`` that is not ATIF but a list of ``{episode, prompt, response}`` (what
    some Harbor agents, SkillsBench's among them, write) as flaketui steps: each episode's prompt
    a ``user`` step and its response an ``agent`` step, both numbered by the episode.

    Raises
    ------
    ValueError
        If an item is not such an object (named by its index).
    """
    out: list[dict[str, Any]] = []
    for i, item in enumerate(doc):
        if not isinstance(item, dict) or not ({"prompt", "response"} & item.keys()):
            raise ValueError(f"not an ATIF trajectory, nor a list of {{episode, prompt, response}} "
                             f"(item {i} is not such an object)")
        episode = item.get("episode", i)
        for key, role in (("prompt", "user"), ("response", "agent")):
            if key in item:
                value = item[key]
                out.append({"role": role, "episode": episode,
                            "content": value if isinstance(value, (str, list)) else str(value)})
    return out


def _dataset(datasets: Any, tasks: Any) -> dict[str, str]:
    """What a job's ``config.json`` ran on, as ``harbor run`` takes it: ``dataset`` (a registry
    dataset's ``name@version``, or ``name``) or ``path`` (a local dataset's ``path``; else the one
    folder its ``tasks`` paths all sit in). Empty when it names several or none."""
    if isinstance(datasets, list) and len(datasets) == 1 and isinstance(datasets[0], dict):
        d = datasets[0]
        if isinstance(d.get("name"), str) and d["name"]:
            version = d.get("version")
            return {"dataset": f"{d['name']}@{version}" if isinstance(version, str) and version else d["name"]}
        if isinstance(d.get("path"), str) and d["path"]:
            return {"path": d["path"]}
    if isinstance(tasks, list) and tasks and all(isinstance(t, dict) and isinstance(t.get("path"), str) for t in tasks):
        parents = {t["path"].replace("\\", "/").rstrip("/").rpartition("/")[0] for t in tasks}
        if len(parents) == 1 and (parent := parents.pop()):
            return {"path": parent}
    return {}


def _lone_trial(trial: Path) -> bool:
    """Whether ``trial`` is a Harbor trial folder outside any job: its parent has no job-level
    ``result.json`` and holds no other trial folder."""
    parent = trial.parent
    if isinstance(trial, RemotePath) or _is_job_head(_head(parent / "result.json")):
        return False
    try:
        mtime = parent.stat().st_mtime_ns
    except OSError:
        return False
    return _trials_in(str(parent.absolute()), mtime) == 1


@lru_cache(maxsize=256)
def _trials_in(folder: str, mtime_ns: int) -> int:
    """How many trial folders ``folder`` holds, counted once while its listing is unchanged."""
    return len(_trial_results(Path(folder)))


@lru_cache(maxsize=64)
def _job_figures(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """:meth:`HarborJob.published` of the job ``result.json`` at ``path``, read once while unchanged."""
    from flaketui.loading.jsonl import loads

    try:
        with open(path, "rb") as fh:
            data = fh.read()
        if not _is_job_head(data[:HEAD]):
            return {}
        doc = loads(data)
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    out: dict[str, Any] = {}
    if _figure(doc.get("n_total_trials")):
        out["n_total_trials"] = doc["n_total_trials"]
    stats = doc.get("stats") if isinstance(doc.get("stats"), dict) else {}
    errors = stats.get("n_errors", stats.get("n_errored_trials"))
    if _figure(errors):
        out["n_errors"] = errors
    evals = stats.get("evals")
    if isinstance(evals, dict) and len(evals) == 1:
        metrics = next(iter(evals.values()), {}).get("metrics") if isinstance(next(iter(evals.values())), dict) \
            else None
        if isinstance(metrics, list) and metrics and isinstance(metrics[0], dict) and \
                _figure(metrics[0].get("mean")):
            out["mean"] = metrics[0]["mean"]
    return out


def _figure(value: Any) -> bool:
    """A published figure worth comparing: a finite number (a job file may say ``1e400``, which
    JSON reads as infinity, or a count past any float's integer range)."""
    return _is_number(value) and math.isfinite(value) and abs(value) < 2 ** 53


def _one_line(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else str(value)
    lines = text.strip().splitlines()
    return (lines[0] if lines else "")[:limit]


JOB_LOG = "job.log"
"""The job's log, beside its ``config.json``: Harbor's ``Job._init_logger`` writes every record
of its logger there at DEBUG, appending when the job is resumed."""
_RETRYING = rb"(?m)^Trial (.+?) failed with exception .*\. Retrying in [0-9.]+ seconds\.\.\.\r?$"
"""The line Harbor's trial queue logs each time it retries a trial whose every exception its
``RetryConfig`` allows (``TrialQueue._execute_trial_with_retries``): the retry reruns the trial
under its name, in its folder, and the attempt that errored leaves no other trace."""
_RETRIES: dict[tuple[str, int, int], dict[str, int]] = {}
""":func:`mark_attempt`'s count of retries by trial name, by (job log, mtime, size)."""


def mark_attempt(path: Path, obj: dict[str, Any], rec: dict[str, Any]) -> None:
    """Give the trial whose ``result.json`` is ``path`` (``obj``, converted to ``rec``) its
    attempt, the metric :data:`~flaketui.loading.records.ATTEMPT` Inspect's retried samples
    give: 1 + the times its job's log says Harbor's queue retried it; nothing where the log
    names no retry of it (a first attempt) or there is no log.

    A resumed job's reruns are not marked: ``harbor jobs resume`` deletes the folders of trials
    that errored with a filtered type (``CancelledError`` unless told) and the job reruns them
    under new names, like trials never started; only the queue's retries leave their trace.
    """
    name = obj.get("trial_name")
    if isinstance(path, RemotePath) or not isinstance(name, str):
        return
    log = path.parent.parent / JOB_LOG
    try:
        st = log.stat()
        key = (str(log), st.st_mtime_ns, st.st_size)
        counts = _RETRIES.get(key)
        if counts is None:
            import mmap
            import re
            from collections import Counter

            found: list[bytes] = []
            if st.st_size:
                with open(log, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
                    found = re.findall(_RETRYING, view)  # type: ignore[call-overload]
            counts = dict(Counter(n.decode("utf-8", "replace") for n in found))
            if len(_RETRIES) >= 64:
                _RETRIES.clear()
            _RETRIES[key] = counts
    except (OSError, ValueError):
        return
    retries = counts.get(name, 0)
    if retries:
        from flaketui.loading.records import ATTEMPT

        rec["metrics"][ATTEMPT] = 1.0 + retries


class HarborJob(LogFormat):
    """Harbor's trial ``result.json`` files (one trial each), the job's ``result.json`` and
    ``config.json``, and every other file of a trial folder (read with its trial)."""

    suffixes: ClassVar[tuple[str, ...]] = (".json",)
    kinds: ClassVar[tuple[str, ...]] = ("harbor",)
    harness: ClassVar[str] = "Harbor"
    errored_as: ClassVar[str] = "score"
    no_trace: ClassVar[str] = ("a Harbor trial's trace is its agent/trajectory.json (ATIF), and these trial "
                               "folders have no agent/trajectory.json (or one that is not ATIF: see the notices)")

    def published(self, path: Path) -> dict[str, Any]:
        """The job ``result.json``'s own figures for the job of ``path`` (a trial's
        ``result.json``): ``n_total_trials``, ``n_errors`` (``stats.n_errors``, Harbor 0.26's
        ``n_errored_trials``) and, when the job has one eval, its ``metrics[0].mean`` (Harbor's
        ``Mean``: a trial without a reward counts 0). Empty outside a job folder."""
        if isinstance(path, RemotePath) or path.name != "result.json":
            return {}
        job = path.parent.parent / "result.json"
        try:
            st = job.stat()
        except OSError:
            return {}
        return dict(_job_figures(str(job), st.st_mtime_ns, st.st_size))

    def matches(self, path: Path, head: bytes) -> bool:
        name = path.name.lower()
        if name == "result.json" and (_is_trial_head(head) or _is_job_head(head)):
            return True
        if isinstance(path, RemotePath):
            return name.endswith(".json") and _is_atif_head(head)
        if name == "config.json" and _is_job_head(_head(path.parent / "result.json")):
            return True
        return trial_folder(path) is not None or (name.endswith(".json") and _is_atif_head(head))

    def run_folder(self, path: Path) -> Path:
        """The job folder; a lone trial folder (no job's ``result.json`` above it and no other
        trial beside it: a trial copied out of its job, or renamed) is its own run folder."""
        if path.name == "result.json" and _is_trial_head(_head(path)):
            trial: Path | None = path.parent
        else:
            trial = trial_folder(path)
        if trial is None:
            return path.parent  # the job's own files
        return trial if _lone_trial(trial) else trial.parent

    def run_name(self, path: Path) -> str:
        return self.run_folder(path).absolute().name or "harbor"

    def run_meta(self, path: Path, fields: FieldMap) -> dict[str, Any]:
        """The job's ``config.json`` facts and the trials' own (:meth:`_trials_meta`); one
        answer per run folder while its configuration and listing are unchanged (every trial
        of a job gives the same)."""
        trial = path.name == "result.json" and _is_trial_head(_head(path))
        job = self.run_folder(path)
        try:
            config_mtime = (job / "config.json").stat().st_mtime_ns
        except OSError:
            config_mtime = -1
        mix = folder_mix(job) if trial else None
        key = (str(job.absolute()), config_mtime, trial)
        cached = _META.get(key)
        if cached is not None and cached[0] is mix:
            return dict(cached[1])
        out = self._job_meta(job)
        if trial and mix is not None:
            out.update(self._trials_meta(mix, out))
        if len(_META) >= 64:
            _META.clear()
        _META[key] = (mix, out)
        return dict(out)

    def _job_meta(self, job: Path) -> dict[str, Any]:
        """The job's name, attempts, timeout multiplier, agent and model from its ``config.json``."""
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
        out.update(_dataset(loads(bytes(memoryview(top["datasets"]))) if "datasets" in top else None,
                            loads(bytes(memoryview(top["tasks"]))) if "tasks" in top else None))
        return out

    def _trials_meta(self, mix: JobMix, known: dict[str, Any]) -> dict[str, Any]:
        """What the trials' own ``config`` says of their run: agent, model and timeout
        multiplier where the job's ``config.json`` did not say (an assembled folder has
        none), and, for trials of several jobs, the jobs and what differs between them."""
        from flaketui.loading.jsonl import loads

        out: dict[str, Any] = {}
        for key, name in (("agent.name", "agent"), ("agent.model_name", "model"),
                          ("timeout_multiplier", "timeout_multiplier")):
            if name not in known and key in mix.first:
                value = loads(mix.first[key].encode()) if not mix.first[key].endswith("…") else None
                if value is not None and not isinstance(value, (dict, list, bool)):
                    out[name] = value
        if len(mix.jobs) > 1:
            out["jobs"] = ", ".join(label for label, _ in mix.jobs)
            if mix.differ:
                out["jobs_differ"] = mix.describe()
        return out

    def read_once(self, paths: list[Path], pieces: list[Parsed]) -> list[Parsed]:
        """A notice for each run folder whose trials come from several Harbor jobs: it stays
        one run, and the notice names the jobs (with their trial counts) and the
        configuration keys that differ between them, a confound within the run."""
        folders: dict[Path, list[int]] = {}
        for i, path in enumerate(paths):
            if path.name == "result.json" and len(pieces[i]) and not isinstance(path, RemotePath):
                folders.setdefault(self.run_folder(path).absolute(), []).append(i)
        out = list(pieces)
        for folder, rows in folders.items():
            i = rows[0]
            mix = folder_mix(folder, [paths[j] for j in rows])
            if mix is None or len(mix.jobs) < 2:
                continue
            jobs = ", ".join(f"{label} ({n} trial{'s' if n != 1 else ''})" for label, n in mix.jobs)
            differ = (f"; their configurations differ in {mix.describe()}: a confound within the run"
                      if mix.differ else "; their configurations agree")
            notice = Problem(str(paths[i]), None,
                             f"trials of {len(mix.jobs)} Harbor jobs in one run {folder.name!r}: {jobs}{differ}",
                             notice=True)
            out[i] = replace(out[i], problems=[*out[i].problems, notice])
        return out

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        spath = str(path)
        if path.name != "result.json":
            if (isinstance(path, RemotePath) or trial_folder(path) is None) and path.name.lower() != "config.json":
                parsed = Parsed.empty([self._lone_trajectory(path)])
                tick(size)
                return parsed
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
        if not isinstance(path, RemotePath):
            try:
                st = path.stat()
                _remember((str(path), st.st_mtime_ns, st.st_size), _config_of(obj))
            except OSError:
                pass
        rec = self.convert(obj, fields)
        if isinstance(rec, str):
            return Parsed.empty([Problem(spath, 1, rec)])
        mark_attempt(path, obj, rec)  # the retry audit's attempt, where Harbor's queue retried the trial
        trajectory = path.parent / TRAJECTORY
        if trajectory.is_file():
            from flaketui.loading.formats.atif import head_problem

            head = _head(trajectory)
            why = head_problem(head)
            if why is None or head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"[":
                why = None  # ATIF, or a list of episodes (read as a trace: :func:`episode_steps`)
                rec["trace"] = [None]  # marks the trial as traced; read_record reads the steps
            else:
                problems.append(Problem(str(trajectory), None, f"{why}; the trial is kept without its trace",
                                        notice=True))
        sink = RecordSink(FieldMap(threshold=fields.threshold), default_run)
        reason = sink.add(rec, 0, len(data), 1)
        if reason is not None:
            problems.append(Problem(spath, 1, reason))
        return finish(spath, sink, problems)

    def _lone_trajectory(self, path: Path) -> Problem:
        """Why an ATIF trajectory outside a Harbor trial folder gives no trial: it holds a trace
        but no outcome (no reward, no task). Read whole, so a damaged one says what is wrong."""
        from flaketui.loading.formats.atif import AtifError, check_version, to_steps
        from flaketui.loading.jsonl import loads

        try:
            with open_binary(path) as fh:
                doc = loads(fh.read())
            if not isinstance(doc, dict):
                raise AtifError("not an ATIF trajectory (not a JSON object)")
            version = check_version(doc.get("schema_version"))
            to_steps(doc)  # checked whole; counted as the file numbers its steps
            steps = len(doc["steps"])
        except (AtifError, ValueError) as exc:
            return Problem(str(path), None, f"not a readable ATIF trajectory ({exc})")
        return Problem(str(path), None, f"an ATIF-v{version} trajectory ({steps} steps) holds a trace but no "
                       "outcome: open the Harbor trial or job folder it belongs to (its result.json gives the "
                       "task and reward), and the trajectory is read as that trial's trace")

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
        out = []
        if missing:
            shown = ", ".join(missing[:5]) + (f", and {len(missing) - 5} more" if len(missing) > 5 else "")
            out.append(Problem(str(path), None, f"the job lists {len(missing)} trials not on disk: {shown}",
                               notice=True))
        total = doc.get("n_total_trials") if isinstance(doc, dict) else None
        if _is_number(total) and math.isfinite(total) and not isinstance(path, RemotePath):
            on_disk = len(_trial_results(path.parent))
            if on_disk < total:
                said = int(total) if total < 1e15 else f"{total:.3g}"
                out.append(Problem(str(path), None, f"the job counts {said} trials (n_total_trials); "
                                   f"{on_disk} are on disk", notice=True))
        return out

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
        if max_steps != 0 and trajectory.is_file():  # no steps asked for (extra fields only): not read
            from flaketui.loading.formats.atif import AtifError, to_steps

            name = trace_names[0] if trace_names else "trace"
            try:
                doc = loads(trajectory.read_bytes())
                merged[name] = episode_steps(doc) if isinstance(doc, list) else to_steps(doc)
            except (AtifError, ValueError) as exc:
                merged["trace_problem"] = f"{trajectory}: {exc}"
        return Record(merged, None)
