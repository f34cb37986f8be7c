"""``flaketui LOG...`` (``open``) and ``flaketui demo``: the app."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from flaketui.cli.common import (
    FRACTION,
    check_k,
    check_triage,
    fail,
    log_options,
    main,
    triage_option,
)
from flaketui.model import FieldMap, InputError


def divergence_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--divergence actions|all``: what counts as the traces' first divergence."""
    return click.option(
        "--divergence", type=click.Choice(["actions", "all"]), default=None,
        help="What counts as a divergence: the agent's actions (tool calls and final answer) or "
             "every step (default: actions when a trace has a user role besides the agent).")(func)


FIXTURES = Path(__file__).resolve().parent.parent / "demo"
"""The demo logs shipped in the package (the top-level fixtures/, gzip-compressed)."""


@main.command("open")
@click.argument("logs", nargs=-1, required=True)
@click.option("-k", type=int, default=None, help="k for pass@k and pass^k (default: the trials most tasks have).")
@click.option("--min-pass-hat-k", type=FRACTION, default=None, help="Show the gate verdict: pass^k floor.")
@click.option("--max-flakiness", type=FRACTION, default=None, help="Show the gate verdict: flakiness cap.")
@click.option("--ignore-key", multiple=True, help="Another step key to ignore when comparing traces.")
@click.option("--watch", is_flag=True, default=False,
              help="Follow logs still being written: new trials appear as they land.")
@click.option("--history", "history", default=None, metavar="URL",
              help="The history H shows a task's timeline from: sqlite:///PATH or postgresql://… "
                   "(default $FLAKETUI_HISTORY, else history.sqlite in the user data folder, as "
                   "flaketui history).")
@divergence_option
@triage_option
@log_options
def open_app(logs: tuple[str, ...], k: int | None, min_pass_hat_k: float | None,
             max_flakiness: float | None, ignore_key: tuple[str, ...], watch: bool,
             history: str | None, divergence: str | None, triage: str | None, fields: FieldMap) -> None:
    """Open the app on LOGS."""
    check_k(k)
    check_triage(triage)
    from flaketui.loading import expand_paths

    try:
        expand_paths(logs)
    except InputError as exc:
        fail(str(exc))
    from flaketui.app.app import AppOptions, FlakeApp

    app = FlakeApp(AppOptions(logs, k=k, fields=fields, min_pass_hat_k=min_pass_hat_k,
                              max_flakiness=max_flakiness, ignore_keys=ignore_key, triage=triage,
                              watch=watch, divergence=divergence, history=history))
    app.run()
    sys.exit(app.return_code or 0)


@main.command()
@click.option("-k", type=int, default=5, show_default=True,
              help="k for pass@k and pass^k (5, as in the README's figures).")
@click.option("--triage", "triage", default=None, metavar="PATH",
              help="Triage notes file (default: demo.triage.json in the user data folder).")
def demo(k: int | None, triage: str | None) -> None:
    """Open the app on the bundled on-call fixtures."""
    if not FIXTURES.is_dir():
        fail(f"the bundled demo logs are not at {FIXTURES}: this flaketui install is incomplete; "
             "reinstall it with pip")
    check_triage(triage)
    if triage is None:
        import platformdirs

        folder = platformdirs.user_data_path("flaketui")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(f"cannot create {folder} for the demo's triage notes ({exc.strerror}); "
                 "give --triage PATH")
        triage = str(folder / "demo.triage.json")
    from flaketui.app.app import AppOptions, FlakeApp

    app = FlakeApp(AppOptions((str(FIXTURES),), k=k, triage=triage))
    app.run()


