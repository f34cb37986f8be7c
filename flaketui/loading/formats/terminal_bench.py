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

A run folder holds the run-level ``results.json`` *and* one ``TASK/TRIAL/results.json`` per
trial: the same trials twice. Each is read once (:meth:`TerminalBench.read_once`): from its
per-trial file when that is being read, else from the run-level file (whose item numbers are
kept); the run-level file alone still gives every trial. The run-level file's ``id``,
``accuracy`` and ``pass_at_k`` are the run's metadata beside ``run_metadata.json``'s.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from flaketui.loading.formats.base import Record, Tick
from flaketui.loading.formats.wrapped import HarnessJson, Unreadable, flat_head, top_fields
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import _is_number, _type_name
from flaketui.model import FieldMap, Source

TRIAL_NAME = re.compile(r"\.(\d+)-of-\d+")
"""``.<i>-of-<n>`` in a ``trial_name``; the last match is the trial number."""
METADATA = "run_metadata.json"
MAX_TRIAL_DIGITS = 18
"""The longest trial number read from a ``trial_name`` (fits an int64)."""


def _is_trial_file(path: Path) -> bool:
    return path.name == "results.json" and TRIAL_NAME.search(path.parent.name) is not None


class FileLines(HarnessJson):
    """A :class:`HarnessJson` whose trial's ``line`` is the file line where the trial's object
    starts (a pretty-printed τ² or Terminal-Bench file: ``o`` / ``$EDITOR +N`` and the export's
    ``line`` land on it), not its item number; a problem still names its item (``item N:``).
    The lines are counted once per file, at the items' offsets (no per-line Python)."""

    _lines = threading.local()

    def items(self, path: Path, data: bytes, top: dict[str, Any]) -> list[tuple[int, bytes]]:
        found = super().items(path, data, top)
        offsets = np.fromiter((at for at, _ in found), dtype=np.int64, count=len(found))
        newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) if found else np.empty(0, np.int64)
        lines = np.searchsorted(newlines, offsets) + 1
        self._lines.by_offset = dict(zip(offsets.tolist(), lines.tolist(), strict=True))
        return found

    def _add(self, sink: Any, raw: bytes, offset: int, line: int, fields: FieldMap) -> str | None:
        by_offset = getattr(self._lines, "by_offset", None) or {}
        return super()._add(sink, raw, offset, by_offset.get(offset, line), fields)

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        try:
            return super().read(path, size, fields, default_run, workers, tick)
        finally:
            self._lines.by_offset = None


@lru_cache(maxsize=64)
def _summary_of(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """The run-level figures of the ``results.json`` at ``path`` (``id``, ``accuracy``,
    ``pass_at_k`` as ``pass_at_K``, ``n_resolved``, ``n_unresolved``); empty for another file."""
    from flaketui.loading.jsonl import loads

    try:
        with open(path, "rb") as fh:
            top = top_fields(fh.read())
    except (OSError, Unreadable):
        return {}
    if "results" not in top:
        return {}
    out: dict[str, Any] = {}
    for key, name in (("id", "run_uuid"), ("accuracy", "accuracy"), ("n_resolved", "n_resolved"),
                      ("n_unresolved", "n_unresolved")):
        if key in top:
            value = loads(bytes(memoryview(top[key])))
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                out[name] = value
    if "pass_at_k" in top:
        value = loads(bytes(memoryview(top["pass_at_k"])))
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    out[f"pass_at_{k}"] = v
    return out


class TerminalBench(FileLines):
    """Terminal-Bench run-level and per-trial ``results.json``, and ``run_metadata.json``."""

    kinds: ClassVar[tuple[str, ...]] = ("terminal-bench",)
    records: ClassVar[str] = "results"
    harness: ClassVar[str] = "Terminal-Bench"
    errored_as: ClassVar[str] = "fail"

    def published(self, path: Path) -> dict[str, Any]:
        """The run-level ``results.json``'s ``accuracy`` and ``pass_at_k`` (``pass_at_K``) of the
        run of ``path``: what Terminal-Bench computed over the trials that file holds."""
        folder = self.run_folder(path)
        summary = path if not _is_trial_file(path) and path.name.lower() != METADATA else folder / "results.json"
        try:
            st = summary.stat()
        except OSError:
            return {}
        got = _summary_of(str(summary), st.st_mtime_ns, st.st_size)
        return {k: v for k, v in got.items() if k == "accuracy" or k.startswith("pass_at_")}

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

    def read_once(self, paths: list[Path], pieces: list[Parsed]) -> list[Parsed]:
        """Drop from each run-level ``results.json`` the trials that a per-trial
        ``RUN/TASK/TRIAL/results.json`` of the same run folder, also read, gives (the same
        task and trial number); the other trials, and their item numbers, stay."""
        given: dict[Path, set[tuple[str, int]]] = {}
        for path, piece in zip(paths, pieces, strict=True):
            if _is_trial_file(path):
                keys = given.setdefault(self.run_folder(path).absolute(), set())
                keys.update((piece.tasks[t], k) for t, k in zip(piece.task.tolist(), piece.trial.tolist(),
                                                                strict=True) if k >= 0)
        if not given:
            return pieces
        out = list(pieces)
        for i, (path, piece) in enumerate(zip(paths, pieces, strict=True)):
            keys = None if _is_trial_file(path) else given.get(path.parent.absolute())
            if not keys or not len(piece):
                continue
            tasks = piece.tasks
            keep = np.fromiter(((tasks[t], k) not in keys for t, k in zip(piece.task.tolist(),
                                                                           piece.trial.tolist(), strict=True)),
                               dtype=bool, count=len(piece))
            if not keep.all():
                out[i] = piece.take(keep)
        return out

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
        folder = self.run_folder(path)
        summary = path if not _is_trial_file(path) and path.name.lower() != METADATA else folder / "results.json"
        try:
            st = summary.stat()
            out: dict[str, Any] = dict(_summary_of(str(summary), st.st_mtime_ns, st.st_size))
        except OSError:
            out = {}
        meta = folder / METADATA
        try:
            top = top_fields(meta.read_bytes())
        except (OSError, ValueError):
            return out
        from flaketui.loading.jsonl import loads

        for key in ("run_id", "agent_name", "model_name", "dataset_name", "dataset_version",
                    "n_attempts", "commit_hash", "start_time", "end_time", "accuracy"):
            if key in top and not (key == "accuracy" and key in out):  # the run-level file's: of the trials read
                value = loads(bytes(memoryview(top[key])))
                if value is not None and not isinstance(value, (dict, list)):
                    out[key] = value
        return out

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        """The trial as written, with its start and end also under ``started_at`` /
        ``finished_at`` (Terminal-Bench writes ``trial_started_at`` / ``trial_ended_at``), where
        the outage detector reads a trial's time."""
        obj, steps = super().read_record(source, offset, length, trace_names, max_steps)
        for theirs, ours in (("trial_started_at", "started_at"), ("trial_ended_at", "finished_at")):
            if obj.get(theirs) is not None and ours not in obj:
                obj[ours] = obj[theirs]
        return Record(obj, steps)

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
