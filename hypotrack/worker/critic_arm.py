"""A critic parity arm (trainer: critic): train both critics on the same data, stream their parity."""

from __future__ import annotations

from pathlib import Path

from hypotrack.protocol import ArmSpec, Event, EventWriter
from hypotrack.toy.lab import resolve_model
from hypotrack.worker.library_arm import prepare


def train(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    from hypotrack.critic.run import run_critic_parity
    from hypotrack.critic.settings import CriticSettings

    artifacts, log_metrics = prepare(spec, out_dir, events)
    settings = CriticSettings.model_validate(spec.critic or {})

    def log_params(params: dict) -> None:  # already named critic.<control>
        events.emit(Event.PARAMS, params=params)

    return run_critic_parity(settings, resolve_model(spec.model), spec.seed, log_metrics, artifacts,
                             log_params=log_params)
