"""The flaketui Textual app (placeholder until the task table lands)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, Static

from flaketui.model import FieldMap


class FlakeApp(App[int]):
    """Placeholder app: names the logs it was given."""

    BINDINGS = [("q", "quit", "Quit")]

    def __init__(self, paths: Sequence[str], **options: object) -> None:
        super().__init__()
        self.paths = list(paths)
        self.options = options

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("flaketui: " + ", ".join(self.paths))
        yield Footer()


def make_app(
    paths: Sequence[str],
    k: int | None = None,
    fields: FieldMap | None = None,
    min_pass_hat_k: float | None = None,
    max_flakiness: float | None = None,
    ignore_keys: Sequence[str] = (),
) -> FlakeApp:
    """Build the app for ``paths``."""
    return FlakeApp(paths, k=k, fields=fields, min_pass_hat_k=min_pass_hat_k,
                    max_flakiness=max_flakiness, ignore_keys=tuple(ignore_keys))
