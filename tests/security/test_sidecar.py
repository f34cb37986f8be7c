"""Hostile triage sidecars: a log folder from someone else
can neither make flaketui write outside the user's files, nor hang it, nor exhaust its
memory or stack, and its notes load even with a byte order mark; saves stay fast at 200k
notes.

Anything that hung or ate memory before the fix runs in a child process with a timeout
and a memory limit, so that the old code fails the test instead of stopping the suite.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from flaketui.app.app import make_app
from flaketui.cli import main
from flaketui.triage import (
    MAX_BYTES,
    TriageEntry,
    TriageFileError,
    TriageFileRefused,
    TriageKey,
    TriageStore,
    default_triage_path,
    dump_triage,
    load_entries,
    parse_triage,
)
from flaketui.triage import store as triage_mod
from tests.conftest import BASELINE, ROOT, SIZE, settle

RUN = "oncall-baseline"
HOSTILE = TriageKey(RUN, "$(touch PWNED)")
"""The issue's attack: a task name that bash would run if it landed in ~/.bash_profile."""
TIMEOUT = 60
"""Seconds a child process may take (it takes about one; the old code hung forever)."""


def export(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["triage", "export", *map(str, args)])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def child(code: str, *args: object, memory: int = 1 << 30) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (``sys.argv[1:]`` = ``args``) in a child capped at ``memory`` bytes."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                          capture_output=True, text=True, timeout=TIMEOUT, env=env,
                          preexec_fn=limit, cwd=ROOT)


OPEN_AND_CHANGE = """
    import sys
    from flaketui.triage import TriageKey, TriageStore
    store = TriageStore.open(sys.argv[1])
    print(*store.messages, sep="\\n")
    print(store.update(TriageKey("r", "t"), note="x"))
"""


@pytest.fixture
def log_folder(tmp_path: Path) -> Path:
    """A downloaded log folder: one log, no sidecar yet."""
    folder = tmp_path / "downloaded"
    folder.mkdir()
    shutil.copy(BASELINE, folder / BASELINE.name)
    return folder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


class TestLinks:
    """A symbolic link at the triage path is never followed, to read or to write."""

    def test_a_shipped_link_to_a_missing_dotfile_creates_nothing(self, log_folder: Path,
                                                                 home: Path) -> None:
        """A shipped triage link to a missing dotfile creates nothing."""
        sidecar = default_triage_path([log_folder / BASELINE.name])
        sidecar.symlink_to(home / ".bash_profile")
        store = TriageStore.open(sidecar)
        (message,) = store.messages
        assert message.startswith(f"triage file {sidecar} is a symbolic link")
        assert message.endswith("give --triage PATH to choose another file")
        assert "\n" not in message
        assert store.update(HOSTILE, note="first keypress") is False
        assert store.toggle_reviewed(HOSTILE) is False
        assert store.get(HOSTILE).reviewed is True  # kept in memory
        assert os.listdir(home) == [] and sidecar.is_symlink()
        assert sorted(os.listdir(log_folder)) == sorted([BASELINE.name, sidecar.name])

    def test_a_file_swapped_for_a_link_after_opening_is_not_written_through(
            self, log_folder: Path, home: Path) -> None:
        """A triage file swapped for a link after opening is not written through."""
        sidecar = log_folder / "notes.triage.json"
        store = TriageStore.open(sidecar)
        assert store.update(HOSTILE, label="sampling")
        other = home / "other-project.triage.json"
        other.write_bytes(b"another project's notes")
        sidecar.unlink()
        sidecar.symlink_to(other)
        assert store.update(HOSTILE, note="later") is False
        assert store.save_error is not None and "is a symbolic link" in store.save_error
        assert "give --triage PATH" in store.save_error
        assert other.read_bytes() == b"another project's notes" and sidecar.is_symlink()

    def test_export_refuses_a_link_without_reading_it(self, log_folder: Path, home: Path) -> None:
        """triage export refuses a link without reading it."""
        target = home / "notes.json"
        TriageStore.open(target).update(TriageKey(RUN, "searchRunbook"), note="secret note")
        sidecar = default_triage_path([log_folder / BASELINE.name])
        sidecar.symlink_to(target)
        code, out, err = export(log_folder / BASELINE.name)
        assert code == 2 and out == ""
        assert err == (f"flaketui: error: triage file {sidecar}: is a symbolic link (flaketui never "
                       "reads or writes a triage file through a link); give --triage PATH to "
                       "choose another file\n")
        with pytest.raises(TriageFileRefused, match="is a symbolic link"):
            load_entries(sidecar)

    def test_a_link_to_dev_zero_is_refused(self, log_folder: Path) -> None:
        """A triage link to /dev/zero is refused."""
        sidecar = log_folder / "zero.triage.json"
        sidecar.symlink_to("/dev/zero")
        proc = child(OPEN_AND_CHANGE, sidecar)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == [
            f"triage file {sidecar} is a symbolic link (flaketui never reads or writes a triage "
            "file through a link): it is neither read nor changed and notes are kept in memory "
            "only — give --triage PATH to choose another file", "False"]


