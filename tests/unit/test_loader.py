"""The loader never loses or invents a trial, and names every line it skips."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import orjson
import pytest

from flaketui.loading import expand_paths, load_logs, read_trial
from flaketui.loading.formats import json_lines
from flaketui.model import ERRORED, FAIL, PASS, FieldMap, InputError
from tests.conftest import BASELINE, CANDIDATE, FIXTURES


def write(path: Path, lines: list[object] | str | bytes) -> Path:
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    elif isinstance(lines, str):
        path.write_text(lines, encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def reasons(log) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(p) for p in log.problems]


class TestFixtures:
    def test_counts(self) -> None:
        """The fixtures load as two runs of 601 trials without problems."""
        log = load_logs([FIXTURES])
        assert log.runs == ["oncall-baseline", "oncall-candidate"]
        assert len(log) == 601 and log.problems == []
        o = log.run_outcomes("oncall-baseline")
        i = o.index("searchRunbook")
        assert (int(o.n[i]), int(o.passes[i])) == (12, 10)
        la = o.index("listAlerts")
        assert (int(o.n[la]), int(o.errored[la])) == (12, 1)
        assert o.groups[i] == "observability"

    def test_trace_read_on_demand(self) -> None:
        """A trial's trace is read from its log only when asked for."""
        log = load_logs([BASELINE])
        o = log.run_outcomes("oncall-baseline")
        rows = o.task_rows(o.index("searchRunbook"))
        trial = read_trial(log, int(rows[0]))
        assert trial.task == "searchRunbook" and trial.trial == 0
        assert trial.trace and trial.trace[1]["name"] == "searchRunbook"
        assert trial.extra == {"model": "oncall-agent-v3", "temperature": 0.7}
        assert trial.location.endswith("oncall-baseline.jsonl:" + str(int(log.line[rows[0]])))
        assert set(trial.metrics) == {"tokens", "cost_usd", "duration_s"}
        assert log.has_trace[rows].all()

    def test_errored_trial_kept_apart(self) -> None:
        """The fixture's one errored trial is kept, apart from passes and failures."""
        log = load_logs([BASELINE])
        errored = np.flatnonzero(log.outcome == ERRORED)
        assert len(errored) == 1
        t = read_trial(log, int(errored[0]))
        assert t.error.startswith("harness:") and t.task == "listAlerts"

    def test_runs_with_same_name_merge(self, tmp_path: Path) -> None:
        """Two files naming the same run merge into one run."""
        write(tmp_path / "a.jsonl", [{"run": "r", "task": "t", "passed": True}])
        write(tmp_path / "b.jsonl", [{"run": "r", "task": "t", "passed": False}])
        log = load_logs([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
        assert log.runs == ["r"] and sorted(log.trial.tolist()) == [0, 1]


class TestFormat:
    def test_defaults_and_aliases(self, tmp_path: Path) -> None:
        """Field aliases (task_id, reward) and the default pass threshold are read; the run is named by its file."""
        p = write(tmp_path / "my-run.v2.jsonl", [
            {"task_id": 7, "reward": 1.0},
            {"task_id": 7, "reward": 0.9999999},
            {"task_id": 7, "reward": 0.5},
            {"task": "b", "passed": 1, "traj": [{"role": "user"}]},
            {"task": "b", "score": 0.2, "passed": True},
        ])
        log = load_logs([p])
        assert log.runs == ["my-run.v2"]
        assert log.tasks == ["7", "b"]
        assert log.outcome.tolist() == [PASS, PASS, FAIL, PASS, PASS]
        assert log.trial.tolist() == [0, 1, 2, 0, 1]
        assert log.has_trace.tolist() == [False, False, False, True, False]
        assert np.isnan(log.score[3]) and log.score[4] == pytest.approx(0.2)

    def test_threshold(self, tmp_path: Path) -> None:
        """--threshold decides which scores pass."""
        p = write(tmp_path / "s.jsonl", [{"task": "a", "score": 0.6}, {"task": "a", "score": 0.4}])
        log = load_logs([p], FieldMap(threshold=0.5))
        assert log.outcome.tolist() == [PASS, FAIL]

    def test_custom_fields(self, tmp_path: Path) -> None:
        """Custom run, task, pass and trace fields are read."""
        p = write(tmp_path / "m.jsonl", [{"agent": "x", "task_name": "t", "ok": True, "steps": ["a"]}])
        log = load_logs([p], FieldMap(run=("agent",), task=("task_name",), passed=("ok",), trace=("steps",)))
        assert log.runs == ["x"] and log.tasks == ["t"]
        assert read_trial(log, 0).trace == ["a"]

    def test_json_array_and_gzip(self, tmp_path: Path) -> None:
        """JSON arrays and gzipped JSON Lines are read like plain JSON Lines."""
        items = [{"task_id": i % 2, "trial": i // 2, "reward": float(i % 3 == 0), "traj": [{"i": i}]}
                 for i in range(6)]
        (tmp_path / "arr.json").write_bytes(orjson.dumps(items))
        with gzip.open(tmp_path / "z.jsonl.gz", "wb") as fh:
            fh.write(b"".join(orjson.dumps(x) + b"\n" for x in items))
        for name in ("arr.json", "z.jsonl.gz"):
            log = load_logs([tmp_path / name])
            assert len(log) == 6 and log.problems == []
            assert read_trial(log, 4).trace == [{"i": 4}]

    def test_directories_and_globs(self, tmp_path: Path) -> None:
        """Folders and globs are expanded to the logs inside, other files left alone."""
        (tmp_path / "d").mkdir()
        write(tmp_path / "d" / "a.jsonl", [{"task": "t", "passed": True}])
        write(tmp_path / "d" / "notes.txt", "not a log")
        assert [p.name for p in expand_paths([tmp_path / "d"])] == ["a.jsonl"]
        assert [p.name for p in expand_paths([str(tmp_path / "d" / "*.jsonl")])] == ["a.jsonl"]
        assert len(expand_paths([FIXTURES, BASELINE, CANDIDATE])) == 2

    def test_parallel_split_equals_serial(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Parsing a big log in parallel pieces gives the same table as one piece."""
        lines = [{"run": "r", "task": f"t{i % 37}", "passed": i % 3 != 0,
                  "metrics": {"tokens": i} if i % 5 else {}} for i in range(3000)]
        lines[1234] = "{broken"  # type: ignore[call-overload]
        text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
        p = write(tmp_path / "big.jsonl", text)
        serial = load_logs([p])
        monkeypatch.setattr(json_lines, "PARALLEL_BYTES", 1)
        parallel = load_logs([p], workers=2)
        for name in ("run", "task", "trial", "outcome", "offset", "line"):
            assert np.array_equal(getattr(serial, name), getattr(parallel, name)), name
        assert np.array_equal(serial.metrics["tokens"], parallel.metrics["tokens"], equal_nan=True)
        assert reasons(serial) == reasons(parallel)
        assert reasons(serial)[0].startswith(f"{p}:1235: not valid JSON")


class TestBadInput:
    """The bad-input corpus: each case gets its named message and never a traceback."""

    def load_one(self, tmp_path: Path, content: bytes, name: str = "bad.jsonl"):  # type: ignore[no-untyped-def]
        good = b'{"task": "ok", "passed": true}\n'
        return load_logs([write(tmp_path / name, good + content)])

    @pytest.mark.parametrize(
        "line,reason",
        [
            (b"{not json}", "not valid JSON"),
            (b"[1, 2]", "not a JSON object (got a list)"),
            (b'"text"', "not a JSON object (got a string)"),
            (b'{"passed": true}', "no task field (task or task_id)"),
            (b'{"task": "t"}', "no outcome (passed, score, reward)"),
            (b'{"task": "t", "passed": "yes"}', "passed must be a bool or 0/1, got 'yes'"),
            (b'{"task": "t", "passed": 2}', "passed must be a bool or 0/1, got 2"),
            (b'{"task": "t", "score": "high"}', "score must be a number, got a string"),
            (b'{"task": ["t"], "passed": true}', "task must be a string or number, got a list"),
            (b'{"task": "", "passed": true}', "task is empty"),
            (b'{"task": "t", "passed": true, "trial": -1}', "trial must be a non-negative integer"),
            (b'{"task": "t", "passed": true, "trial": "3"}', "trial must be a non-negative integer"),
            (b'{"task": "t", "passed": true, "metrics": [1]}', "metrics must be an object"),
            (b'{"task": "t", "passed": true, "trace": "step"}', "trace must be a list of steps"),
            (b'{"task": "t", "score": NaN}', "NaN and Infinity are not JSON"),
            (b'{"task": "t", "passed": true, "run": {}}', "run must be a string or number"),
            (b'{"task": "t", "passed": tr', "not valid JSON"),
            (b'{"task": "\xff\xfe", "passed": true}', "not valid UTF-8"),
        ],
    )
    def test_named_reasons(self, tmp_path: Path, line: bytes, reason: str) -> None:
        """Each kind of bad line is skipped and named with its reason."""
        log = self.load_one(tmp_path, line + b"\n")
        assert len(log) == 1
        assert len(log.problems) == 1
        assert str(log.problems[0]) .startswith(f"{tmp_path / 'bad.jsonl'}:2: ")
        assert reason in log.problems[0].reason

    def test_blank_lines_crlf_and_bom(self, tmp_path: Path) -> None:
        """Blank lines, CRLF line ends and a byte order mark are accepted."""
        content = b'\xef\xbb\xbf{"task": "a", "passed": true}\r\n\r\n   \n{"task": "a", "passed": false}\r\n'
        log = load_logs([write(tmp_path / "crlf.jsonl", content)])
        assert len(log) == 2 and log.problems == []
        assert log.outcome.tolist() == [PASS, FAIL]
        assert log.line.tolist() == [1, 4]
        assert read_trial(log, 1).task == "a"

    def test_last_line_without_newline(self, tmp_path: Path) -> None:
        """A last line without a newline is read."""
        log = load_logs([write(tmp_path / "n.jsonl", b'{"task": "a", "passed": true}\n{"task": "b", "passed": true}')])
        assert log.tasks == ["a", "b"]

    def test_duplicates_keep_first(self, tmp_path: Path) -> None:
        """Duplicate trial numbers keep the first trial and report the rest."""
        p = write(tmp_path / "d.jsonl", [
            {"task": "a", "trial": 0, "passed": True},
            {"task": "a", "trial": 0, "passed": False},
            {"task": "a", "trial": 1, "passed": False},
        ])
        log = load_logs([p])
        assert log.outcome.tolist() == [PASS, FAIL] and log.line.tolist() == [1, 3]
        assert reasons(log) == [
            f"{p}:2: duplicate trial 0 of task 'a' in run 'd'; kept the first ({p}:1)"
        ]

    def test_unnumbered_trials_take_free_numbers(self, tmp_path: Path) -> None:
        """Trials without a number take the free numbers."""
        p = write(tmp_path / "m.jsonl", [
            {"task": "a", "passed": True},
            {"task": "a", "passed": True},
            {"task": "a", "trial": 0, "passed": False},
            {"task": "a", "trial": 2, "passed": False},
            {"task": "b", "passed": True},
        ])
        log = load_logs([p])
        assert log.problems == []
        assert sorted(zip(log.task.tolist(), log.trial.tolist(), log.line.tolist(), strict=True)) == [
            (0, 0, 3), (0, 1, 1), (0, 2, 4), (0, 3, 2), (1, 0, 5)]

    def test_errored_without_outcome(self, tmp_path: Path) -> None:
        """A trial with an error and no outcome is errored; a falsy error is no error."""
        p = write(tmp_path / "e.jsonl", [{"task": "a", "error": "timeout"},
                                         {"task": "a", "error": None, "passed": True},
                                         {"task": "a", "error": 0, "passed": True},
                                         {"task": "a", "error": "", "passed": False},
                                         {"task": "a", "error": {"code": 137}, "passed": True}])
        log = load_logs([p])
        assert log.outcome.tolist() == [ERRORED, PASS, PASS, FAIL, ERRORED]

    def test_empty_file_named(self, tmp_path: Path) -> None:
        """An empty file is named as a problem while the other logs load."""
        write(tmp_path / "empty.jsonl", b"")
        write(tmp_path / "ok.jsonl", [{"task": "a", "passed": True}])
        log = load_logs([tmp_path / "empty.jsonl", tmp_path / "ok.jsonl"])
        assert reasons(log) == [f"{tmp_path / 'empty.jsonl'}: empty file, no trials"]

    def test_nothing_usable(self, tmp_path: Path) -> None:
        """Logs without a usable trial are one input error."""
        with pytest.raises(InputError, match="no usable trials"):
            load_logs([write(tmp_path / "empty.jsonl", b"")])
        with pytest.raises(InputError, match="no usable trials"):
            load_logs([write(tmp_path / "junk.jsonl", b"junk\n[]\n")])

    def test_missing_path(self, tmp_path: Path) -> None:
        """A missing file or a glob matching nothing is an input error naming it."""
        with pytest.raises(InputError, match="no such file or directory"):
            load_logs([tmp_path / "nope.jsonl"])
        with pytest.raises(InputError, match="no file matches"):
            load_logs([str(tmp_path / "*.jsonl")])

    def test_truncated_gzip_keeps_earlier_lines(self, tmp_path: Path) -> None:
        """A truncated gzip keeps the lines before the cut and says so."""
        body = b"".join(orjson.dumps({"task": f"t{i}", "passed": True, "pad": "x" * 200}) + b"\n" for i in range(400))
        data = gzip.compress(body)
        p = write(tmp_path / "cut.jsonl.gz", data[: len(data) // 2])
        log = load_logs([p])
        assert 0 < len(log) < 400
        assert len(log.problems) == 1 and "gzip stream is truncated" in log.problems[0].reason

    def test_not_gzip(self, tmp_path: Path) -> None:
        """A .gz file that is not gzip is named and skipped."""
        write(tmp_path / "ok.jsonl", [{"task": "a", "passed": True}])
        write(tmp_path / "fake.jsonl.gz", b"plain text")
        log = load_logs([tmp_path / "ok.jsonl", tmp_path / "fake.jsonl.gz"])
        assert "not a readable gzip file" in log.problems[0].reason

    def test_bad_json_array(self, tmp_path: Path) -> None:
        """Bad items in a JSON array are named by their index."""
        write(tmp_path / "ok.jsonl", [{"task": "a", "passed": True}])
        write(tmp_path / "bad.json", b'[{"task": "a", "passed": true}, {"task": 1}, 3]')
        log = load_logs([tmp_path / "ok.jsonl", tmp_path / "bad.json"])
        assert reasons(log) == [
            f"{tmp_path / 'bad.json'}:2: item 2: no outcome (passed, score, reward)",
            f"{tmp_path / 'bad.json'}:3: item 3: not a JSON object (got int)",
        ]

    def test_json_lines_named_json(self, tmp_path: Path) -> None:
        """A .json file holding JSON Lines is read as JSON Lines."""
        # JSON Lines in a .json (or .json.gz) file: read as lines, not refused whole
        data = (b'\xef\xbb\xbf{"task": "a", "passed": true, "trace": [1]}\r\n\r\n'
                b'{"task": "b", "passed": false}\n{oops\n{"task": "c", "passed": true}')
        for name in ("lines.json", "lines.json.gz"):
            p = tmp_path / name
            p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
            log = load_logs([p], use_cache=False)
            assert log.tasks == ["a", "b", "c"] and log.line.tolist() == [1, 3, 5]
            assert [r.split(" (")[0] for r in reasons(log)] == [f"{p}:4: not valid JSON"]
            assert read_trial(log, 0).trace == [1]
            assert read_trial(log, 2).location == f"{p}:5"
        # one object over several lines is still one trial; a bad first line is still refused
        write(tmp_path / "one.json", b'{\n"task": "a",\n"passed": true\n}\n')
        assert load_logs([tmp_path / "one.json"]).tasks == ["a"]
        write(tmp_path / "bad.json", b'{oops\n{"task": "a", "passed": true}\n')
        with pytest.raises(InputError, match="bad.json: not valid JSON"):
            load_logs([tmp_path / "bad.json"])


def test_metric_medians_match_numpy(tmp_path: Path) -> None:
    """Each task's metric medians equal numpy's median."""
    rng = np.random.default_rng(1)
    lines = []
    for t in range(40):
        for _ in range(int(rng.integers(1, 9))):
            metrics = {} if rng.random() < 0.2 else {"tokens": float(rng.integers(1, 100))}
            lines.append({"task": f"t{t}", "passed": True, "metrics": metrics})
    log = load_logs([write(tmp_path / "m.jsonl", lines)])
    o = log.run_outcomes(log.runs[0])
    med = log.metric_medians(o)["tokens"]
    for i in range(len(o.tasks)):
        values = log.metrics["tokens"][o.task_rows(i)]
        values = values[~np.isnan(values)]
        if values.size:
            assert med[i] == np.median(values)
        else:
            assert np.isnan(med[i])


def test_a_null_outcome_is_an_errored_trial_and_an_absent_one_no_trial(tmp_path: Path) -> None:
    """A harness that wrote `"passed": null` ran the trial and recorded no outcome: errored,
    counted apart, never dropped (its task stays with n = 0); a line with no outcome field at
    all is not a trial and is named."""
    log = tmp_path / "nulls.jsonl"
    log.write_text('{"task": "a", "passed": null}\n{"task": "a", "passed": true}\n'
                   '{"task": "b", "score": null}\n{"task": "c"}\n'
                   '{"task": "d", "passed": null, "trace": [{"x": 10000000000000000000000}]}\n')
    tl = load_logs([log], use_cache=False)
    o = tl.run_outcomes("nulls")
    assert o.tasks == ["a", "b", "d"]
    assert o.n.tolist() == [1, 0, 0] and o.errored.tolist() == [1, 1, 1]
    assert [str(p) for p in tl.problems] == [f"{log}:4: no outcome (passed, score, reward)"]


def test_store_later_writes_the_same_cache_entry(tmp_path, monkeypatch) -> None:
    """load_logs(store_later=True), as the app loads: the index cache entry is written by a
    thread of its own once the log is built, and a later load takes it from the cache with
    the same trials."""
    import threading

    import orjson

    from flaketui.loading import cache, load_logs

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    log_path = tmp_path / "run.jsonl"
    log_path.write_bytes(b"".join(orjson.dumps({"task": f"t{i % 7}", "trial": i // 7, "passed": i % 3 > 0}) + b"\n"
                                  for i in range(70)))
    first = load_logs([log_path], use_cache=True, store_later=True)
    for thread in threading.enumerate():
        if thread.name == "flaketui-cache-store":
            thread.join()
    calls: list[object] = []
    monkeypatch.setattr(cache, "store", lambda *a: calls.append(a))  # a hit stores nothing
    again = load_logs([log_path], use_cache=True)
    assert not calls and again.tasks == first.tasks and (again.outcome == first.outcome).all()


def test_without_locations_keeps_every_figure(tmp_path) -> None:
    """TrialLog.without_locations (what report keeps when it reads no trace) has the same
    trials and outcomes, shares their arrays, and holds no memory for the locations."""
    import orjson

    from flaketui.loading import load_logs

    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"task": f"t{i % 5}", "trial": i // 5, "passed": i % 2 == 0}) + b"\n"
                              for i in range(40)))
    log = load_logs([path], use_cache=False)
    bare = log.without_locations()
    assert bare.tasks == log.tasks and bare.outcome is log.outcome and bare.task is log.task
    assert (bare.line == -1).all() and bare.offset.shape == log.offset.shape and bare.line.nbytes == 40 * 8
    assert bare.offset.base is not None and bare.offset.strides == (0,)  # one value, broadcast
    a, b = log.run_outcomes(log.runs[0]), bare.run_outcomes(bare.runs[0])
    assert a.tasks == b.tasks and (a.passes == b.passes).all() and (a.n == b.n).all()


def test_the_c_scanner_is_built() -> None:
    """setup.py builds the C line scanner with the install wherever there is a C compiler (the
    README's install does, and CI runs it): this fails when the build failed silently
    (the extension is optional, so the install itself would not). Without it flaketui still
    reads every log, with the per-line parser alone, several times slower on large logs."""
    from flaketui.loading import scanned

    assert scanned.available()
