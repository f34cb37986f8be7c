"""Log formats: the fast path agrees with the full parse, τ-bench arrays, field mapping,
nested field paths, long lines, and a format added to the registry."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from flaketui.loading import formats, jsonl, load_logs, read_trial, scanned
from flaketui.loading.fastpath import FastDecoder
from flaketui.loading.formats import LogFormat, Record, Tick
from flaketui.loading.parsed import Parsed
from flaketui.loading.records import RecordSink
from flaketui.model import FieldMap, InputError, Problem, Source
from tests.helpers.logs import assert_same
from tests.helpers.records import clean_record, random_record


def full_parse_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn the C scanner and the loose decode off: every line goes through orjson and
    RecordSink.add, the rule both are held to."""
    monkeypatch.setattr(scanned, "_linescan", None)
    monkeypatch.setattr(FastDecoder, "loose", lambda self, line: None)


class TestFastPathAgrees:
    """Whatever shape a line has, the fast path keeps what the full parse keeps."""

    def test_random_records(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The fast JSON Lines path reads random records exactly as the general parser does."""
        rng = random.Random(5)
        lines = [json.dumps(random_record(rng), ensure_ascii=rng.random() < 0.5).encode()
                 if rng.random() > 0.02 else b"{broken" for _ in range(3000)]
        lines += [json.dumps(clean_record(rng, i)).encode() for i in range(2000)]
        rng.shuffle(lines)
        lines += [json.dumps({"task": "big", "passed": True, "trial": 1 << 64}).encode(),
                  json.dumps({"task": 1 << 70, "passed": True}).encode(),
                  json.dumps({"task": "m", "passed": True, "metrics": {"t": 10**400}}).encode(),
                  b'{"task": "inf", "score": 1e999}',
                  b'{"task": "inf2", "passed": true, "trace": [1e999]}',
                  b'{"task": "u", "passed": true, "trace": ["\xff"]}',
                  b'{"task": "u2", "passed": true, "x": "caf\xc3\xa9"}',
                  b'{"task": "sp", "passed": true, "trace": [  ] }',
                  b'{"task": "sp2", "passed": true, "trace": "steps"}',
                  b'{"task": "nul", "passed": true, "trace": null, "traj": [1]}']
        p = tmp_path / "mixed.jsonl"
        p.write_bytes(b"\n".join(lines) + b"\n")
        fast = load_logs([p])
        full_parse_only(monkeypatch)
        full = load_logs([p])
        assert_same(fast, full)
        assert len(fast) > 1500 and len(fast.problems) > 1000

    @pytest.mark.parametrize("fields", [
        FieldMap(task=("name",), passed=("ok",), trace=("steps",)),
        FieldMap(passed=("score",)),  # one name in two roles: the C scanner steps aside
        FieldMap(task=("meta.task",), score=("result.value",), threshold=0.5),
    ])
    def test_other_field_maps(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              fields: FieldMap) -> None:
        """The fast path agrees with the general parser under other field maps."""
        rng = random.Random(9)
        recs = []
        for i in range(400):
            recs.append({"name": f"n{i % 7}", "ok": rng.choice([True, False, 1, 0, 2]),
                         "task": f"t{i % 5}", "score": rng.choice([0, 1, 0.5, True]),
                         "meta": {"task": rng.choice([f"m{i % 3}", None, 4])},
                         "result": {"value": rng.random()} if i % 9 else "x",
                         "steps": [1] if i % 2 else "no"})
        p = tmp_path / "f.jsonl"
        p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
        fast = load_logs([p], fields)
        full_parse_only(monkeypatch)
        assert_same(fast, load_logs([p], fields))


class TestNestedFields:
    def test_dotted_path_walks_objects(self, tmp_path: Path) -> None:
        """A dotted field name walks into nested objects."""
        p = tmp_path / "n.jsonl"
        p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [
            {"sample": {"id": "s1"}, "scores": {"match": {"value": 1}}},
            {"sample": {"id": "s1"}, "scores": {"match": {"value": 0}}},
            {"sample": {"id": "s2"}, "scores": {"match": {"value": 1}}},
        ]))
        log = load_logs([p], FieldMap(task=("sample.id",), passed=("scores.match.value",)))
        assert log.tasks == ["s1", "s2"] and log.outcome.tolist() == [1, 0, 1]

    def test_key_with_a_dot_wins(self, tmp_path: Path) -> None:
        """A key that itself contains a dot wins over the nested path."""
        p = tmp_path / "d.jsonl"
        p.write_bytes(b'{"a.b": "flat", "a": {"b": "nested"}, "passed": true}\n')
        assert load_logs([p], FieldMap(task=("a.b",))).tasks == ["flat"]


class TestLongLines:
    def test_line_longer_than_the_buffer(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A line longer than the read buffer is read whole."""
        monkeypatch.setattr(jsonl, "BLOCK", 1 << 12)
        steps = [{"role": "tool", "content": "y" * 1000} for _ in range(3000)]  # ~3 MB line
        recs = [{"task": "small", "passed": True}, {"task": "huge", "passed": False, "trace": steps},
                {"task": "after", "passed": True}]
        p = tmp_path / "long.jsonl"
        p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
        log = load_logs([p])
        assert log.tasks == ["small", "huge", "after"] and log.problems == []
        assert log.has_trace.tolist() == [False, True, False]
        assert len(read_trial(log, 1).trace or []) == 3000

    def test_lines_cut_by_block_edges(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Lines cut by the read blocks' edges are read whole."""
        recs = [{"task": f"t{i}", "passed": i % 2 == 0, "pad": "z" * (i * 37 % 500)} for i in range(300)]
        p = tmp_path / "edges.jsonl"
        p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
        whole = load_logs([p])
        monkeypatch.setattr(jsonl, "BLOCK", 97)
        cut = load_logs([p])
        assert_same(whole, cut)
        assert len(cut) == 300


class TestTruncatedTrace:
    def test_huge_trace_opens_cut(self, tmp_path: Path) -> None:
        """A huge trace opens cut to its first steps and says so."""
        steps = [{"role": "tool", "content": f"step {i} " + "y" * 200} for i in range(20_000)]
        p = tmp_path / "huge.jsonl"
        p.write_bytes(orjson.dumps({"task": "t", "passed": False, "trace": steps, "note": "x"}) + b"\n"
                      + orjson.dumps({"task": "t", "passed": True, "trace": steps[:3]}) + b"\n")
        log = load_logs([p])
        cut = read_trial(log, 0, max_steps=50)
        assert cut.trace == steps[:50] and cut.trace_steps == 20_000
        assert cut.extra == {"note": "x"} and cut.task == "t"
        whole = read_trial(log, 0)
        assert whole.trace == steps and whole.trace_steps == 20_000
        short = read_trial(log, 1, max_steps=50)
        assert short.trace == steps[:3] and short.trace_steps == 3

    def test_cut_in_a_json_array_and_gzip(self, tmp_path: Path) -> None:
        """Traces in JSON arrays and gzip files are cut the same way."""
        import gzip

        items = [{"task_id": 1, "reward": 1.0, "traj": [{"i": i} for i in range(100)]}]
        (tmp_path / "a.json").write_bytes(orjson.dumps(items))
        with gzip.open(tmp_path / "z.jsonl.gz", "wb") as fh:
            fh.write(orjson.dumps(items[0]) + b"\n")
        for name in ("a.json", "z.jsonl.gz"):
            t = read_trial(load_logs([tmp_path / name]), 0, max_steps=10)
            assert t.trace == [{"i": i} for i in range(10)] and t.trace_steps == 100


class TestBadInput:
    """Bad files of these formats: a named one-line reason, exit 2 when nothing is usable,
    never a traceback."""

    def run_cli(self, *args: str) -> Any:
        from click.testing import CliRunner

        from flaketui.cli import main

        return CliRunner().invoke(main, list(args))

    @pytest.mark.parametrize("content,reason", [
        (b'[{"task_id": 1, "reward": 1.0}, {"task_id": 2, "rew', "not valid JSON"),
        (b'[{"task_id": "\xff", "reward": 1.0}]', "not valid UTF-8"),
        (b'"just text"', "a .json log must hold an array of trial objects"),
        (b"[1, 2]", "item 1: not a JSON object"),
    ])
    def test_bad_json_array(self, tmp_path: Path, content: bytes, reason: str) -> None:
        """A bad JSON array is one line naming the file, exit 2."""
        p = tmp_path / "bad.json"
        p.write_bytes(content)
        result = self.run_cli("report", str(p))
        assert result.exit_code == 2
        assert reason in result.stderr and "Traceback" not in result.output
        assert len(result.stderr.strip().splitlines()) == 1

    @pytest.mark.slow
    def test_garbage_eval(self, tmp_path: Path) -> None:
        """A .eval file that is not a zip is one line, exit 2."""
        pytest.importorskip("inspect_ai")
        p = tmp_path / "junk.eval"
        p.write_bytes(b"this is not a zip archive")
        result = self.run_cli("report", str(p))
        assert result.exit_code == 2
        assert "not a readable Inspect AI log" in result.stderr and "Traceback" not in result.output

    def test_inspect_json_cut_short(self, tmp_path: Path) -> None:
        """An Inspect JSON log cut short is one line, exit 2."""
        pytest.importorskip("inspect_ai")
        p = tmp_path / "cut.json"
        p.write_bytes(b'{"version": 2, "status": "success", "eval": {"task": "x", ')
        result = self.run_cli("report", str(p))
        assert result.exit_code == 2
        assert "not a readable Inspect AI log" in result.stderr

    def test_watch_missing_file_and_bad_interval(self, tmp_path: Path) -> None:
        """--watch on a missing file, or a bad interval, is one line, exit 2."""
        result = self.run_cli("report", str(tmp_path / "nope.jsonl"), "--watch")
        assert result.exit_code == 2 and "no such file or directory" in result.stderr
        p = tmp_path / "ok.jsonl"
        p.write_bytes(b'{"task": "a", "passed": true}\n')
        result = self.run_cli("report", str(p), "--watch", "--interval", "0")
        assert result.exit_code == 2 and "Traceback" not in result.output


@pytest.mark.slow
@pytest.mark.ui
async def test_app_opens_huge_traces_cut_and_m_reads_more(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The app opens a huge trace cut, and m reads more of it."""
    from flaketui.app.app import make_app
    from flaketui.app.screens import traces

    monkeypatch.setattr(traces, "TRACE_STEPS", 10)
    steps = [{"role": "tool", "content": f"step {i}"} for i in range(100)]
    p = tmp_path / "huge.jsonl"
    p.write_bytes(orjson.dumps({"task": "t", "passed": True, "trace": steps}) + b"\n"
                  + orjson.dumps({"task": "t", "passed": False, "trace": steps[:5]}) + b"\n")
    app = make_app([str(p)])
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, traces.TaskTraceScreen)
        assert [len(t.trace or []) for t in screen.trials] == [10, 5]
        assert screen.trials[0].trace_steps == 100
        await pilot.press("m")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [len(t.trace or []) for t in screen.trials] == [40, 5]


def test_gzipped_json_array(tmp_path: Path) -> None:
    """A gzipped JSON array is read like the plain one."""
    import gzip

    items = [{"task_id": i % 3, "trial": i // 3, "reward": float(i % 2), "traj": [{"i": i}]}
             for i in range(9)]
    p = tmp_path / "results.json.gz"
    p.write_bytes(gzip.compress(orjson.dumps(items, option=orjson.OPT_INDENT_2)))
    log = load_logs([p])
    assert log.runs == ["results"] and len(log) == 9 and log.problems == []
    assert read_trial(log, 7).trace == [{"i": 7}]
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(p.read_bytes()[:-30])
    with pytest.raises(Exception, match="gzip stream is truncated"):
        load_logs([cut])


def _depth(value: Any) -> int:
    """How many lists are nested in ``value`` (each holding one item), without recursion."""
    depth = 0
    while isinstance(value, list):
        depth += 1
        value = value[0] if value else None
    return depth


def test_deeply_nested_trace_is_no_traceback(tmp_path: Path) -> None:
    """A deeply nested trace loads without a traceback."""
    # msgspec stops at Python's recursion limit (about 1000 levels) with RecursionError;
    # orjson allows 1024 levels: the fast path declines, orjson decides and names the line
    ok = b'{"task": "a", "passed": true, "trace": [%s]}' % (b"[" * 1000 + b"]" * 1000)
    deep = b'{"task": "b", "passed": true, "trace": %s}' % (b"[" * 1100 + b"]" * 1100)
    last = b'{"task": "c", "passed": false}'
    p = tmp_path / "deep.jsonl"
    p.write_bytes(b"\n".join([ok, deep, last]) + b"\n")
    log = load_logs([p])
    assert log.tasks == ["a", "c"]
    assert len(log.problems) == 1
    assert str(log.problems[0]).startswith(f"{p}:2: not valid JSON (depth limit exceeded")
    trial = read_trial(log, 0, max_steps=5)
    assert trial.trace_steps == 1 and _depth(trial.trace) == 1001
    arr = tmp_path / "deep.json"  # msgspec splits the array: a clear problem, not a traceback
    for item in (ok, deep):
        arr.write_bytes(b"[" + item + b", " + last + b"]")
        with pytest.raises(InputError, match=f"{arr}: nested too deeply to split into items"):
            load_logs([arr])


class Tsv(LogFormat):
    """A format added as a newcomer would: one class, one entry in FORMATS. A line is
    ``task<TAB>1 or 0<TAB>steps separated by |``."""

    suffixes = (".tsv",)
    kinds = ("tsv",)

    def matches(self, path: Path, head: bytes) -> bool:
        return path.name.lower().endswith(".tsv")

    @staticmethod
    def record(raw: bytes) -> dict[str, Any]:
        task, passed, steps = raw.decode().rstrip("\n").split("\t")
        return {"task": task, "passed": passed == "1", "trace": steps.split("|"), "note": "tsv"}

    def read(self, path: Path, size: int, fields: FieldMap, default_run: str,
             workers: int | None, tick: Tick) -> Parsed:
        sink = RecordSink(FieldMap(threshold=fields.threshold), default_run)
        problems = []
        offset = 0
        with open(path, "rb") as fh:
            for line, raw in enumerate(fh, 1):
                reason = sink.add(self.record(raw), offset, len(raw), line)
                if reason is not None:
                    problems.append(Problem(str(path), line, reason))
                offset += len(raw)
        tick(size)
        return Parsed.from_sink(sink, problems)

    def read_record(self, source: Source, offset: int, length: int,
                    trace_names: tuple[str, ...], max_steps: int | None) -> Record:
        with open(source.path, "rb") as fh:
            fh.seek(offset)
            return Record(self.record(fh.read(length)), None)


class TestRegistry:
    """One class and one FORMATS entry are all a format needs: the directory search, the
    loader, the trace reader, the index cache and --watch all find it there."""

    @pytest.fixture(autouse=True)
    def registered(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(formats, "FORMATS", [Tsv(), *formats.FORMATS])

    @staticmethod
    def logs(folder: Path) -> Path:
        folder.mkdir()
        (folder / "a.tsv").write_text("t1\t1\tlook|act\nt1\t0\tlook\nt2\t1\tact\n")
        (folder / "b.jsonl").write_bytes(orjson.dumps({"task": "t2", "passed": False}) + b"\n")
        return folder

    def test_loaded_and_read_back(self, tmp_path: Path) -> None:
        """A format added to the registry is loaded and its traces read back."""
        log = load_logs([self.logs(tmp_path / "d")])
        assert [s.kind for s in log.sources] == ["tsv", "jsonl"]
        assert log.runs == ["a", "b"]
        assert (log.tasks, len(log)) == (["t1", "t2"], 4)
        trial = read_trial(log, 0, max_steps=1)
        assert (trial.task, trial.outcome, trial.trace, trial.trace_steps) == ("t1", 1, ["look"], 2)
        assert trial.extra == {"note": "tsv"}
        assert trial.location.endswith("a.tsv:1")

    def test_cached_and_watched(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A registered format is cached and watched like the built-in ones."""
        from flaketui.loading import cache, loader
        from flaketui.loading.watch import LogWatcher

        monkeypatch.setattr(cache, "MIN_BYTES", 0)
        folder = self.logs(tmp_path / "d")
        cold = load_logs([folder])
        assert len(list(cache.cache_dir().glob("*.idx"))) == 2
        with monkeypatch.context() as m:
            m.setattr(loader, "read_file", None)  # a warm open parses nothing
            assert_same(cold, load_logs([folder]))
        watcher = LogWatcher([folder])
        assert_same(watcher.load(), cold)
        with open(folder / "a.tsv", "a") as fh:
            fh.write("t3\t0\t\n")
        assert watcher.poll() is True
        assert watcher.log().tasks == ["t1", "t2", "t3"]
