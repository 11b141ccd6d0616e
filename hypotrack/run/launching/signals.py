"""Ctrl-C and SIGTERM during a test: a flag the scheduling loop checks, never an exception from a handler.

An exception raised from a signal handler surfaces inside whatever library code the
main thread is in (MLflow's store, SQLAlchemy), which may swallow it; so the
handler only records the signal, and `check_stop` raises `Stop` where the
runner can clean up in order.
"""

from __future__ import annotations

import signal
from typing import Any


class Stop(Exception):
    """The user asked the test to stop (SIGINT or SIGTERM)."""


class _Flag:
    requested: str | None = None


def check_stop() -> None:
    if _Flag.requested:
        raise Stop(_Flag.requested)


def install() -> dict[int, Any]:
    """Route SIGINT and SIGTERM to the flag; returns the previous handlers for `restore`."""
    _Flag.requested = None

    def handler(signum: int, _frame: Any) -> None:
        _Flag.requested = signal.Signals(signum).name

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}


def ignore() -> None:
    """Bookkeeping that must complete (ending runs, recording the outcome) ignores further signals."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def restore(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
