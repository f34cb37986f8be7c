"""Colours from the app's theme: the plain colour names the screens write in their styles
(``bold yellow`` for flaky, ``green`` for passing, …) become the theme's own colours, so
that a light theme gets colours that read on it."""

from __future__ import annotations

import re
from collections.abc import Mapping

from rich.text import Span, Text

THEME_VARIABLES = {"green": "success", "red": "error", "yellow": "warning",
                   "magenta": "accent", "cyan": "primary"}
"""Colour name -> the theme variable that stands for it."""

_NAMES = re.compile(r"\b(" + "|".join(THEME_VARIABLES) + r")\b")


def theme_colours(variables: Mapping[str, str]) -> dict[str, str]:
    """Colour name -> the theme's colour (``App.theme_variables``); names the theme lacks
    stay as they are."""
    return {name: variables[var] for name, var in THEME_VARIABLES.items() if var in variables}


def themed_style(style: object, colours: Mapping[str, str]) -> object:
    """A style string with its colour names replaced (Style objects are left alone)."""
    if not isinstance(style, str) or not colours:
        return style
    return _NAMES.sub(lambda m: colours.get(m.group(1), m.group(1)), style)


def themed(text: Text, colours: Mapping[str, str]) -> Text:
    """``text`` (changed in place and returned) in the theme's colours."""
    if colours:
        text.style = themed_style(text.style, colours)  # type: ignore[assignment]
        text.spans = [Span(s.start, s.end, themed_style(s.style, colours))  # type: ignore[arg-type]
                      for s in text.spans]
    return text
