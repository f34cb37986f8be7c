"""lm-evaluation-harness per-document samples (``lm_eval --log_samples``):
``samples_<task>_<timestamp>.jsonl``, one JSON object per document (and per filter).

``doc_id`` is the task, each line a trial; the outcome is the line's per-document metric,
passing at ≥ ``--threshold``: the one named by ``--score-field`` / ``--pass-field``, else
the first number among the line's ``metrics`` list, else the first of :data:`METRICS`
present. pass@1 over documents is then lm-eval's own mean of that metric (``exact_match``,
``acc``). A file with several filters gives one run per filter (``RUN [filter]``).

Repeats: with ``repeats: N`` lm-eval keeps the N raw generations in ``resps`` but grades
only the filter's *reduced* value (first, majority vote), once per document: per-repeat
outcomes are not in the file. Such a file is read as one trial per document, and a notice
says so rather than guessing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from flaketui.loading.formats.base import LogFormat, Record, Tick, finish
from flaketui.loading.formats.wrapped import flat_head, top_fields
from flaketui.loading.jsonl import loads, loads_exact, read_line_at
from flaketui.loading.location import open_binary
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import RecordSink, _is_number
from flaketui.model import FieldMap, Problem, Source

NAME = re.compile(r"^samples_.+_(?P<stamp>[^_]+)\.jsonl$", re.IGNORECASE)
RESULTS = re.compile(r"^results_.+\.json$", re.IGNORECASE)
"""lm-eval's run-level ``results_<timestamp>.json``: the run's metadata, no trials."""
METRICS = ("exact_match", "acc", "acc_norm", "pass@1", "em", "correct", "accuracy", "f1")
"""Per-document metrics tried in this order when a line does not list its ``metrics``."""
_DEFAULT = FieldMap()


def _metric(obj: dict[str, Any], fields: FieldMap) -> tuple[str | None, Any]:
    """(name, value) of the metric that decides the outcome of this line."""
    chosen = [n for n in (fields.score, fields.passed) if n not in (_DEFAULT.score, _DEFAULT.passed)]
    names: list[str] = [n for names in chosen for n in names]
    if not names:
        listed = obj.get("metrics")
        names = [m for m in listed if isinstance(m, str) and _is_number(obj.get(m))] \
            if isinstance(listed, list) else []
        names += [m for m in METRICS if m in obj]
    for name in names:
        if name in obj:
            return name, obj[name]
    return None, None


def _trace(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The prompt(s) and graded response(s) as steps."""
    steps: list[dict[str, Any]] = []
    args = obj.get("arguments")
    prompts = [a.get("arg_0") for a in args.values() if isinstance(a, dict)] if isinstance(args, dict) else []
    for prompt in prompts:
        if prompt is not None:
            steps.append({"role": "user", "type": "prompt", "content": prompt})
    if "filtered_resps" in obj:
        steps.append({"role": "assistant", "type": "response", "content": obj["filtered_resps"],
                      "target": obj.get("target")})
    return steps


def convert(obj: dict[str, Any], fields: FieldMap, threshold: float) -> dict[str, Any] | str:
    """One samples line in flaketui's field names, or why it can't be a trial."""
    doc = obj.get("doc_id")
    if doc is None:
        return "no doc_id"
    name, value = _metric(obj, fields)
    if name is None:
        return "no per-document metric (give --score-field NAME)"
    if value is True or value is False:
        value = int(value)
    if not _is_number(value):
        return f"{name} must be a number, got {type(value).__name__}"
    return {"task": doc, "score": float(value), "trace": _trace(obj), "lm_eval_metric": name}


class LmEvalSamples(LogFormat):
    """``samples_*.jsonl`` of lm-evaluation-harness."""

    suffixes: ClassVar[tuple[str, ...]] = (".jsonl", ".json")
    kinds: ClassVar[tuple[str, ...]] = ("lm-eval",)

    def matches(self, path: Path, head: bytes) -> bool:
        flat = flat_head(head)
        if RESULTS.match(path.name):
            return flat.startswith(b'{"results":{') and b'"alias"' in flat
        return NAME.match(path.name) is not None and flat.startswith(b'{"doc_id"')

    def run_meta(self, path: Path, fields: FieldMap) -> dict[str, Any]:
        found = NAME.match(path.name)
        if found is None:
            return {}
        results = path.with_name(f"results_{found['stamp']}.json")
        try:
            top = {k: loads(bytes(memoryview(v))) for k, v in top_fields(results.read_bytes()).items()
                   if k in ("model_name", "model_source", "git_hash", "config")}
        except (OSError, ValueError):
            return {}
        config = top.pop("config", None)
        if isinstance(config, dict):
            top.update({k: config[k] for k in ("model_args", "limit", "random_seed") if k in config})
        return {k: v for k, v in top.items() if v is not None and not isinstance(v, (dict, list))}

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        spath = str(path)
        if RESULTS.match(path.name):
            tick(size)
            return Parsed.empty([])  # the run's figures and config: no trials
        if size == 0:
            return Parsed.empty([Problem(spath, None, "empty file, no trials")])
        with open_binary(path) as fh:
            data = fh.read()
        tick(size)
        sink = RecordSink(FieldMap(threshold=fields.threshold), default_run)
        problems: list[Problem] = []
        repeats = 0
        pos, line = 0, 1
        while pos < len(data):
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            raw = data[pos:end]
            if raw.strip():
                reason, n = self._add(sink, raw, pos, line, fields, default_run)
                repeats = max(repeats, n)
                if reason is not None:
                    problems.append(Problem(spath, line, reason))
            pos, line = end + 1, line + 1
        if repeats > 1:
            problems.append(Problem(spath, None, (
                f"lm-eval repeats: each document has up to {repeats} generations, graded once after "
                "the filter reduced them (first, majority vote): read as one trial per document; "
                "the per-repeat outcomes are not in this file"), notice=True))
        return finish(spath, sink, problems)

    @staticmethod
    def _add(sink: RecordSink, raw: bytes, offset: int, line: int, fields: FieldMap,
             default_run: str) -> tuple[str | None, int]:
        try:
            obj = loads_exact(raw)  # a doc_id past 64 bits stays that number
        except (ValueError, RecursionError) as exc:  # orjson.JSONDecodeError, and bad UTF-8
            return f"not valid JSON ({exc})", 0
        if not isinstance(obj, dict):
            return "not a JSON object", 0
        resps = obj.get("resps")
        n = len(resps[0]) if isinstance(resps, list) and resps and isinstance(resps[0], list) else 0
        rec = convert(obj, fields, fields.threshold)
        if isinstance(rec, str):
            return rec, n
        flt = obj.get("filter")
        if isinstance(flt, str) and flt != "none":
            rec["run"] = f"{default_run} [{flt}]"
        return sink.add(rec, offset, len(raw), line), n

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        obj = read_line_at(source.path, "jsonl", offset, length)
        rec = convert(obj, FieldMap(), FieldMap().threshold) if isinstance(obj, dict) else {}
        out = dict(obj) if isinstance(obj, dict) else {}
        if isinstance(rec, dict):
            out.update(rec)
        return Record(out, None)
