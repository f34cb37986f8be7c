"""Terminal-Bench 1.x (``tb run``): the run-level ``results.json``
(``{"id", "results": [TrialResults, ...], "accuracy", "pass_at_k", ...}``) and the per-trial
``RUN/TASK/TRIAL/results.json`` (one ``TrialResults`` each). Schema:
``terminal_bench/harness/models.py`` (``BenchmarkResults``, ``TrialResults``).

``task_id`` is the task; the trial number is the ``i`` of ``trial_name`` ``"<task>.<i>-of-<n>"``
(the last such group: goose names end ``.<i>-of-<n>.<run id>``); ``is_resolved`` the outcome.
``is_resolved: null`` (test timeout, parse error, agent error) makes the trial *errored*,
``failure_mode`` its reason: Terminal-Bench itself counts it as a failure, which
``--errored-as fail`` reproduces (its ``accuracy`` and ``pass_at_k``). Token counts are
metrics. The run is named by the file, or its folder when the file is called
``results.json``; ``--run-name-from field`` takes the harness's run ``id``.
``run_metadata.json`` beside the results is the run's metadata (it holds no trials).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from flaketui.loading.formats.base import Tick
from flaketui.loading.formats.wrapped import HarnessJson, flat_head, top_fields
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import _is_number, _type_name
from flaketui.model import FieldMap

TRIAL_NAME = re.compile(r"\.(\d+)-of-\d+")
"""``.<i>-of-<n>`` in a ``trial_name``; the last match is the trial number."""
METADATA = "run_metadata.json"
MAX_TRIAL_DIGITS = 18
"""The longest trial number read from a ``trial_name`` (fits an int64)."""


def _is_trial_file(path: Path) -> bool:
    return path.name == "results.json" and TRIAL_NAME.search(path.parent.name) is not None


class TerminalBench(HarnessJson):
    """Terminal-Bench run-level and per-trial ``results.json``, and ``run_metadata.json``."""

    kinds: ClassVar[tuple[str, ...]] = ("terminal-bench",)
    records: ClassVar[str] = "results"

    def matches(self, path: Path, head: bytes) -> bool:
        name = path.name.lower()
        if not name.endswith(".json"):
            return False
        if name == METADATA:
            return b'"run_id"' in head
        flat = flat_head(head)
        return b'"trial_name":' in flat or b'"is_resolved":' in flat

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        if path.name.lower() == METADATA:
            tick(size)
            return Parsed.empty([])  # metadata of the run beside it, no trials
        return super().read(path, size, fields, default_run, workers, tick)

    def single(self, top: dict[str, Any]) -> bool:
        return "results" not in top and "task_id" in top

    def run_folder(self, path: Path) -> Path:
        return path.parent.parent.parent if _is_trial_file(path) else path.parent

    def run_name(self, path: Path) -> str:
        if _is_trial_file(path):
            return self.run_folder(path).name
        if path.name.lower() == "results.json":
            return path.parent.name or "results"
        return super().run_name(path)

    def file_run(self, path: Path, top: dict[str, Any], fields: FieldMap, default_run: str) -> str:
        if fields.run_name_from == "field" and "id" in top and not self.single(top):
            from flaketui.loading.jsonl import loads

            run_id = loads(bytes(memoryview(top["id"])))
            if isinstance(run_id, str) and run_id:
                return run_id
        return default_run

    def run_meta(self, path: Path, fields: FieldMap) -> dict[str, Any]:
        meta = self.run_folder(path) / METADATA
        try:
            top = top_fields(meta.read_bytes())
        except (OSError, ValueError):
            return {}
        from flaketui.loading.jsonl import loads

        out = {}
        for key in ("run_id", "agent_name", "model_name", "dataset_name", "dataset_version",
                    "n_attempts", "commit_hash", "start_time", "end_time", "accuracy"):
            if key in top:
                value = loads(bytes(memoryview(top[key])))
                if value is not None and not isinstance(value, (dict, list)):
                    out[key] = value
        return out

    def convert(self, obj: dict[str, Any], fields: FieldMap) -> dict[str, Any] | str:
        task = obj.get("task_id")
        if task is None:
            return "no task_id"
        rec: dict[str, Any] = {"task": task}
        name = obj.get("trial_name")
        if isinstance(name, str):
            found = TRIAL_NAME.findall(name)
            if found:
                if len(found[-1]) > MAX_TRIAL_DIGITS:  # int() of 4,300+ digits raises; no real trial is that long
                    return f"trial_name's trial number has {len(found[-1])} digits (at most {MAX_TRIAL_DIGITS})"
                rec["trial"] = int(found[-1])
        metrics = {key.removeprefix("total_"): obj[key]
                   for key in ("total_input_tokens", "total_output_tokens") if _is_number(obj.get(key))}
        if metrics:
            rec["metrics"] = metrics
        resolved = obj.get("is_resolved")
        if resolved is None:
            mode = obj.get("failure_mode")
            rec["error"] = (f"is_resolved is null ({mode})" if isinstance(mode, str) and mode != "unset"
                            else "is_resolved is null")
        elif resolved is True or resolved is False:
            rec["passed"] = resolved
        else:
            return f"is_resolved must be true, false or null, got {_type_name(resolved)}"
        return rec
