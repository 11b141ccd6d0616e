"""The exception every part of hypotrack raises for a problem the user can fix."""

from __future__ import annotations


class HypotrackError(Exception):
    """A problem with the user's input or environment, explained in the message (one paragraph)."""


def first_line(exc: BaseException) -> str:
    """An exception's first line of text (libraries spread theirs over many), or its type when it has none."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
