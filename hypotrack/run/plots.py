"""Figures of a test: the arms' reward curves, averaged over seeds."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypotrack.run.workers import ArmState


def reward_curves(arms: list["ArmState"], metric: str = "reward"):  # noqa: ANN201 - a matplotlib Figure or None
    """Mean over seeds per arm, with the min-max band across seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_arm: dict[str, list[dict[int, float]]] = {}
    for arm in arms:
        points = dict(arm.series.get(metric, []))
        if points:
            by_arm.setdefault(arm.spec.arm, []).append(points)
    if not by_arm:
        return None
    figure, axis = plt.subplots(figsize=(7, 4))
    for name, runs in by_arm.items():
        steps = sorted(set().union(*runs))
        means, lows, highs = [], [], []
        for step in steps:
            values = [run[step] for run in runs if step in run]
            means.append(sum(values) / len(values))
            lows.append(min(values))
            highs.append(max(values))
        line, = axis.plot(steps, means, label=f"{name} (mean of {len(runs)} seeds)")
        axis.fill_between(steps, lows, highs, alpha=0.2, color=line.get_color())
    axis.set_xlabel("step")
    axis.set_ylabel(metric)
    axis.set_title(f"{metric}: arms compared (band = min-max over seeds)")
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure
