"""Worker body for trainer `critic`: train the two critic backends and log their parity."""

from __future__ import annotations

from pathlib import Path

from .arms import ArmSpec
from .events import EventWriter
from .worker import resolve_model_path


def train(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    import torch

    from .critic.run import run_critic_parity
    from .critic.settings import CriticSettings

    torch.set_num_threads(max(1, spec.threads))
    settings = CriticSettings.model_validate(spec.critic or {})
    artifacts = out_dir / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)

    def log_metrics(metrics: dict[str, float], step: int) -> None:
        events.emit("metrics", step=step, max_steps=spec.max_steps, metrics=metrics)

    def log_params(params: dict) -> None:
        events.emit("params", params={f"critic.{k}": v for k, v in params.items()})

    return run_critic_parity(settings, resolve_model_path(spec.model), spec.seed, log_metrics, artifacts,
                             log_params=log_params)

