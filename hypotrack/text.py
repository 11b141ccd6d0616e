"""Text from users made safe to print: notes, reasons and titles reach colleagues' terminals and reports.

A shared registry means anyone's note is printed on everyone's terminal, so an escape sequence in it
could clear a screen, retitle a window or hide the lines above it. Control characters are dropped
wherever user text is stored or shown; newlines and tabs stay.
"""

from __future__ import annotations

import re

# ESC-introduced sequences (CSI ... final byte, OSC ... BEL/ST, and two-byte escapes), then any other
# C0/C1 control character except tab and newline. A carriage return goes too: it rewrites the line.
_ESCAPE_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` without terminal escape sequences or control characters (newlines and tabs kept)."""
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text))


def has_control(text: str) -> bool:
    return printable(text) != text


def markdown_cell(text: str) -> str:
    """``text`` as one cell of a markdown table: one line, its pipes escaped."""
    return " ".join(printable(text).split()).replace("|", "\\|")


# A verdict's headline, and any one-line stand-in for it in a table (a note, a hand-written reason).
HEADLINE_WIDTH = 100


def clip(text: str, width: int = HEADLINE_WIDTH) -> str:
    """``text`` cut to ``width`` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[:width - 1] + "…"
