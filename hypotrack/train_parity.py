"""Worker body for trainer `parity`: run one parity check as a run, so its outcome gets a verdict."""

from __future__ import annotations

from pathlib import Path

from .arms import ArmSpec
from .events import EventWriter
from .worker import resolve_model_path


def train(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    import torch

    from .parity.probe import run_probe
    from .parity.settings import ParitySettings

    torch.set_num_threads(max(1, spec.threads))
    settings = ParitySettings.model_validate(spec.parity or {})
    artifacts = out_dir / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)

    def log_metrics(metrics: dict[str, float], step: int) -> None:
        events.emit("metrics", step=step, max_steps=spec.max_steps, metrics=metrics)

    return run_probe(settings, resolve_model_path(spec.model), spec.seed, log_metrics, artifacts)