class TestNotRegularFiles:
    """A FIFO, a device or a huge file neither hangs flaketui nor fills its memory."""

    def test_a_fifo_does_not_hang_the_store(self, log_folder: Path) -> None:
        """A FIFO as the triage file does not hang the store."""
        fifo = log_folder / "fifo.triage.json"
        os.mkfifo(fifo)
        proc = child(OPEN_AND_CHANGE, fifo)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[0].startswith(
            f"triage file {fifo} is a FIFO (named pipe), not a regular file: it is neither read")
        assert proc.stdout.splitlines()[1] == "False"
        assert fifo.exists() and not fifo.is_file()  # still the FIFO: not renamed or replaced

    @pytest.mark.slow
    def test_a_fifo_does_not_hang_export(self, log_folder: Path) -> None:
        """A FIFO as the triage file does not hang triage export."""
        fifo = log_folder / "fifo.triage.json"
        os.mkfifo(fifo)
        code = "from flaketui.cli import main; main()"
        proc = child(code, "triage", "export", log_folder / BASELINE.name, "--triage", fifo)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr == (f"flaketui: error: triage file {fifo}: is a FIFO (named pipe), not "
                               "a regular file; give --triage PATH to choose another file\n")

    @pytest.mark.slow
    def test_a_device_is_refused_unread(self, log_folder: Path) -> None:
        """A device as the triage file is refused unread."""
        code = "from flaketui.cli import main; main()"
        proc = child(code, "triage", "export", log_folder / BASELINE.name, "--triage", "/dev/zero")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr == ("flaketui: error: triage file /dev/zero: is a device, not a regular "
                               "file; give --triage PATH to choose another file\n")
        proc = child(OPEN_AND_CHANGE, "/dev/zero")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[0].startswith("triage file /dev/zero is a device")

    def test_a_file_over_the_cap_is_refused_and_left_alone(self, log_folder: Path) -> None:
        """A triage file over the size cap is refused and left alone."""
        huge = log_folder / "huge.triage.json"
        with huge.open("wb") as fh:
            fh.truncate(MAX_BYTES + 1)  # sparse: costs no disk
        store = TriageStore.open(huge)
        assert store.messages == [
            f"triage file {huge} is larger than 64 MB, the most flaketui reads as a triage file: it "
            "is neither read nor changed and notes are kept in memory only — give --triage PATH to "
            "choose another file"]
        assert store.update(HOSTILE, note="x") is False
        assert huge.stat().st_size == MAX_BYTES + 1
        assert [p.name for p in log_folder.iterdir() if ".corrupt-" in p.name] == []
        with pytest.raises(TriageFileRefused, match="larger than 64 MB"):
            load_entries(huge)

    def test_deep_nesting_is_an_input_error_not_a_crash(self, log_folder: Path) -> None:
        """Deeply nested triage JSON is an input error, not a crash."""
        sidecar = log_folder / "nested.triage.json"
        depth = 200_000
        sidecar.write_bytes(b'{"format": "flaketui-triage", "version": 1, "entries": ['
                            + b"[" * depth + b"]" * depth + b"]}")
        code, out, err = export(log_folder / BASELINE.name, "--triage", sidecar)
        assert code == 2 and out == ""
        assert err.startswith(f"flaketui: error: triage file {sidecar}: not valid JSON (")
        assert len(err.splitlines()) == 1
        with pytest.raises(TriageFileError, match="not valid JSON"):
            load_entries(sidecar)
        store = TriageStore.open(sidecar)
        (message,) = store.messages
        assert "was unusable (not valid JSON" in message and "kept it as" in message
        assert store.update(HOSTILE, note="x") is True


