"""The arms of a test compared: per-step means over seeds, and the figure of the arms' reward curves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypotrack.run.arms import ArmState


@dataclass(frozen=True)
class ArmPoint:
    step: int
    mean: float  # over the seeds that logged this step
    low: float  # min and max over those seeds
    high: float
    seeds: int


def arm_means(arms: list["ArmState"], metric: str) -> dict[str, list[ArmPoint]]:
    """arm -> the metric's per-step mean over seeds (with the min-max band), for the arms that logged it."""
    by_arm: dict[str, list[dict[int, float]]] = {}
    for arm in arms:
        points = dict(arm.series.get(metric, []))
        if points:
            by_arm.setdefault(arm.spec.arm, []).append(points)
    out: dict[str, list[ArmPoint]] = {}
    for name, runs in by_arm.items():
        curve = []
        for step in sorted(set().union(*runs)):
            values = [run[step] for run in runs if step in run]
            curve.append(ArmPoint(step, sum(values) / len(values), min(values), max(values), len(values)))
        out[name] = curve
    return out


def reward_curves(arms: list["ArmState"], metric: str = "reward"):  # a matplotlib Figure or None
    """Mean over seeds per arm, with the min-max band across seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_arm = arm_means(arms, metric)
    if not by_arm:
        return None
    figure, axis = plt.subplots(figsize=(7, 4))
    for name, curve in by_arm.items():
        steps = [p.step for p in curve]
        seeds = max(p.seeds for p in curve)
        line, = axis.plot(steps, [p.mean for p in curve], label=f"{name} (mean of {seeds} seeds)")
        axis.fill_between(steps, [p.low for p in curve], [p.high for p in curve], alpha=0.2, color=line.get_color())
    axis.set_xlabel("step")
    axis.set_ylabel(metric)
    axis.set_title(f"{metric}: arms compared (band = min-max over seeds)")
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure
