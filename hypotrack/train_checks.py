"""Worker bodies for the non-GRPO trainers: `critic` (critic parity) and `parity` (parity probes).

Both run one library call as a run, so its outcome gets a verdict like any
training run: metrics stream to the runner, reports land in the artifacts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .arms import ArmSpec
from .events import EventWriter
from .worker import resolve_model_path


def _prepare(spec: ArmSpec, out_dir: Path, events: EventWriter) -> tuple[Path, Callable[[dict[str, float], int], None]]:
    """Thread budget, the artifacts folder, and a metric logger that streams to the runner."""
    import torch

    torch.set_num_threads(max(1, spec.threads))
    artifacts = out_dir / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)

    def log_metrics(metrics: dict[str, float], step: int) -> None:
        events.emit("metrics", step=step, max_steps=spec.max_steps, metrics=metrics)

    return artifacts, log_metrics


def train_critic(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    from .critic.run import run_critic_parity
    from .critic.settings import CriticSettings

    artifacts, log_metrics = _prepare(spec, out_dir, events)
    settings = CriticSettings.model_validate(spec.critic or {})

    def log_params(params: dict) -> None:
        events.emit("params", params={f"critic.{k}": v for k, v in params.items()})

    return run_critic_parity(settings, resolve_model_path(spec.model), spec.seed, log_metrics, artifacts,
                             log_params=log_params)


def train_parity(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    from .parity.probe import run_probe
    from .parity.settings import ParitySettings

    artifacts, log_metrics = _prepare(spec, out_dir, events)
    settings = ParitySettings.model_validate(spec.parity or {})
    return run_probe(settings, resolve_model_path(spec.model), spec.seed, log_metrics, artifacts)
