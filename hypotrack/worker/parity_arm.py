"""A parity probe arm (trainer: parity): run one parity check as a run, so it gets a verdict."""

from __future__ import annotations

from pathlib import Path

from hypotrack.protocol import ArmSpec, EventWriter
from hypotrack.toy.lab import resolve_model
from hypotrack.worker.library_arm import prepare


def train(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    from hypotrack.parity.probe import run_probe
    from hypotrack.parity.settings import ParitySettings

    artifacts, log_metrics = prepare(spec, out_dir, events)
    settings = ParitySettings.model_validate(spec.parity or {})
    return run_probe(settings, resolve_model(spec.model), spec.seed, log_metrics, artifacts)
