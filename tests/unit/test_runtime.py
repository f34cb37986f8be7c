"""The process-wide tricks of :mod:`flaketui._runtime`: each does what it says and undoes it."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

from flaketui import _runtime


def test_blas_threads_limited_unless_the_user_chose() -> None:
    """OpenBLAS gets one thread unless the user chose."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    code = "import flaketui.cli, os; print(os.environ['OPENBLAS_NUM_THREADS'])"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout == "1\n"
    env["OPENBLAS_NUM_THREADS"] = "3"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout == "3\n"


def test_gc_paused_restores_the_collector() -> None:
    """gc_paused restores the collector."""
    assert gc.isenabled()
    with _runtime.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with _runtime.gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()


def test_frozen_unfreezes_even_on_error() -> None:
    """frozen unfreezes even on error."""
    try:
        with _runtime.frozen():
            assert gc.get_freeze_count() > 0
            raise KeyError
    except KeyError:
        pass
    assert gc.get_freeze_count() == 0


def _exit_of(body: str) -> subprocess.CompletedProcess[str]:
    """Run ``body`` as a command's main under :func:`run_then_exit` in a fresh interpreter."""
    script = ("import atexit, sys, threading, time\n"
              "from flaketui._runtime import run_then_exit\n"
              "def main():\n" + textwrap.indent(textwrap.dedent(body).strip(), "    ") + "\n"
              "run_then_exit(main)\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)


def test_exits_at_once_with_the_code_and_the_output_flushed() -> None:
    """The quick exit keeps the code and flushes the output."""
    done = _exit_of("""
        class Torn:
            def __del__(self):
                sys.stderr.write("torn down")
        global kept
        kept = Torn()
        sys.stdout.write("partial line, no newline")
        sys.exit(1)
    """)
    assert (done.returncode, done.stdout, done.stderr) == (1, "partial line, no newline", "")  # no teardown


def test_an_atexit_function_still_runs() -> None:
    """An atexit function still runs."""
    done = _exit_of("""
        atexit.register(lambda: print("atexit ran"))
        sys.exit(2)
    """)
    assert (done.returncode, done.stdout) == (2, "atexit ran\n")


def test_a_running_thread_is_waited_for() -> None:
    """A running thread is waited for."""
    done = _exit_of("""
        threading.Thread(target=lambda: (time.sleep(0.2), print("thread done"))).start()
        sys.exit(0)
    """)
    assert (done.returncode, done.stdout) == (0, "thread done\n")
