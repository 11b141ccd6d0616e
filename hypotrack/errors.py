"""The exception every part of hypotrack raises for a problem the user can fix."""

from __future__ import annotations


class HypotrackError(Exception):
    """A problem with the user's input or environment, explained in the message (one paragraph)."""
