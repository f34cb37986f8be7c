"""Textual's footer, built again only when the keys it shows change.

Textual's :class:`~textual.widgets.Footer` rebuilds its keys after every change of the
screen's bindings (each focus change, each ``refresh_bindings``), one rebuild queued per
change: opening the trace screen queued seven, about 0.2 s of the 0.3 s it took. This
footer rebuilds once for any number of changes before the next refresh, and not at all
when the keys shown are the same (the filter box's focus, say, shows none of its own).
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """A :class:`~textual.widgets.Footer` that rebuilds only when its keys change."""

    def __init__(self) -> None:
        super().__init__()
        self._pending = False
        """A rebuild is queued (after the next refresh)."""
        self._shown: Hashable = None
        """What the keys shown were built from (None: nothing built yet)."""

    def compose(self) -> ComposeResult:
        """The keys of the screen's bindings as they are when the footer is mounted, so that
        a new screen's first frame shows them (Textual's footer waits for a change of bindings
        and is composed again, in a second layout)."""
        if self.is_attached:
            self.set_reactive(Footer._bindings_ready, True)
            self._shown = self.keys_shown()
        yield from super().compose()

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._pending:
            self._pending = True
            self.call_after_refresh(self._rebuild)

    def keys_shown(self) -> Hashable:
        """Everything :meth:`compose` builds the keys from: each shown binding of the screen,
        whether it is enabled and its tooltip, and the command palette's."""
        shown = tuple((binding, enabled, tooltip) for _, binding, enabled, tooltip
                      in self.screen.active_bindings.values() if binding.show)
        palette = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        return shown, palette and palette[1:], self.compact, self.show_command_palette

    async def _rebuild(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        shown = self.keys_shown()
        if shown != self._shown:
            self._shown = shown
            await self.recompose()
