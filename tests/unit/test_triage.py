"""The triage store: notes survive reopening, kills, corrupt files and read-only folders."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from flaketui.loading import expand_paths
from flaketui.triage import (
    LABELS,
    TriageEntry,
    TriageFileError,
    TriageKey,
    TriageStore,
    atomic_write,
    default_triage_path,
    dump_triage,
    is_triage_file,
    load_entries,
    parse_triage,
)
from flaketui.triage import store as triage_mod
from tests.conftest import BASELINE, CANDIDATE, ROOT

FLIP = TriageKey.flip("oncall-baseline", "oncall-candidate", "summarizeIncident")
TASK = TriageKey("oncall-baseline", "searchRunbook")


def temp_files(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


class TestRoundTrip:
    def test_changes_are_on_disk_at_once_and_reload(self, tmp_path: Path) -> None:
        """Each change is on disk at once and a new store reads it back."""
        path = tmp_path / "run.jsonl.triage.json"
        store = TriageStore.open(path)
        assert store.messages == [] and len(store) == 0 and not path.exists()
        assert store.update(FLIP, label="real-regression") is True
        assert load_entries(path)[FLIP].label == "real-regression"
        assert store.update(FLIP, note="reads the 2019 post-mortem first\nsecond line | pipe")
        assert store.toggle_reviewed(FLIP)
        assert store.update(TASK, label="ordering-concurrency", note="tied chunks")

        again = TriageStore.open(path)
        assert again.messages == []
        e = again.get(FLIP)
        assert (e.label, e.note, e.reviewed) == (
            "real-regression", "reads the 2019 post-mortem first\nsecond line | pipe", True)
        assert e.updated.endswith("Z") and len(e.updated) == 20
        assert again.get(TASK).label == "ordering-concurrency"
        assert [k for k, _ in again.items()] == sorted([FLIP, TASK])
        assert temp_files(tmp_path) == []

    def test_a_symlinked_file_is_refused_not_followed(self, tmp_path: Path) -> None:
        """A triage file that is a symbolic link is refused, the target left as it was."""
        # A link to another project's notes: neither read nor rewritten (see tests/security).
        (tmp_path / "shared").mkdir()
        target = tmp_path / "shared" / "notes.json"
        TriageStore.open(target).update(FLIP, label="real-fix")
        before = target.read_bytes()
        link = tmp_path / "run.jsonl.triage.json"
        link.symlink_to(target)
        store = TriageStore.open(link)
        assert len(store) == 0 and not store.persistent
        assert store.messages == [
            f"triage file {link} is a symbolic link (flaketui never reads or writes a triage file "
            "through a link): it is neither read nor changed and notes are kept in memory only — "
            "give --triage PATH to choose another file"]
        assert store.update(TASK, label="sampling") is False
        assert store.get(TASK).label == "sampling"
        assert link.is_symlink() and target.read_bytes() == before
        assert temp_files(tmp_path) == [] and temp_files(tmp_path / "shared") == []

    def test_file_shape(self, tmp_path: Path) -> None:
        """The triage file has the documented format, version and entry fields."""
        path = tmp_path / "t.triage.json"
        store = TriageStore.open(path)
        store.update(FLIP, label="real-regression", reviewed=True)
        store.update(TASK, note="ü")
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert doc["format"] == "flaketui-triage" and doc["version"] == 1
        flip = [e for e in doc["entries"] if e["task"] == "summarizeIncident"][0]
        assert flip["run"] == "oncall-candidate" and flip["against"] == "oncall-baseline"
        task = [e for e in doc["entries"] if e["task"] == "searchRunbook"][0]
        assert "against" not in task and task["note"] == "ü" and task["label"] is None

    def test_clearing_everything_drops_the_entry(self, tmp_path: Path) -> None:
        """Clearing an entry's label, note and mark drops it from the file."""
        path = tmp_path / "t.triage.json"
        store = TriageStore.open(path)
        store.update(TASK, label="unknown", note="x", reviewed=True)
        store.update(TASK, label=None, note="", reviewed=False)
        assert TASK not in store and len(store) == 0
        assert json.loads(path.read_text())["entries"] == []

    def test_unknown_label_is_refused(self, tmp_path: Path) -> None:
        """A label not in the list is refused, naming the allowed ones."""
        store = TriageStore.open(tmp_path / "t.triage.json")
        with pytest.raises(ValueError, match="must be one of sampling, tool-nondeterminism"):
            store.update(TASK, label="cosmic-rays")
        assert not (tmp_path / "t.triage.json").exists()

    def test_the_labels(self) -> None:
        """The first eight keep their digits; the simulated user, the grader and outages come after."""
        assert list(LABELS) == ["sampling", "tool-nondeterminism", "ordering-concurrency",
                                "environment", "harness-bug", "real-regression", "real-fix",
                                "unknown", "user-simulator", "grader", "burst"]

    def test_flip_and_task_notes_are_separate(self, tmp_path: Path) -> None:
        """A flip's note and a task's note are kept apart."""
        store = TriageStore.open(tmp_path / "t.triage.json")
        flip = TriageKey.flip("a", "b", "x")
        store.update(flip, label="real-fix")
        store.update(TriageKey("b", "x"), label="sampling")
        assert store.get(flip).label == "real-fix"
        assert store.get(TriageKey("b", "x")).label == "sampling"
        assert flip.describe() == "x: a → b" and TriageKey("b", "x").describe() == "x in b"

    def test_no_change_does_not_rewrite(self, tmp_path: Path) -> None:
        """An update that changes nothing does not rewrite the file."""
        path = tmp_path / "t.triage.json"
        store = TriageStore.open(path)
        store.update(TASK, label="sampling")
        before = path.stat().st_mtime_ns
        time.sleep(0.01)
        assert store.update(TASK, label="sampling") is True
        assert path.stat().st_mtime_ns == before

    def test_in_memory_store(self) -> None:
        """An in-memory store keeps notes without a file."""
        store = TriageStore.in_memory()
        assert store.update(TASK, label="sampling") is False
        assert store.get(TASK).label == "sampling" and not store.persistent


