"""The worker -> runner event stream: JSON lines appended to the file named by HYPOTRACK_EVENTS.

A file rather than an inherited pipe because launchers such as `accelerate launch`
start the training process as a grandchild with its file descriptors closed.
Stdout and stderr stay free for TRL's and the user's own prints (they go to the
arm's worker.log); only these lines are protocol. Only rank 0 writes.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, TextIO

EVENTS_ENV = "HYPOTRACK_EVENTS"


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # "nan"/"inf" survive JSON
    return value


class EventWriter:
    def __init__(self, stream: TextIO | None):
        self.stream = stream

    @classmethod
    def from_env(cls) -> "EventWriter":
        path = os.environ.get(EVENTS_ENV)
        if not path or int(os.environ.get("RANK", "0")) != 0:
            return cls(None)
        return cls(open(path, "a", buffering=1, encoding="utf-8"))  # noqa: SIM115 - lives as long as the worker

    def emit(self, event: str, **payload: Any) -> None:
        if self.stream is None:
            return
        record = {"event": event, **{k: _clean(v) for k, v in payload.items()}}
        if "metrics" in record:
            record["metrics"] = {k: _clean(v) for k, v in record["metrics"].items()}
        try:
            self.stream.write(json.dumps(record, default=str) + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.stream = None  # disk full or closed: training output still lands in the arm folder


def parse_event(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    if "metrics" in record:
        record["metrics"] = {k: (float(v) if isinstance(v, str) else v) for k, v in record["metrics"].items()}
    return record


class EventTail:
    """Reads the complete lines appended to an events file since the last call."""

    def __init__(self, path):  # noqa: ANN001
        self.path = path
        self.offset = 0
        self.partial = ""

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
                self.offset = handle.tell()
        except FileNotFoundError:
            return []
        text = self.partial + chunk
        lines = text.split("\n")
        self.partial = lines.pop()  # an incomplete last line waits for the next read
        return [event for line in lines if line.strip() and (event := parse_event(line)) is not None]
