"""Is the process that owns a test run still alive? (pid plus start time, so reuse of a pid is not mistaken for life)."""

from __future__ import annotations

import os
import socket


def hostname() -> str:
    return socket.gethostname()


def process_start(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks since boot (Linux), None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
    except OSError:
        return None
    # The command name (field 2) may contain spaces; fields after the last ')' are fixed.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def is_alive(pid: int, start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if start is None:
        return True
    current = process_start(pid)
    if current is None:
        return True  # no /proc: trust kill(0)
    if current != start:
        return False  # the pid now belongs to another process
    try:  # a zombie (killed, not yet reaped) is dead for our purposes
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().decode(errors="replace").rsplit(")", 1)[-1].split()[0]
        return state != "Z"
    except OSError:
        return False