def test_a_byte_order_mark_keeps_all_notes(tmp_path: Path) -> None:
    """An editor that saves UTF-8 with a BOM must not make the notes vanish."""
    entries = {TriageKey(RUN, f"task{i}"): TriageEntry("sampling", f"note {i}", True, "")
               for i in range(10)}
    sidecar = tmp_path / "bom.triage.json"
    sidecar.write_bytes(b"\xef\xbb\xbf" + dump_triage(entries))
    assert load_entries(sidecar) == entries
    store = TriageStore.open(sidecar)
    assert store.messages == [] and len(store) == 10
    assert store.update(HOSTILE, note="eleventh")
    assert len(load_entries(sidecar)) == 11
    assert [p.name for p in tmp_path.iterdir()] == [sidecar.name]


@pytest.mark.slow
def test_saves_of_200k_notes_stay_fast(tmp_path: Path) -> None:
    """With 200,000 notes a save writes the changed bytes and little more: it does not sort,
    serialise and parse every note again."""
    n = 200_000
    sidecar = tmp_path / "big.triage.json"
    sidecar.write_bytes(orjson.dumps({"format": "flaketui-triage", "version": 1, "entries": [
        {"run": f"run{i % 7}", "task": f"task-{i:07d}", "label": "sampling",
         "note": f"note number {i}", "reviewed": i % 2 == 0, "updated": "2026-01-05T10:12:03Z"}
        for i in range(n)]}))
    store = TriageStore.open(sidecar)
    assert len(store) == n
    assert store.update(TriageKey("run0", "first"), note="builds the serialised lines")
    times = []
    for i in range(7):
        start = time.perf_counter()
        assert store.update(TriageKey(f"run{i}", f"task-{i:07d}"), note="changed")
        times.append(time.perf_counter() - start)
    # The old code took 2 s or more per save on this machine (2 cores shared), this 0.1-0.3 s.
    assert statistics.median(times) < 0.6, times
    assert sidecar.read_bytes().count(b"\n") == 1 + (n + 1) + 1  # the head, a line a note, the end


def test_a_save_parses_the_file_only_when_another_program_changed_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps saves fast: the file is parsed again only when its bytes are not those
    this store last wrote, and the lines it keeps are what a full serialisation gives."""
    parsed: list[int] = []

    def counting_parse(data: bytes) -> tuple[dict[TriageKey, TriageEntry], int]:
        parsed.append(len(data))
        return parse_triage(data)

    keys = [TriageKey(f"run{i % 3}", f"task{i:04d}", "" if i % 4 else "base") for i in range(2000)]
    sidecar = tmp_path / "t.triage.json"
    sidecar.write_bytes(dump_triage({k: TriageEntry("sampling", f"note {k.task}") for k in keys}))
    monkeypatch.setattr(triage_mod, "parse_triage", counting_parse)
    store = TriageStore.open(sidecar)
    for key in (keys[5], TriageKey("run1", "new-in-the-middle"), keys[7], keys[1999]):
        assert store.update(key, note="changed here")
    assert store.update(keys[9], label=None, note="")
    assert len(parsed) == 1, "saves parsed a file only this store had written"

    data = sidecar.read_bytes()
    sidecar.write_bytes(data.replace(b'"note":"note task0003"', b'"note":"edited elsewhere"'))
    assert store.update(keys[11], note="after the other program")
    assert len(parsed) == 2
    data = sidecar.read_bytes()
    on_disk, _ = parse_triage(data)
    assert on_disk[keys[3]].note == "edited elsewhere" and on_disk[keys[5]].note == "changed here"
    assert keys[9] not in on_disk and len(on_disk) == 2000
    assert data == dump_triage(on_disk)


@pytest.mark.ui
async def test_the_app_shows_a_refused_sidecar_and_goes_on(log_folder: Path, home: Path) -> None:
    """Pilot: the app opens a folder whose sidecar is a link, warns once in a toast, and a
    triage keypress neither crashes nor writes through the link."""
    log = log_folder / BASELINE.name
    sidecar = default_triage_path([log])
    sidecar.symlink_to(home / ".bash_profile")
    app = make_app([str(log)])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = [n.message for n in app._notifications]
        assert sum("is a symbolic link" in m and "give --triage PATH" in m for m in shown) == 1
        await pilot.press("space")
        await settle(pilot)
        assert app.is_running
    assert os.listdir(home) == [] and sidecar.is_symlink()
