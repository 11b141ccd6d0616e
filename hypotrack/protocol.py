"""What the runner and a worker exchange: the arm spec going in, the event stream coming out.

A `hypotrack run` is two kinds of process. The runner (`hypotrack.run`) writes one
`ArmSpec` as JSON per arm x seed and starts a worker (`python -m hypotrack.worker
SPEC.json`) on it; the worker streams `Event`s back as JSON lines appended to the
file named by HYPOTRACK_EVENTS. A file rather than an inherited pipe because
launchers such as `accelerate launch` start the training process as a grandchild
with its file descriptors closed. Stdout and stderr stay free for TRL's and the
user's own prints (they go to the arm's worker.log); only these lines are
protocol. Only rank 0 writes.

This module is the whole contract: both sides import it, and it imports neither.
"""

from __future__ import annotations

import enum
import json
import math
import os
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict, Field

EVENTS_ENV = "HYPOTRACK_EVENTS"
# Recorded on every arm run: the libraries whose behaviour (defaults, internals) a verdict depends on.
VERSIONED_PACKAGES = ("hypotrack", "trl", "transformers", "torch", "peft", "datasets", "accelerate")


class ArmSpec(BaseModel):
    """Everything one worker needs to train one arm x seed; serialised to JSON for the worker."""

    model_config = ConfigDict(extra="forbid")

    hypothesis_id: str
    test_id: str = ""
    arm: str
    seed: int
    trainer: str
    experiment_name: str
    experiment_dir: str  # modules beside the experiment file are importable
    model: str
    data: dict[str, Any]
    rewards: list[str]
    reward_weights: list[float] | None
    task_reward_index: int = 0  # which of `rewards` is the task reward; the others are auxiliary
    grpo: dict[str, Any]  # GRPOConfig fields, resolved
    lora: dict[str, Any]  # peft LoraConfig fields plus `enabled` (false: full fine-tuning)
    max_steps: int
    hooks: list[str] = Field(default_factory=list)
    hook_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    plant: list[str] = Field(default_factory=list)
    deterministic: bool = False
    # The treatments that act inside the trainer (hypotrack/treatments/), by name: the treatment arm's fix
    treatments: list[str] = Field(default_factory=list)
    generator_dtype: str = "auto"  # the dtype vLLM serves in: auto (vLLM's choice), trainer, or a dtype's name
    critic: dict[str, Any] | None = None
    parity: dict[str, Any] | None = None
    output_dir: str = ""
    threads: int = 1
    # A command experiment's arm: the user's own command (run with hypotrack's bootstrap on its path, which
    # watches every GRPOTrainer it creates) instead of `python -m hypotrack.worker`.
    command: list[str] = Field(default_factory=list)
    command_env: dict[str, str] = Field(default_factory=dict)
    command_cwd: str = ""

    @property
    def key(self) -> str:
        return f"{self.arm}/{self.seed}"

    @property
    def task_reward_name(self) -> str:
        """The name TRL logs the task reward under (rewards/<name>/mean)."""
        return self.rewards[self.task_reward_index].rsplit(":", 1)[-1] if self.rewards else ""

    @property
    def peft(self) -> bool:
        return bool(self.lora.get("enabled", True))

    def config_for_hash(self) -> dict[str, Any]:
        return self.model_dump(exclude={"test_id", "output_dir", "threads", "seed", "arm"})


class Event(str, enum.Enum):
    """The closed set of events a worker sends; the runner has a handler for each (tests check it)."""

    STARTED = "started"  # pid, versions
    PHASE = "phase"  # text: what the arm does before its first step (e.g. building the toy model)
    CONFIG = "config"  # the resolved GRPOConfig, trainable parameters, dataset rows, digest and columns, model source
    PARAMS = "params"  # extra parameters to record (determinism switches, critic controls)
    METRICS = "metrics"  # step, metrics
    REWARD_ERRORS = "reward_errors"  # totals per reward function and the first message of each
    WARNING = "warning"  # message: something the user should see that did not stop the arm
    FINISHED = "finished"  # seconds, final metrics
    FAILED = "failed"  # error
    KILLED = "killed"  # reason


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in VERSIONED_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


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
        return cls(open(path, "a", buffering=1, encoding="utf-8"))  # lives as long as the worker

    def emit(self, event: Event, **payload: Any) -> None:
        if not isinstance(event, Event):
            raise TypeError(f"unknown event {event!r}: events are hypotrack.protocol.Event members")
        if self.stream is None:
            return
        record = {"event": event.value, **{k: _clean(v) for k, v in payload.items()}}
        if "metrics" in record:
            record["metrics"] = {k: _clean(v) for k, v in record["metrics"].items()}
        try:
            self.stream.write(json.dumps(record, default=str) + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.stream = None  # disk full or closed: training output still lands in the arm folder


def parse_event(line: str) -> dict[str, Any] | None:
    """One event line as a dict with `event` an Event member; None for a line that is not one."""
    try:
        record = json.loads(line)
        record["event"] = Event(record.get("event"))
    except (json.JSONDecodeError, ValueError, TypeError, AttributeError):
        return None
    if "metrics" in record:
        record["metrics"] = {k: (float(v) if isinstance(v, str) else v) for k, v in record["metrics"].items()}
    return record


class EventTail:
    """Reads the complete lines appended to an events file since the last call."""

    def __init__(self, path):
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
