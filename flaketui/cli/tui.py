"""``flaketui LOG...`` (``open``) and ``flaketui demo``: the app.

``open --owners FILE`` reads the owners file before the app starts (a bad file: one line, exit
2); the app shows each task's owner (:attr:`~flaketui.app.app.AppOptions.owners`). ``open
--record`` has the app record the runs once loaded (:attr:`~flaketui.app.app.AppOptions.record`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flaketui.cli.common import FRACTION, check_k, check_triage, fail, main
from flaketui.cli.options import (
    divergence_option,
    flag_option,
    flaky_cap_option,
    history_option,
    ignore_key_option,
    k_option,
    log_options,
    owners_option,
    triage_option,
    watch_option,
)
from flaketui.model import FieldMap, InputError

if TYPE_CHECKING:
    from flaketui.loading.options import LoadOptions
    from flaketui.history.owners import Rule


FIXTURES = Path(__file__).resolve().parent.parent / "demo"
"""The demo logs shipped in the package (the top-level fixtures/, gzip-compressed)."""


@main.command("open")
@click.argument("logs", nargs=-1, required=True)
@k_option("k for pass@k and pass^k (default: the trials most tasks have).")
@click.option("--min-pass-hat-k", type=FRACTION, default=None, help="Show the gate verdict: pass^k floor.")
@click.option("--max-flakiness", type=FRACTION, default=None, help="Show the gate verdict: flakiness cap.")
@ignore_key_option()
@watch_option("Follow logs still being written: new trials appear as they land.")
@history_option("The history H shows a task's timeline from (and --record records into): "
                "sqlite:///PATH or postgresql://… "
                "(default $FLAKETUI_HISTORY, else history.sqlite in the user data folder, as "
                "flaketui history).")
@flag_option("--record", "Once loaded, record every run in the history (as flaketui history record; a run "
             "recorded before is left as it is), in the background; a notification says what was "
             "recorded, or why the history could not be used. Not with --watch.")
@owners_option("A CODEOWNERS-style owners file (as flaketui history status --owners): H shows the "
               "task's owner.")
@divergence_option
@triage_option
@flaky_cap_option
@log_options
def open_app(logs: tuple[str, ...], k: int | None, min_pass_hat_k: float | None,
             max_flakiness: float | None, ignore_key: tuple[str, ...], watch: bool,
             history: str | None, record: bool, owners: str | None, divergence: str | None,
             triage: str | None, flaky_cap: float | None, fields: FieldMap, load_options: LoadOptions) -> None:
    """Open the app on LOGS."""
    check_k(k)
    check_triage(triage)
    if record and watch:
        raise click.UsageError("--record with --watch would record runs still being written: "
                               "record them once written (flaketui history record)")
    rules = read_owner_rules(owners)
    from flaketui.loading import expand_paths

    try:
        expand_paths(logs, options=load_options)
    except InputError as exc:
        fail(str(exc))
    from flaketui.app.app import AppOptions, FlakeApp

    app = FlakeApp(AppOptions(logs, k=k, fields=fields, min_pass_hat_k=min_pass_hat_k,
                              max_flakiness=max_flakiness, ignore_keys=ignore_key, triage=triage,
                              watch=watch, divergence=divergence, history=history, record=record,
                              owners=tuple(rules), flaky_cap=flaky_cap, load=load_options))
    app.run()
    sys.exit(app.return_code or 0)


def read_owner_rules(path: str | None) -> list[Rule]:
    """The rules of the owners file at ``path`` (none without one); an unreadable file or a bad
    pattern: one line, exit 2. Does not import SQLAlchemy."""
    if path is None:
        return []
    from flaketui.history.owners import OwnersError, read_owners

    try:
        return read_owners(path)
    except OwnersError as exc:
        fail(str(exc))


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


