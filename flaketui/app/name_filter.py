"""The task table's name filter over a million names: one numpy substring search a keystroke."""

from __future__ import annotations

import numpy as np

STRINGS = np.dtypes.StringDType()


class NameFilter:
    """Which names contain a text, case-insensitively (``text.lower() in name.lower()``).

    The lower-cased names are made once, on the first search (numpy's ``lower`` for
    ASCII names; Python's ``str.lower`` otherwise, whose case mapping numpy does not
    have). Typing a letter more narrows the last matches rather than searching every
    name again.
    """

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._lowered: np.ndarray | None = None
        self._last: tuple[str, np.ndarray] | None = None

    def _lower(self) -> np.ndarray:
        if self._lowered is None:
            if all(map(str.isascii, self.names)):
                self._lowered = np.strings.lower(np.array(self.names, dtype=STRINGS))
            else:
                self._lowered = np.array([name.lower() for name in self.names], dtype=STRINGS)
        return self._lowered

    def prepare(self) -> None:
        """Lower-case the names now (the filter is about to be typed into)."""
        self._lower()

    def mask(self, text: str) -> np.ndarray:
        """True for each name that contains ``text`` (any case)."""
        needle = text.lower()
        lowered = self._lower()
        if self._last is not None and self._last[0] in needle:
            rows = np.flatnonzero(self._last[1])  # only names holding the shorter text can match
            found = np.zeros(len(lowered), dtype=bool)
            found[rows[np.strings.find(lowered[rows], needle) >= 0]] = True
        else:
            found = np.strings.find(lowered, needle) >= 0
        self._last = (needle, found)
        return found
