"""Inspect AI eval logs: ``.eval`` zip archives, and ``.json`` logs that start like
``{"version": 2, "status": ...``.

They are read through the optional ``inspect_ai`` package (``pip install
'flaketui[inspect]'``): the Inspect maintainers say the format is not a frozen spec
and point to ``inspect_ai.log``'s readers. One log is one run; each (sample, epoch)
is a trial: the sample id is the task, the epoch the trial number, the scorer's
value the outcome, the sample's messages the trace.

A log scored by several scorers (an eval set's tasks often are) has one outcome per
sample from one scorer: ``--scorer NAME`` (the option also names a Harbor reward),
else the first of ``--score-field`` the log has, else the first scorer of the log's
results (the task's first ``scorer=``, as Inspect lists them). Every scorer's value is
also kept as the trial's ``grades`` (scorer → number), where the grader checks read a
trial's several grades, so a sample the scorers disagree on is seen as such.

An eval set's folder holds one log per task and model; a task retried leaves older logs of
it there when ``retry_cleanup`` was off or the set was interrupted. Inspect's own rule
(``inspect_ai._eval.evalset.latest_completed_task_eval_logs``) applies: each attempt's log is
seeded from the task's previous one, so the newest log of a task (same ``eval_set_id`` and
``task_id``; by file time) holds every sample the older ones do, and only it is read (a
notice names the others). Logs outside an eval set are each their own run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from flaketui.loading.formats.base import LogFormat, Record, Tick
from flaketui.loading.location import RemotePath, as_path, open_binary
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import ATTEMPT, RecordSink
from flaketui.model import FieldMap, InputError, Problem, Source

INSPECT = "inspect"
"""Source kind of an Inspect AI log; a trial's offset is its position in the log's
sample summaries."""
INSPECT_EXTRA = "pip install 'flaketui[inspect]'"
_INSPECT_JSON_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')

_SCORE_WORDS = {
    "C": 1.0, "CORRECT": 1.0, "YES": 1.0, "TRUE": 1.0, "PASS": 1.0, "PASSED": 1.0,
    "I": 0.0, "INCORRECT": 0.0, "NO": 0.0, "FALSE": 0.0, "FAIL": 0.0, "FAILED": 0.0,
    "N": 0.0, "P": 0.5, "PARTIAL": 0.5,
}
"""Inspect's score values as numbers: ``C``/``I``/``P``/``N`` are its CORRECT,
INCORRECT, PARTIAL and NOANSWER constants (``inspect_ai.scorer``), valued 1, 0,
0.5 and 0 as its ``value_to_float`` does; the words are the usual spellings."""


def _inspect_log() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError:
        raise InputError(
            f"reading Inspect AI logs needs the inspect extra: {INSPECT_EXTRA}"
        ) from None
    return log


_KEYS: dict[tuple[str, int, int], list[tuple[int | str, int]]] = {}
"""(sample id, epoch) by position, per (path, size, mtime): read back without rereading."""


def _sample_keys(path: Path, summaries: list[Any] | None = None) -> list[tuple[int | str, int]]:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _KEYS:
        if summaries is None:
            summaries = _inspect_log().read_eval_log_sample_summaries(str(path))
        _KEYS.clear()  # one log at a time is plenty: a trace is opened from one file
        _KEYS[key] = [(s.id, s.epoch) for s in summaries]
    return _KEYS[key]


def score_value(value: Any) -> float | None:
    """An Inspect score value as a number (see :data:`_SCORE_WORDS`), ``None`` if it is
    not one (a dict of several metrics, a free-text answer)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        word = value.strip().upper()
        if word in _SCORE_WORDS:
            return _SCORE_WORDS[word]
        try:
            return float(word)
        except ValueError:
            return None
    return None


