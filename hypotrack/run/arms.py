"""An arm x seed as the runner holds it while the test runs: what every room of the runner reads.

The planning room makes the specs, the launching room starts each arm's worker and fills its state from the
worker's events, the recording room writes what the state says to MLflow and the registry.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from hypotrack.protocol import ArmSpec, EventTail

# Stands for the arm's own output folder in a command experiment's command line: the plan writes it, the
# launcher puts the folder in when the arm starts.
ARM_OUTPUT = "<arm-folder>/output"


class Worker(Protocol):
    """One arm's running worker, as the scheduling loop sees it (whatever launched it)."""

    def poll(self) -> int | None:
        """The exit code once the worker ended (its files are then in the arm folder), else None."""

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        """Ask it to stop (SIGTERM: cleanly; SIGKILL: now)."""

    def wait(self, timeout: float | None = None) -> int:
        """Block until it ended; raises subprocess.TimeoutExpired."""


@dataclass
class ArmState:
    spec: ArmSpec
    dir: Path
    run_id: str = ""
    process: Worker | None = None
    tail: EventTail | None = None
    status: str = "queued"  # queued, starting, running, finished, failed, killed
    step: int = 0
    reward: float | None = None
    started: float | None = None
    ended: float | None = None
    error: str = ""
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    reward_errors: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    phase: str = ""  # what a running arm does before its first step (e.g. building the toy model)
    configured: bool = False  # its trainer was built (a CONFIG event came)
    inferred: dict[str, str] = field(default_factory=dict)  # declaration -> the sentence stating what was inferred

    @property
    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.ended or time.time()) - self.started

    @property
    def done(self) -> bool:
        return self.status in ("finished", "failed", "killed")


Display = Callable[[list[ArmState]], None]


def series_by_arm(arms: list[ArmState]):
    """arm -> seed -> metric -> [(step, value)] for the arms that finished (what the verdict reads)."""
    series: dict[str, dict[int, dict[str, list[tuple[int, float]]]]] = {}
    for arm in arms:
        if arm.status == "finished":
            series.setdefault(arm.spec.arm, {})[arm.spec.seed] = arm.series
    return series
