"""The text of a completion as a reward function receives it from TRL."""

from __future__ import annotations


def completion_text(completion) -> str:
    """Standard format gives strings; conversational format gives [{"role": ..., "content": ...}]."""
    if isinstance(completion, list):
        return completion[-1]["content"] if completion else ""
    return completion
