"""Write the CLI reference (docs/cli.md) from the commands' own ``--help``, so the manual never
lists an option the command line does not take, or misses one it does.

Everything between ``<!-- generated: cli-reference -->`` and ``<!-- end generated: cli-reference -->``
in docs/cli.md is this script's: the table of commands (each command's first help line and the
manual's page about it, from :data:`MANUAL`), the options every log-reading command takes (the
ones :func:`flaketui.cli.options.log_options` adds, listed once), then one section a command with
its usage line and its own options, each as ``--help`` shows it (with its default). The prose
above the markers is written by hand. ``tests/unit/test_cli_reference.py`` fails when the
committed page differs from what this script writes; run it after changing a command::

    .venv/bin/python scripts/cli_reference.py          # rewrite docs/cli.md
    .venv/bin/python scripts/cli_reference.py --check  # exit 1 when docs/cli.md is stale
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"
SECTION = "cli-reference"
sys.path.insert(0, str(ROOT / "benchmarks"))

from docs_tables import markdown_table, replace_section, write_page  # noqa: E402

MANUAL = {
    "open": "[The task table and keys](app.md)",
    "demo": "[Getting started](getting-started.md)",
    "report": "[Reports](report.md), [Causes](causes.md)",
    "compare": "[Comparing runs](compare.md)",
    "gate": "[Gating CI](gating.md)",
    "quarantine": "[Gating CI](gating.md#flaketui-quarantine)",
    "diff": "[Traces and divergence](traces.md#flaketui-diff)",
    "export": "[Sharing findings](sharing.md#into-a-warehouse-flaketui-export)",
    "plan": "[Planning the next run](planning.md)",
    "triage": "[Comparing runs](compare.md#flaketui-triage-export)",
    "triage export": "[Comparing runs](compare.md#flaketui-triage-export)",
    "history": "[Flakes over time](history.md)",
    "history record": "[Flakes over time](history.md)",
    "history status": "[Flakes over time](history.md), [owners](history.md#owners)",
    "history quarantine": "[Flakes over time](history.md)",
    "history unquarantine": "[Flakes over time](history.md)",
    "history trend": "[Flakes over time](history.md#the-suite-over-time-history-trend)",
    "history notify": "[Flakes over time](history.md#messages-when-a-task-changes-history-notify)",
    "history issue-body": "[Flakes over time](history.md#an-issue-for-a-flaky-task-history-issue-body)",
}
"""The manual's page about each command (a new command without one is an error: say where it is
explained)."""

LOG_OPTIONS_ANCHOR = "#options-every-log-reading-command-takes"


def commands() -> Iterator[tuple[str, click.Command, click.Context]]:
    """Every command under ``flaketui`` (groups and their subcommands), depth first by name."""
    from flaketui.cli import main

    root = click.Context(main, info_name="flaketui")

    def walk(group: click.Group, ctx: click.Context, prefix: str) -> Iterator[tuple[str, click.Command,
                                                                                       click.Context]]:
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            sub = click.Context(cmd, info_name=name, parent=ctx)
            path = f"{prefix}{name}"
            yield path, cmd, sub
            if isinstance(cmd, click.Group):
                yield from walk(cmd, sub, path + " ")

    yield from walk(main, root, "")


def log_option_names() -> set[str]:
    """The options :func:`~flaketui.cli.options.log_options` adds, by parameter name."""
    from flaketui.cli.options import log_options

    return {p.name for p in log_options(lambda **_: None).__click_params__}  # type: ignore[attr-defined]


def _text(help_text: str) -> str:
    """Help text as one Markdown line: nothing in it read as markup."""
    text = " ".join(help_text.replace("\b", "").split())
    return re.sub(r"([\\`*_<>\[\]])", r"\\\1", text)


def _first_paragraph(cmd: click.Command) -> str:
    return _text((cmd.help or "").split("\n\n")[0])


def _rows(cmd: click.Command, ctx: click.Context, logs: set[str], of_logs: bool) -> list[tuple[str, str]]:
    """The options of ``cmd`` as ``--help`` shows them: the log-reading ones or (``of_logs``
    false) its own."""
    rows = []
    for param in cmd.get_params(ctx):
        if (not isinstance(param, click.Option) or param is cmd.get_help_option(ctx)
                or (param.name in logs) != of_logs):
            continue
        record = param.get_help_record(ctx)
        if record is not None:
            rows.append((f"`{record[0]}`", _text(record[1])))
    return rows


def generate() -> str:
    """The generated section of docs/cli.md."""
    found = list(commands())
    unexplained = [path for path, _, _ in found if path not in MANUAL]
    if unexplained:
        raise SystemExit(f"scripts/cli_reference.py: no manual page named in MANUAL for {unexplained}")
    logs = log_option_names()
    out = [markdown_table(["command", "what it does", "manual"],
                          [(f"`flaketui {path}`", _first_paragraph(cmd), MANUAL[path]) for path, cmd, _ in found],
                          align="lll")]
    report, report_ctx = next((cmd, ctx) for path, cmd, ctx in found if path == "report")
    readers = [f"`{path}`" for path, cmd, ctx in found
               if any(isinstance(p, click.Option) and p.name in logs for p in cmd.get_params(ctx))]
    out += ["## Options every log-reading command takes",
            f"Every command that reads logs ({', '.join(readers)}) takes these ([Reading logs](logs.md)):",
            markdown_table(["option", "what it does"], _rows(report, report_ctx, logs, True), align="ll")]
    for path, cmd, ctx in found:
        out.append(f"## `flaketui {path}`")
        out.append(f"`{' '.join(ctx.command_path.split())} {' '.join(cmd.collect_usage_pieces(ctx))}`")
        out.append(_first_paragraph(cmd))
        if isinstance(cmd, click.Group):
            out.append("Commands: " + ", ".join(f"[`{sub}`](#flaketui-{path.replace(' ', '-')}-{sub})"
                                               for sub in cmd.list_commands(ctx)) + ".")
        rows = _rows(cmd, ctx, logs, False)
        if rows:
            out.append(markdown_table(["option", "what it does"], rows, align="ll"))
        if any(isinstance(p, click.Option) and p.name in logs for p in cmd.get_params(ctx)):
            out.append(f"And [the options every log-reading command takes]({LOG_OPTIONS_ANCHOR}).")
    return "\n\n".join(out)


def page() -> str:
    """docs/cli.md as it should read."""
    return replace_section(PAGE.read_text(encoding="utf-8"), SECTION, generate())


def main(argv: list[str]) -> int:
    """Write docs/cli.md, or with ``--check`` say whether it is up to date (exit 1 when stale)."""
    want = page()
    if "--check" in argv:
        if PAGE.read_text(encoding="utf-8") != want:
            print("docs/cli.md is stale: run .venv/bin/python scripts/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    write_page(PAGE, want)
    print(f"wrote {PAGE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