class TestAtomicWrite:
    def test_replaces_and_keeps_mode(self, tmp_path: Path) -> None:
        """atomic_write replaces the file and keeps its mode."""
        path = tmp_path / "f.json"
        path.write_bytes(b"old")
        path.chmod(0o640)
        atomic_write(path, b"new")
        assert path.read_bytes() == b"new"
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
        assert temp_files(tmp_path) == []

    def test_a_link_is_replaced_never_written_through(self, tmp_path: Path) -> None:
        """atomic_write replaces a link and never writes through it."""
        target = tmp_path / "elsewhere.txt"
        target.write_bytes(b"keep")
        link = tmp_path / "f.json"
        link.symlink_to(target)
        atomic_write(link, b"new")
        assert not link.is_symlink() and link.read_bytes() == b"new"
        assert target.read_bytes() == b"keep"

    def test_failure_leaves_old_file_and_no_temp(self, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        """A failed write leaves the old file and no temporary file."""
        path = tmp_path / "f.json"
        path.write_bytes(b"old")

        def boom(fd: int) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(triage_mod.os, "fsync", boom)
        with pytest.raises(OSError, match="No space"):
            atomic_write(path, b"new")
        assert path.read_bytes() == b"old"
        assert temp_files(tmp_path) == []


class TestBadFiles:
    @pytest.mark.parametrize(
        ("content", "reason"),
        [
            (b"", "not valid JSON"),
            (b'{"format": "flaketui-triage", "version": 1, "entries": [', "not valid JSON"),
            (b"\xff\xfe garbage", "not valid JSON"),
            (b'[{"task": "a", "passed": true}]', "not a flaketui triage file"),
            (b'{"format": "flaketui-triage", "version": "1", "entries": []}', "bad version"),
            (b'{"format": "flaketui-triage", "version": 1, "entries": {}}', "not a list"),
        ],
    )
    def test_corrupt_file_is_set_aside_never_overwritten(self, tmp_path: Path, content: bytes,
                                                         reason: str) -> None:
        """A corrupt triage file is set aside under another name, never overwritten."""
        path = tmp_path / "run.jsonl.triage.json"
        path.write_bytes(content)
        store = TriageStore.open(path)
        assert len(store.messages) == 1
        msg = store.messages[0]
        assert reason in msg and "kept it as run.jsonl.triage.json.corrupt-" in msg
        aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
        assert len(aside) == 1 and aside[0].read_bytes() == content
        assert not path.exists()
        assert store.update(TASK, label="sampling")
        assert aside[0].read_bytes() == content
        assert TriageStore.open(path).get(TASK).label == "sampling"

    def test_one_bad_entry_keeps_the_good_ones(self, tmp_path: Path) -> None:
        """One bad entry is reported and the good ones kept."""
        path = tmp_path / "t.triage.json"
        good = {"run": "r", "task": "a", "label": "sampling", "note": "n", "reviewed": True,
                "updated": "2026-01-01T00:00:00Z"}
        bad = {"run": "r", "task": "b", "reviewed": "yes"}
        raw = json.dumps({"format": "flaketui-triage", "version": 1, "entries": [good, bad]})
        path.write_text(raw)
        store = TriageStore.open(path)
        assert "entry 2: \"reviewed\" is not true or false" in store.messages[0]
        assert "1 entries recovered" in store.messages[0]
        assert store.get(TriageKey("r", "a")).note == "n"
        aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
        assert aside[0].read_text() == raw
        assert load_entries(path)[TriageKey("r", "a")].label == "sampling"

    def test_two_corrupt_files_in_one_second_get_two_names(self, tmp_path: Path) -> None:
        """Two corrupt files set aside in one second get two names."""
        path = tmp_path / "t.triage.json"
        for content in (b"one", b"two"):
            path.write_bytes(content)
            TriageStore.open(path)
        aside = sorted(p.read_bytes() for p in tmp_path.iterdir() if ".corrupt-" in p.name)
        assert aside == [b"one", b"two"]

    def test_corrupt_and_cannot_be_moved_stays_untouched(self, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
        """A corrupt file that cannot be moved stays untouched and notes are not saved over it."""
        path = tmp_path / "t.triage.json"
        path.write_bytes(b"{broken")

        def no_rename(src: object, dst: object) -> None:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(triage_mod.os, "replace", no_rename)
        store = TriageStore.open(path)
        assert "could not be set aside (Permission denied)" in store.messages[0]
        assert "kept in memory only" in store.messages[0]
        assert store.update(TASK, label="sampling") is False
        assert store.get(TASK).label == "sampling"
        assert path.read_bytes() == b"{broken"

    def test_newer_version_is_read_but_not_written(self, tmp_path: Path) -> None:
        """A file of a newer version is read but never written."""
        path = tmp_path / "t.triage.json"
        raw = json.dumps({"format": "flaketui-triage", "version": 2, "entries": [
            {"run": "r", "task": "a", "label": "sampling", "note": "", "reviewed": False}]})
        path.write_text(raw)
        store = TriageStore.open(path)
        assert "newer flaketui (version 2)" in store.messages[0]
        assert store.get(TriageKey("r", "a")).label == "sampling"
        assert store.update(TriageKey("r", "a"), note="x") is False
        assert path.read_text() == raw

    def test_path_is_a_folder(self, tmp_path: Path) -> None:
        """A triage path that is a folder is reported and nothing is saved."""
        store = TriageStore.open(tmp_path)
        assert "is a folder" in store.messages[0]
        assert store.update(TASK, label="sampling") is False

    def test_load_entries_reports_without_touching(self, tmp_path: Path) -> None:
        """load_entries reports a bad file without touching it."""
        path = tmp_path / "t.triage.json"
        assert load_entries(path) == {}
        path.write_bytes(b"nope")
        with pytest.raises(TriageFileError, match="t.triage.json: not valid JSON"):
            load_entries(path)
        assert path.read_bytes() == b"nope"

    def test_parse_dump_round_trip(self) -> None:
        """parse_triage reads back what dump_triage writes."""
        entries = {FLIP: TriageEntry("real-regression", "n", True, "2026-01-01T00:00:00Z"),
                   TASK: TriageEntry(None, "", True, "")}
        assert parse_triage(dump_triage(entries)) == (entries, 1)


class TestReadOnlyFolder:
    def test_failed_saves_keep_notes_in_memory(self, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """Saves refused by a read-only folder keep the notes in memory and say so."""
        path = tmp_path / "t.triage.json"
        real_mkstemp = tempfile.mkstemp

        def denied(*args: object, **kwargs: object) -> tuple[int, str]:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(tempfile, "mkstemp", denied)  # the writer (flaketui.safefile) makes its temp file
        store = TriageStore.open(path)
        assert store.messages == [] and store.persistent
        assert store.update(TASK, label="sampling") is False
        assert store.save_error is not None and not store.persistent
        assert "cannot save triage notes to" in store.save_error
        assert "(Permission denied)" in store.save_error
        assert "give --triage PATH" in store.save_error
        assert store.get(TASK).label == "sampling" and not path.exists()
        # Once the folder can be written again, the next change saves everything.
        monkeypatch.setattr(tempfile, "mkstemp", real_mkstemp)
        assert store.update(FLIP, reviewed=True) is True
        assert store.save_error is None
        assert set(load_entries(path)) == {TASK, FLIP}

    def test_real_read_only_folder(self) -> None:
        """chmod 555 for real; as root (which ignores modes) the check runs without
        CAP_DAC_OVERRIDE."""
        folder = Path(tempfile.mkdtemp(prefix="flaketui-ro-"))
        try:
            os.chmod(folder, 0o755)
            existing = folder / "run.jsonl.triage.json"
            existing.write_bytes(dump_triage({TASK: TriageEntry("sampling", "", False, "")}))
            os.chmod(existing, 0o644)
            os.chmod(folder, 0o555)
            code = textwrap.dedent(f"""
                from flaketui.triage import TriageStore, TriageKey
                s = TriageStore.open({str(existing)!r})
                assert s.get(TriageKey("oncall-baseline", "searchRunbook")).label == "sampling"
                assert s.messages == [], s.messages
                assert s.update(TriageKey("r", "t"), note="kept") is False
                assert s.get(TriageKey("r", "t")).note == "kept"
                assert "cannot save triage notes" in s.save_error
                print(s.save_error)
            """)
            prefix: list[str] = []
            if os.geteuid() == 0:
                setpriv = shutil.which("setpriv")
                if setpriv is None:
                    pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
                prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search",
                          "--inh-caps=-all"]
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            proc = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True,
                                  text=True, env=env, cwd=folder, timeout=60)
            assert proc.returncode == 0, proc.stderr
            assert "Permission denied" in proc.stdout
            assert sorted(os.listdir(folder)) == ["run.jsonl.triage.json"]
        finally:
            os.chmod(folder, 0o755)
            shutil.rmtree(folder)


class TestTwoWriters:
    def test_both_programs_notes_survive(self, tmp_path: Path) -> None:
        """Two programs writing one file keep both programs' notes."""
        path = tmp_path / "t.triage.json"
        one = TriageStore.open(path)
        two = TriageStore.open(path)
        one.update(TriageKey("r", "a"), label="sampling")
        two.update(TriageKey("r", "b"), label="environment")
        one.update(TriageKey("r", "c"), note="third")
        on_disk = load_entries(path)
        assert {k.task: (e.label, e.note) for k, e in on_disk.items()} == {
            "a": ("sampling", ""), "b": ("environment", ""), "c": (None, "third")}

    def test_own_change_wins_for_the_same_key(self, tmp_path: Path) -> None:
        """For the same key, a program's own latest change wins."""
        path = tmp_path / "t.triage.json"
        one = TriageStore.open(path)
        two = TriageStore.open(path)
        one.update(TASK, label="sampling")
        two.update(TASK, label="environment")
        assert load_entries(path)[TASK].label == "environment"

    def test_a_later_change_by_the_other_program_is_not_undone(self, tmp_path: Path) -> None:
        """A later change by the other program is not undone by an older one."""
        # One changes TASK and saves; two changes TASK later; one then changes another key.
        # one's save must keep two's newer TASK (only keys changed since its last save win).
        path = tmp_path / "t.triage.json"
        one = TriageStore.open(path)
        two = TriageStore.open(path)
        one.update(TASK, label="sampling")
        two.update(TASK, label="environment")
        one.update(FLIP, note="other key")
        on_disk = load_entries(path)
        assert on_disk[TASK].label == "environment"
        assert on_disk[FLIP].note == "other key"
        assert one.get(TASK).label == "environment"

    @pytest.mark.slow
    @pytest.mark.skipif(triage_mod.fcntl is None, reason="no fcntl: saves are not serialised")
    def test_concurrent_writers_lose_nothing(self, tmp_path: Path) -> None:
        """Processes writing the file at once lose no note."""
        # Four processes save 40 notes each, at the same time, into one file.
        path = tmp_path / "t.triage.json"
        code = textwrap.dedent("""
            import sys
            from flaketui.triage import TriageKey, TriageStore
            store = TriageStore.open(sys.argv[1])
            for i in range(40):
                assert store.update(TriageKey("run", f"{sys.argv[2]}-{i:02d}"), note="x")
        """)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        procs = [subprocess.Popen([sys.executable, "-c", code, str(path), w], env=env,
                                  stderr=subprocess.PIPE) for w in "abcd"]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode()
        assert len(load_entries(path)) == 160
        assert temp_files(tmp_path) == []

    def test_file_corrupted_by_someone_else_is_set_aside(self, tmp_path: Path) -> None:
        """A file corrupted by another program is set aside and the notes saved anew."""
        path = tmp_path / "t.triage.json"
        store = TriageStore.open(path)
        store.update(TASK, label="sampling")
        time.sleep(0.01)
        path.write_bytes(b"\x00\x00")
        assert store.update(FLIP, label="real-regression") is True
        assert any("kept it as" in m for m in store.messages)
        assert set(load_entries(path)) == {TASK, FLIP}
        assert [p.read_bytes() for p in tmp_path.iterdir() if ".corrupt-" in p.name] == [
            b"\x00\x00"]


class TestSidecarPath:
    def test_next_to_the_first_log(self) -> None:
        """The default triage file sits next to the first log."""
        assert default_triage_path([BASELINE, CANDIDATE]) == BASELINE.with_name(
            "oncall-baseline.jsonl.triage.json")

    def test_inside_a_directory(self, tmp_path: Path) -> None:
        """For a folder the default triage file is flaketui.triage.json inside it."""
        assert default_triage_path([tmp_path]) == tmp_path / "flaketui.triage.json"

    def test_glob(self, tmp_path: Path) -> None:
        """For a glob the default triage file sits next to its first match."""
        (tmp_path / "b.jsonl").write_text("{}\n")
        (tmp_path / "a.jsonl").write_text("{}\n")
        assert default_triage_path([str(tmp_path / "*.jsonl")]) == tmp_path / "a.jsonl.triage.json"
        assert default_triage_path([str(tmp_path / "none*.x")]) == tmp_path / "flaketui.triage.json"

    def test_loader_never_reads_a_sidecar_as_a_log(self, tmp_path: Path) -> None:
        """The loader never reads a triage file as a log."""
        shutil.copy(BASELINE, tmp_path / BASELINE.name)
        store = TriageStore.open(default_triage_path([tmp_path]))
        store.update(TASK, label="sampling")
        TriageStore.open(tmp_path / "x.jsonl.triage.json").update(TASK, label="sampling")
        assert is_triage_file(tmp_path / "flaketui.triage.json")
        assert [p.name for p in expand_paths([tmp_path])] == [BASELINE.name]
        assert [p.name for p in expand_paths([str(tmp_path / "*.json*")])] == [BASELINE.name]

    def test_stale_temp_files_are_cleaned_fresh_ones_kept(self, tmp_path: Path) -> None:
        """Stale temporary files are cleaned up and fresh ones kept."""
        path = tmp_path / "t.triage.json"
        stale = tmp_path / ".t.triage.json.abc.tmp"
        fresh = tmp_path / ".t.triage.json.def.tmp"
        stale.write_text("{")
        fresh.write_text("{")
        old = time.time() - 3600
        os.utime(stale, (old, old))
        TriageStore.open(path)
        assert temp_files(tmp_path) == [fresh.name]


# --- Kill test ---------------------------------------------------------------------

KEYS = 20
"""The writer cycles over this many keys; save number c changes key c % KEYS."""

WRITER = textwrap.dedent("""
    import sys
    from flaketui.triage import LABELS, TriageKey, TriageStore

    path, pad = sys.argv[1], "x" * int(sys.argv[2])
    store = TriageStore.open(path)
    assert not store.messages, store.messages
    counts = [int(e.note.split(":")[0]) for _, e in store.items()]
    c = max(counts) + 1 if counts else 0
    labels = list(LABELS)
    sys.stderr.write("ready\\n")
    sys.stderr.flush()
    while True:
        key = TriageKey("run", f"t{c % %(keys)d:02d}")
        store.update(key, note=f"{c}:" + pad, label=labels[c %% len(labels)], reviewed=c %% 2 == 0)
        sys.stdout.write(f"{c}\\n")
        sys.stdout.flush()
        c += 1
""").replace("%(keys)d", str(KEYS)).replace("%%", "%")


def state_after(saves: int) -> dict[str, int]:
    """Which save number each key holds after saves 0..saves-1."""
    return {f"t{c % KEYS:02d}": c for c in range(saves)}


def check_file(path: Path) -> int:
    """Assert the file is valid and is exactly the state after some save; return that count."""
    if not path.exists():
        return 0
    entries, _ = parse_triage(path.read_bytes())
    held = {k.task: int(e.note.split(":")[0]) for k, e in entries.items()}
    for key, e in entries.items():
        c = held[key.task]
        assert e.label == list(LABELS)[c % len(LABELS)] and e.reviewed == (c % 2 == 0)
    saves = max(held.values()) + 1
    assert held == state_after(saves), "file mixes two saves"
    return saves


@pytest.mark.slow
def test_kill_at_random_moments_never_tears_the_file(tmp_path: Path) -> None:
    """SIGKILL a writer 100 times at random moments: the file always holds the old or new state.

    The writer prints each save number after :meth:`TriageStore.update` returns.
    After a kill the file must hold exactly the state after the last reported
    save, or after the one in flight, and nothing in between.
    """
    rng = random.Random(20260105)
    path = tmp_path / "run.jsonl.triage.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    total_reported = 0
    for round_ in range(100):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "1500"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        # The kill is timed from the writer's first save, not from its start: on a loaded machine
        # the interpreter's start alone can outlast the whole window.
        proc.stderr.readline()
        time.sleep(rng.uniform(0.03, 0.25))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, err.decode()
        reported = [int(x) for x in out.decode().split()]
        saves = check_file(path)
        if reported:
            total_reported += len(reported)
            assert saves in (reported[-1] + 1, reported[-1] + 2), (round_, reported[-1], saves)
    assert total_reported > 200, "the writer hardly saved: the test proves nothing"
    # Kills landed inside saves (between the temporary file and the rename), and the
    # next open did not mind the temporary files they left.
    assert temp_files(tmp_path), "no kill landed mid-save"
    store = TriageStore.open(path)
    assert store.messages == [] and len(store) == min(KEYS, check_file(path))


def test_notes_of_remote_logs_live_in_the_user_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing can be written beside s3://…: the notes go to the user data folder, one file per
    URL (two buckets' results.jsonl never share notes), found again by the same URL."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a = default_triage_path(["s3://bucket-a/runs/results.jsonl"])
    b = default_triage_path(["s3://bucket-b/runs/results.jsonl"])
    assert a != b and a == default_triage_path(["s3://bucket-a/runs/results.jsonl"])
    assert a.parent == tmp_path / "data" / "flaketui" / "remote" and a.parent.is_dir()
    assert a.name.startswith("results.jsonl-") and a.name.endswith(".triage.json")
    store = TriageStore.open(a)
    store.update(TriageKey("run", "t1"), note="seen")
    assert load_entries(a)[TriageKey("run", "t1")].note == "seen"
