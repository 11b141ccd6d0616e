"""Runner entry point: run one parity check, log its metrics once (step 0), write its tables."""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from .settings import ParitySettings


def run_check(settings: ParitySettings, model_path: str, seed: int):
    """Run the check named by settings.check; returns its result object (LossParityResult, ...)."""
    from .common import resolve_model_path

    model_path = resolve_model_path(model_path)
    s = settings
    if s.check == "loss":
        from .loss import run_loss_parity

        return run_loss_parity(
            model_path, loss_types=tuple(s.loss_types), betas=tuple(s.betas), tolerance=s.tolerance, seed=seed,
            num_prompts=s.num_prompts, num_generations=s.num_generations,
            max_completion_length=s.max_completion_length, epsilon=s.epsilon, epsilon_high=s.epsilon_high,
            scale_rewards=s.scale_rewards, train_mode=s.train_mode,
            gradient_accumulation_steps=s.gradient_accumulation_steps, variants=s.variants,
            variant_beta=s.variant_beta, use_bias_correction_kl=s.use_bias_correction_kl, threads=s.threads)
    if s.check == "logprobs":
        from .logprobs import run_logprob_parity

        return run_logprob_parity(
            model_path, contexts=tuple(s.contexts), seed=seed, num_prompts=max(s.num_prompts, 2),
            num_generations=2, max_new_tokens=s.max_completion_length, dropout=s.dropout,
            tolerance=s.logprob_tolerance, first_k=s.first_k, threads=s.threads)
    if s.check == "determinism":
        from .determinism import default_train_fn, run_determinism

        kw = dict(steps=s.steps, loss_type=s.loss_type, beta=s.beta, learning_rate=s.learning_rate,
                  max_completion_length=min(s.max_completion_length, 8))
        fn_b = default_train_fn(model_path, perturb_at_step=s.perturb_at_step, **kw) if s.perturb_at_step else None
        return run_determinism(default_train_fn(model_path, **kw), seed=seed, train_fn_b=fn_b,
                               deterministic=s.deterministic, threads=s.threads)
    raise ValueError(f"unknown parity check {s.check!r}")


def passed(settings: ParitySettings, result) -> bool:
    if settings.check == "determinism":
        return bool(result.identical)
    return bool(result.passed)


def write_artifacts(settings: ParitySettings, result, artifact_dir: Path) -> list[Path]:
    """parity_<check>.md and parity_<check>.json in artifact_dir."""
    from . import determinism, logprobs, loss

    mod = {"loss": loss, "logprobs": logprobs, "determinism": determinism}[settings.check]
    artifact_dir = Path(artifact_dir)
    artifact_dir.mkdir(parents=True, exist_ok=True)
    md = artifact_dir / f"parity_{settings.check}.md"
    js = artifact_dir / f"parity_{settings.check}.json"
    md.write_text(f"# parity: {settings.check}\n\n{mod.to_markdown(result)}\n")
    payload = {"settings": settings.model_dump(), **mod.to_json(result)}
    js.write_text(json.dumps(payload, indent=2, default=_json_default, allow_nan=True))
    return [md, js]


def _json_default(o):
    if isinstance(o, float) and math.isnan(o):
        return None
    return str(o)


def run_probe(settings: ParitySettings, model_path: str, seed: int,
              log_metrics: Callable[[dict[str, float], int], None], artifact_dir: Path) -> dict[str, float]:
    """Run the check, log its metrics at step 0, write markdown/JSON tables, return the metrics."""
    result = run_check(settings, model_path, seed)
    metrics = {k: float(v) for k, v in result.metrics().items()}
    log_metrics(metrics, 0)
    write_artifacts(settings, result, artifact_dir)
    return metrics
