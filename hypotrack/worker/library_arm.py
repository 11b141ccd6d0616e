"""Set-up shared by the arms that run one library call as a run (critic, parity).

Their outcome gets a verdict like any training run: metrics stream to the runner,
reports land in the artifacts folder.
"""

from __future__ import annotations

from pathlib import Path

from hypotrack.protocol import ArmSpec, Event, EventWriter


def prepare(spec: ArmSpec, out_dir: Path, events: EventWriter):
    """Thread budget, the artifacts folder, and a metric logger that streams to the runner."""
    import torch

    torch.set_num_threads(max(1, spec.threads))
    artifacts = out_dir / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)

    def log_metrics(metrics: dict[str, float], step: int) -> None:
        events.emit(Event.METRICS, step=step, max_steps=spec.max_steps, metrics=metrics)

    return artifacts, log_metrics