class InspectLog(LogFormat):
    """An Inspect AI log, read with ``inspect_ai.log``; a trial's offset is its position
    in the log's sample summaries (its length is -1)."""

    suffixes: ClassVar[tuple[str, ...]] = (".eval", ".json")
    kinds: ClassVar[tuple[str, ...]] = (INSPECT,)

    def matches(self, path: Path, head: bytes) -> bool:
        """``.eval`` files, and ``.json`` files that start as an Inspect log does."""
        name = path.name.lower()
        if name.endswith(".eval"):
            return True
        return name.endswith(".json") and _INSPECT_JSON_HEAD.match(head.removeprefix(b"\xef\xbb\xbf")) is not None

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        why = refused(path)
        if why is not None:
            parsed = Parsed.empty([Problem(str(path), None, f"not a readable Inspect AI log ({why})")])
        else:
            parsed = read_inspect(path, fields, default_run)
        tick(size)
        return parsed

    def read_once(self, paths: list[Path], pieces: list[Parsed]) -> list[Parsed]:
        """Only the newest log of each eval-set task gives trials (see the module docstring);
        an older attempt's log gives a notice naming the newest instead."""
        groups: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for i, path in enumerate(paths):
            if not len(pieces[i]) or isinstance(path, RemotePath):
                continue  # a remote log's header is not fetched again
            try:
                eval_ = _inspect_log().read_eval_log(str(path), header_only=True).eval
                mtime = path.stat().st_mtime_ns
            except Exception:  # noqa: BLE001  a damaged log was named when it was read
                continue
            set_id, task_id = getattr(eval_, "eval_set_id", None), getattr(eval_, "task_id", None)
            if isinstance(set_id, str) and set_id and isinstance(task_id, str) and task_id:
                groups.setdefault((set_id, task_id), []).append((mtime, i))
        out = list(pieces)
        for (set_id, _), attempts in groups.items():
            if len(attempts) < 2:
                continue
            attempts.sort(reverse=True)
            newest = paths[attempts[0][1]]
            for _, i in attempts[1:]:
                out[i] = Parsed.empty([*pieces[i].problems, Problem(
                    str(paths[i]), None,
                    f"an older attempt at this task of eval set {set_id!r}: left out, as Inspect does (its newest "
                    f"log, {newest.name!r}, holds every sample this one has)", notice=True)])
        return out

    def run_meta(self, path: Path, fields: FieldMap) -> dict[str, Any]:
        """The log's task, model, eval set, epochs, scorers and commit: what tells the logs of
        one eval set apart (one log per task and model) and what a comparison's confound
        check reads. A log refused when read (:func:`refused`) is not handed to ``inspect_ai``."""
        if refused(path) is not None:
            return {}
        try:
            header = _inspect_log().read_eval_log(str(path), header_only=True)
        except Exception:  # noqa: BLE001  a damaged log was named when it was read
            return {}
        eval_ = header.eval
        revision = getattr(eval_, "revision", None)
        listed = (header.results.scores if header.results else None) or getattr(eval_, "scorers", None) or []
        scorers = list(dict.fromkeys(s.name for s in listed if isinstance(getattr(s, "name", None), str)))
        out = {
            "task": eval_.task,
            "model": eval_.model,
            "eval_set_id": getattr(eval_, "eval_set_id", None),
            "run_id": eval_.run_id,
            "epochs": getattr(eval_.config, "epochs", None),
            "scorers": ", ".join(scorers) if scorers else None,
            "git_commit": getattr(revision, "commit", None),
        }
        return {k: v for k, v in out.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        """The sample at position ``offset``, as ``inspect_ai`` gives it (messages whole)."""
        log = _inspect_log()
        ids = _sample_keys(as_path(source.path))
        if not 0 <= offset < len(ids):
            raise ValueError(f"{source.path}: no sample at position {offset}; was the log rewritten?")
        sample_id, epoch = ids[offset]
        sample = log.read_eval_log_sample(source.path, id=sample_id, epoch=epoch)
        obj = sample.model_dump(mode="json", exclude_none=True)
        grades = sample_grades(obj.get("scores"))
        if grades and "grades" not in obj:
            obj["grades"] = grades
        return Record(obj, None)


def sample_grades(scores: Any) -> dict[str, float] | None:
    """Every scorer's value of one sample as a number (scorer name → value, in the log's
    order), when two or more scorers gave one: the trial's several grades. Values that are
    not a pass, fail or number (a dict of metrics, free text) are left out."""
    if not isinstance(scores, dict):
        return None
    out: dict[str, float] = {}
    for name, score in scores.items():
        value = score_value(score.get("value") if isinstance(score, dict) else getattr(score, "value", None))
        if value is not None:
            out[str(name)] = value
    return out if len(out) >= 2 else None


def choose_scorer(fields: FieldMap, scorers: list[str], present: set[str]) -> tuple[str | None, str | None]:
    """The scorer whose value decides pass, and why none can be when ``--scorer`` names one
    the log lacks: ``--scorer NAME`` (:attr:`FieldMap.reward` set away from its default),
    else the first of ``--score-field`` the samples have, else the first of the log's
    results that they have (Inspect's order: the task's first scorer), else the first by name."""
    if fields.reward != FieldMap.reward:
        if fields.reward in present:
            return fields.reward, None
        have = ", ".join(n for n in dict.fromkeys([*scorers, *sorted(present)]) if n in present) or "none"
        return None, f"no scorer {fields.reward!r} in this log (it has {have}; --scorer NAME to choose)"
    chosen = next((n for n in fields.score if n in present), None)
    if chosen is None:
        chosen = next((n for n in scorers if n in present), None) or (sorted(present)[0] if present else None)
    return chosen, None


ZIP_MAX_BYTES = 16 << 30
"""The most bytes an ``.eval`` archive's members may declare in all."""
ZIP_MAX_RATIO = 400
"""The most a member may expand (declared size per compressed byte) once it declares more
than :data:`ZIP_RATIO_FLOOR` (JSON compresses 5 to 80 times; deflate's limit is about 1032);
the members together may expand no more, once they declare more than the floor in all (many
members each just under the floor were read to 1.7 GB from 147 KB)."""
ZIP_RATIO_FLOOR = 8 << 20
LOAD_MAX_BYTES = 64 << 20
"""The most bytes the members ``inspect_ai`` reads to load a log (``header.json``, the sample
summaries, the journal: everything but the samples, read one by one when a trace is opened)
may declare in all: about 100,000 samples' summaries. ``inspect_ai`` builds objects of about
ten times their size, all at once."""
JSON_MAX_DEPTH = "about 1,000"
"""How deep an Inspect ``.json`` log may nest (msgspec's limit, checked before ``inspect_ai``
reads it: its streaming reader spent 350 MB on a 20 KB file nested 10,000 deep)."""


def zip_bomb(path: Path) -> str | None:
    """Why the ``.eval`` zip at ``path`` is refused before ``inspect_ai`` reads it, if it is:
    its members declare more than :data:`ZIP_MAX_BYTES` (or those read to load it more than
    :data:`LOAD_MAX_BYTES`), or one of them, or all together, expand more than
    :data:`ZIP_MAX_RATIO` times. Only the central directory is read; Python's ``zipfile``
    (which ``inspect_ai`` reads with) never inflates a member beyond its declared size."""
    import zipfile

    try:
        with open_binary(path, stream=False) as fh, zipfile.ZipFile(fh) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None  # not a zip at all: inspect_ai names the damage
    total = packed = loaded = 0
    for info in members:
        total += info.file_size
        packed += info.compress_size
        if not info.filename.startswith("samples/"):
            loaded += info.file_size
        if info.file_size > ZIP_RATIO_FLOOR and info.file_size > ZIP_MAX_RATIO * max(info.compress_size, 1):
            return (f"member {info.filename!r} expands {info.file_size // max(info.compress_size, 1)} times "
                    f"to {info.file_size} bytes; refused as a likely decompression bomb")
    if total > ZIP_MAX_BYTES:
        return f"members expand to {total} bytes in all; refused as a likely decompression bomb"
    if total > ZIP_RATIO_FLOOR and total > ZIP_MAX_RATIO * max(packed, 1):
        return (f"{len(members)} members expand {total // max(packed, 1)} times in all, to {total} bytes; "
                "refused as a likely decompression bomb")
    if loaded > LOAD_MAX_BYTES:
        return (f"its header and sample summaries expand to {loaded} bytes, more than the "
                f"{LOAD_MAX_BYTES >> 20} MB flaketui reads; refused as a likely decompression bomb")
    return None


def too_deep(path: Path) -> str | None:
    """Why the Inspect ``.json`` log at ``path`` is refused before ``inspect_ai`` reads it, if
    it is: it nests deeper than :data:`JSON_MAX_DEPTH` levels, or holds an integer of more
    digits than Python converts (4,300), on which the C parser ``inspect_ai`` reads with
    (ijson's) crashes the interpreter, or is not valid JSON at all (a damaged file crashed that
    parser too, in the reader fuzz test). Checked by msgspec, which validates without building
    anything (and builds the document only when a run of that many digits is there at all);
    a valid document that is not an Inspect log is left to ``inspect_ai`` to name."""
    import msgspec

    try:
        with open_binary(path) as fh:
            data = fh.read()
        msgspec.json.decode(data, type=msgspec.Raw)
        if _LONG_DIGITS.search(data) is not None:
            msgspec.json.decode(data)  # an integer that long is out of range: a ValidationError
    except RecursionError:
        return f"nested deeper than {JSON_MAX_DEPTH} levels; refused before reading"
    except msgspec.ValidationError:
        return "an integer of more than 4,300 digits; refused before reading"
    except msgspec.DecodeError as exc:  # damaged JSON never reaches ijson's C parser, which can crash on it
        return f"not valid JSON ({str(exc).splitlines()[0][:120]}); refused before reading"
    except (OSError, ValueError):
        return None
    return None


_LONG_DIGITS = re.compile(rb"\d{4300}")


def refused(path: Path) -> str | None:
    """Why the log at ``path`` is not handed to ``inspect_ai`` (:func:`zip_bomb` for ``.eval``,
    :func:`too_deep` for ``.json``), or None."""
    return zip_bomb(path) if path.name.lower().endswith(".eval") else too_deep(path)


def read_inspect(path: Path, fields: FieldMap, default_run: str) -> Parsed:
    """Read an Inspect AI log (``.eval`` or ``.json``) with ``inspect_ai.log``.

    The scorer is chosen by :func:`choose_scorer`. A sample that errored counts apart (errored);
    one without that scorer's value, or with a value that is not a pass or fail,
    is named as a problem.

    Raises
    ------
    InputError
        If ``inspect_ai`` is not installed.
    """
    log = _inspect_log()
    spath = str(path)
    # the records below are built with flaketui's own field names
    sink = RecordSink(FieldMap(threshold=fields.threshold), default_run)
    try:
        header = log.read_eval_log(spath, header_only=True)
        summaries = log.read_eval_log_sample_summaries(spath)
    except Exception as exc:  # noqa: BLE001  inspect raises many kinds on a damaged file
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        problem = Problem(spath, None, f"not a readable Inspect AI log ({detail})")
        return Parsed.from_sink(sink, [problem])
    _sample_keys(path, summaries)
    problems: list[Problem] = []
    scorers = [s.name for s in (header.results.scores if header.results else [])]
    present = {name for s in summaries for name in (s.scores or {})}
    chosen, why = choose_scorer(fields, scorers, present)
    if why is not None:
        return Parsed.from_sink(sink, [Problem(spath, None, why)])
    for i, s in enumerate(summaries):
        where = f"sample {s.id!r} epoch {s.epoch}"
        record: dict[str, Any] = {"task": s.id, "trial": s.epoch}
        error = getattr(s, "error", None)
        if error:
            record["error"] = str(error)
        score = (s.scores or {}).get(chosen) if chosen else None
        if score is not None:
            value = score_value(score.value)
            if value is None:
                problems.append(Problem(spath, i + 1, f"{where}: score {chosen} = {score.value!r} "
                                        "is not a pass or fail (--scorer NAME to choose another scorer)"))
                continue
            record["score"] = value
        elif not error:
            problems.append(Problem(spath, i + 1, f"{where}: no score{f' {chosen}' if chosen else ''}"))
            continue
        metrics = {}
        for name in ("total_time", "working_time"):
            v = getattr(s, name, None)
            if isinstance(v, (int, float)):
                metrics[name] = float(v)
        usage = getattr(s, "model_usage", None) or {}
        tokens = [getattr(u, "total_tokens", None) for u in usage.values()]
        if tokens and all(isinstance(t, int) for t in tokens):
            metrics["tokens"] = float(sum(tokens))
        retries = getattr(s, "retries", None)
        if isinstance(retries, int) and not isinstance(retries, bool) and retries > 0:  # the retry audit's
            metrics[ATTEMPT] = float(1 + retries)  # attempt (a sample not marked: a first attempt)
        if metrics:
            record["metrics"] = metrics
        record["trace"] = [None]  # every sample has messages; they are read back on demand
        reason = sink.add(record, i, -1, i + 1)
        if reason is not None:
            problems.append(Problem(spath, i + 1, f"{where}: {reason}"))
    if len(sink) == 0 and not problems:
        problems.append(Problem(spath, None, "no samples in this Inspect AI log"))
    return Parsed.from_sink(sink, problems)
