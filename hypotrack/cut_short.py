"""Files that end in the middle of a value (JSON, YAML, CSV): most often a run killed while writing them.

A parser reports such a file by what it expected next ("Expecting property name ... line 392
column 2"), which sends the user looking for a syntax mistake. These helpers tell a file cut
short from one written wrong, and find the line where the unfinished value starts, so the
message can say what happened. A log cut short is still read up to its last whole value (what a run killed while
writing it, or a copy taken while it was written, holds): json_read_whole_values closes what was left open.
"""

from __future__ import annotations

import json
import re

# In JSON text: a string (closed or cut off), a bracket, or a line break; everything else is skipped.
_JSON_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*(")?|[\[\]{}]|\n')


def cut_short(line: int) -> str:
    return f"the file ends before the value that starts at line {line}: was the run interrupted while writing it?"


def json_unfinished_line(text: str, error_at: int) -> int | None:
    """For JSON the parser gave up on at offset ``error_at``: the line (1-based) where the innermost value
    still open at the end of the text starts, or None when the text is not cut short (the error is elsewhere,
    or nothing is left open)."""
    at_end = not text[error_at:].strip()
    line, opened = 1, []
    for token in _JSON_TOKENS.finditer(text):
        kind = token.group()
        if kind == "\n":
            line += 1
        elif kind in ("[", "{"):
            opened.append(line)
        elif kind in ("]", "}"):
            if opened:
                opened.pop()
        elif token.group(1) is None and not text.startswith("\n", token.end()):
            # the file ends inside a string (the parser reports where the string starts)
            return line if at_end or token.start() == error_at else None
    return opened[-1] if opened and at_end else None


# How many of the last whole values a JSON text cut short is tried up to: each try parses the text again.
JSON_CLOSING_TRIES = 20
_CLOSERS = {"[": "]", "{": "}"}


def json_read_whole_values(text: str) -> tuple[object, int] | None:
    """A JSON text cut short, read up to the last value it holds whole: the content the text makes once the
    arrays and objects still open after that value are closed (a trainer_state.json cut inside its log_history
    keeps the entries before the cut), and the line where what is left out starts; None where no such reading
    parses (the text was not cut after a whole value, or was written wrong)."""
    opened: list[str] = []
    ends: list[tuple[int, str]] = []  # (where a value ends, the brackets still open there)
    for token in _JSON_TOKENS.finditer(text):
        kind = token.group()
        if kind in _CLOSERS:
            opened.append(kind)
        elif kind in ("]", "}") and opened:
            opened.pop()
            if opened:
                ends.append((token.end(), "".join(_CLOSERS[bracket] for bracket in reversed(opened))))
    for end, closing in reversed(ends[-JSON_CLOSING_TRIES:]):
        try:
            content = json.loads(text[:end] + closing)
        except json.JSONDecodeError:
            continue
        left_out = len(text) - len(text[end:].lstrip(", \t\r\n"))
        return content, text.count("\n", 0, left_out) + 1
    return None


def yaml_unfinished_line(text: str, problem_at: int | None, context_line: int | None) -> int | None:
    """For YAML the parser gave up on at offset ``problem_at``: the line where the unfinished construct starts
    (the parser's context, else the problem's line) when the problem is the end of the text; else None."""
    if problem_at is None or text[problem_at:].strip():
        return None
    return context_line if context_line is not None else text[:problem_at].count("\n") + 1


def csv_unfinished_line(text: str, rows: list[list[str]], last_row_line: int) -> int | None:
    """For a CSV whose text does not end with a line break: ``last_row_line`` when its last row is incomplete
    (fewer cells than the header, or a quoted cell left open); else None."""
    if not rows or len(rows) < 2 or text.endswith(("\n", "\r")):
        return None
    last_line = text[text.rfind("\n") + 1:]
    if len(rows[-1]) < len(rows[0]) or last_line.count('"') % 2 == 1:
        return last_row_line
    return None
