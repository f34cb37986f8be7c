"""τ²-bench results (``tau2 run``): one ``Results`` JSON object per run,
``{"timestamp", "info", "tasks", "simulations": [SimulationRun, ...]}``, and the directory
format (``results.json`` without ``simulations`` beside a ``simulations/`` folder of one
``SimulationRun`` JSON file each). Schema: sierra-research/tau2-bench
``src/tau2/data_model/simulation.py``.

A simulation is a trial: ``task_id`` the task, ``trial`` its number, ``reward_info.reward``
the score (passes at ≥ ``--threshold``, 1 − 1e-6 as τ²'s ``is_successful``), ``messages``
the trace, ``agent_cost`` / ``user_cost`` / ``duration`` metrics. A simulation that ended
in ``infrastructure_error`` (which τ² leaves out of every metric), or has no reward, is
*errored*, its reason kept. The run is named by the file (by the folder for the directory
format); ``info`` (models, domain, git commit, seed, ...) is kept as the run's metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from flaketui.loading.formats.base import Record, Tick
from flaketui.loading.formats.terminal_bench import FileLines
from flaketui.loading.formats.wrapped import error_text, flat_head, top_fields
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import _is_number, _type_name
from flaketui.model import FieldMap, Source

REWARD_PARTS = ("reward_breakdown", "action_checks", "db_check")
"""The parts of ``reward_info`` that a trial's extra fields also hold at the top."""
INFRASTRUCTURE_ERROR = "infrastructure_error"
"""τ²'s termination reason for a simulation that never ran properly (excluded by τ²)."""


def _holds_simulations(path: Path) -> bool:
    try:
        return "simulations" in top_fields(path.read_bytes())
    except (OSError, ValueError):
        return False


def _is_dir_results(path: Path) -> bool:
    return path.name == "results.json" and (path.parent / "simulations").is_dir()


def _is_simulation_file(path: Path) -> bool:
    return path.parent.name == "simulations" and (path.parent.parent / "results.json").is_file()


class Tau2Results(FileLines):
    """τ²-bench ``Results`` JSON files and per-simulation files."""

    kinds: ClassVar[tuple[str, ...]] = ("tau2",)
    records: ClassVar[str] = "simulations"

    def matches(self, path: Path, head: bytes) -> bool:
        if not path.name.lower().endswith(".json"):
            return False
        flat = flat_head(head)
        if flat.startswith(b'{"timestamp":') and b'"info":{' in flat:
            return True
        # a SimulationRun file: in a simulations/ folder beside results.json, or by its first keys
        return b'"task_id"' in head and (_is_simulation_file(path) or b'"termination_reason"' in head)

    def single(self, top: dict[str, Any]) -> bool:
        return "task_id" in top and "simulations" not in top

    def run_folder(self, path: Path) -> Path:
        return path.parent.parent if _is_simulation_file(path) else path.parent

    def run_name(self, path: Path) -> str:
        if _is_simulation_file(path) or _is_dir_results(path):
            return self.run_folder(path).name
        return super().run_name(path)

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        if _is_dir_results(path) and any((path.parent / "simulations").glob("*.json")):
            if not _holds_simulations(path):
                tick(size)
                return Parsed.empty([])  # the directory format: its trials are the files of simulations/
        return super().read(path, size, fields, default_run, workers, tick)

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        """The simulation as written, with ``reward_info``'s ``reward_breakdown``,
        ``action_checks`` and ``db_check`` also one key away (``review`` and
        ``user_only_review`` stay the raw objects τ² wrote, under those keys)."""
        obj, steps = super().read_record(source, offset, length, trace_names, max_steps)
        reward_info = obj.get("reward_info")
        if isinstance(reward_info, dict):
            for key in REWARD_PARTS:
                if key in reward_info and key not in obj:
                    obj[key] = reward_info[key]
        return Record(obj, steps)

    def run_meta(self, path: Path, fields: FieldMap) -> dict[str, Any]:
        results = path.parent.parent / "results.json" if _is_simulation_file(path) else path
        try:
            info = top_fields(results.read_bytes()).get("info")
        except (OSError, ValueError):
            return {}
        if info is None:
            return {}
        from flaketui.loading.jsonl import loads

        value = loads(bytes(memoryview(info)))
        return _summary(value) if isinstance(value, dict) else {}

    def convert(self, obj: dict[str, Any], fields: FieldMap) -> dict[str, Any] | str:
        task = obj.get("task_id")
        if task is None:
            return "no task_id"
        rec: dict[str, Any] = {"task": task}
        if "trial" in obj and obj["trial"] is not None:
            rec["trial"] = obj["trial"]
        messages = obj.get("messages")
        if messages is not None:
            if not isinstance(messages, list):
                return f"messages must be a list, got {_type_name(messages)}"
            rec["trace"] = messages
        metrics = {name: obj[key] for key, name in (("agent_cost", "agent_cost_usd"),
                                                     ("user_cost", "user_cost_usd"),
                                                     ("duration", "duration_s"))
                   if _is_number(obj.get(key))}
        if metrics:
            rec["metrics"] = metrics
        reason = obj.get("termination_reason")
        info = obj.get("info") if isinstance(obj.get("info"), dict) else {}
        if reason == INFRASTRUCTURE_ERROR:
            detail = info.get("error")
            rec["error"] = f"{INFRASTRUCTURE_ERROR}: {error_text(detail)}" if detail else INFRASTRUCTURE_ERROR
            return rec
        reward_info = obj.get("reward_info")
        if reward_info is None:
            rec["error"] = f"no reward_info (termination_reason: {reason})"
            return rec
        if not isinstance(reward_info, dict):
            return f"reward_info must be an object, got {_type_name(reward_info)}"
        reward = reward_info.get("reward")
        if reward is None:
            rec["error"] = f"no reward_info.reward (termination_reason: {reason})"
            return rec
        if not _is_number(reward):
            return f"reward_info.reward must be a number, got {_type_name(reward)}"
        rec["score"] = reward
        return rec


def _summary(info: dict[str, Any]) -> dict[str, Any]:
    """The run facts of τ²'s ``info`` worth showing: models, domain, commit, seed, trials
    (long texts such as the policy and the user guidelines, and API arguments, left out)."""
    agent = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    user = info.get("user_info") if isinstance(info.get("user_info"), dict) else {}
    env = info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
    out = {
        "agent": agent.get("implementation"),
        "agent_model": agent.get("llm"),
        "user": user.get("implementation"),
        "user_model": user.get("llm"),
        "domain": env.get("domain_name"),
        "git_commit": info.get("git_commit"),
        "seed": info.get("seed"),
        "num_trials": info.get("num_trials"),
        "max_steps": info.get("max_steps"),
        "max_errors": info.get("max_errors"),
    }
    return {k: v for k, v in out.items() if v is not None and not isinstance(v, (dict, list))}
