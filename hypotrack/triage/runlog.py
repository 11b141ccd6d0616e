"""One run's logged metrics as triage reads them: a series of (step, value) per metric name."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

Points = list[tuple[int, float]]


@dataclass
class RunLog:
    """The metrics of one run, by name, with what the source said about the run besides.

    ``series`` holds the names the source logged (TRL's keys, whatever version wrote them) until
    keys.canonical() renames them; ``params`` are the run's configuration where the source keeps it
    (an MLflow run's params; a training folder or a CSV has none).
    """

    source: str
    kind: str  # mlflow | trainer_state | csv | series
    series: dict[str, Points] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, step: int, value: object) -> None:
        """Keep finite numbers only: TRL writes None for a metric with no valid value in a step."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        value = float(value)
        if math.isfinite(value):
            self.series.setdefault(name, []).append((int(step), value))

    def steps(self) -> int:
        """How many steps the most often logged metric has."""
        return max((len(points) for points in self.series.values()), default=0)

    def sort(self) -> "RunLog":
        """Points in step order, one per step (the last value logged at a step wins)."""
        for name, points in self.series.items():
            if any(a[0] >= b[0] for a, b in zip(points, points[1:])):  # most sources log in order already
                self.series[name] = sorted(dict(points).items())
        return self
