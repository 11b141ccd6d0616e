"""One critic parity run: build data, train both critics side by side, measure, write the table.

Called by the runner (one worker process per run) as
    run_critic_parity(settings, model_path, seed, log_metrics, artifact_dir)
Step t in the logs is the state after t updates of both critics; every logged step carries exactly
`manifest.STEP_METRICS`, so MLflow plots `critic/value_head/loss` and `critic/token_cls/loss` on the
same steps. Artifacts: critic_parity_table.md, critic_parity.json, critic_interpretation.txt.
"""
from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .manifest import BACKEND_NAMES, CRITIC_METRICS, STEP_METRICS
from .settings import CriticSettings, resolve_controls


def run_critic_parity(
    settings: CriticSettings,
    model_path: str,
    seed: int,
    log_metrics: Callable[[dict[str, float], int], None],
    artifact_dir: Path,
    *,
    log_params: Callable[[dict], None] | None = None,
    environ: Mapping[str, str] | None = None,
    task=None,
    console=None,
) -> dict[str, float]:
    """Train both critics for settings.steps and return the final metrics (manifest.CRITIC_METRICS).

    log_params, when given, receives the resolved controls (`resolve_controls`) before training.
    task: an optional `data.CriticTask` (prompts, columns, reward callables) instead of settings.task /
    dataset / reward_funcs. console: a rich Console to print the table on (default: don't print).
    """
    import torch

    from .backends import build_critic
    from .data import (
        batch_indices,
        build_real_data,
        load_task,
        load_tokenizer,
        order_generator,
        quiet_transformers,
        random_token_data,
    )
    from .parity import interpret, measure, render_table, table_markdown, table_rows
    from .train import CriticTrainer

    t0 = time.perf_counter()
    artifact_dir = Path(artifact_dir)
    artifact_dir.mkdir(parents=True, exist_ok=True)
    controls = resolve_controls(settings, os.environ if environ is None else environ, seed=seed)
    if log_params is not None:
        log_params({f"critic.{k}": v for k, v in controls.items()})
    data_seed, training_seed = int(controls["data_seed"]), int(controls["training_seed"])

    # --- data (data seed) --------------------------------------------------------------------
    tokenizer = load_tokenizer(model_path)
    n_real = settings.num_sequences + settings.num_eval_sequences
    if task is None:
        task = load_task(settings, n_real, data_seed)
    elif len(task.prompts) < n_real:
        raise ValueError(f"task has {len(task.prompts)} prompts; the settings need {n_real}")
    train_data, real_eval = build_real_data(model_path, tokenizer, task, settings, data_seed)
    with quiet_transformers():
        from transformers import AutoConfig

        vocab = int(AutoConfig.from_pretrained(str(model_path)).get_text_config().vocab_size)
    random_eval = random_token_data(tokenizer, vocab, settings.num_random_sequences, settings.random_seq_len, data_seed)
    evals = {"random": random_eval, "real": real_eval}

    # --- critics (training seed) -------------------------------------------------------------
    with quiet_transformers():
        critics = {name: build_critic(name, model_path, controls) for name in BACKEND_NAMES}
    shuffle = controls["data_shuffle"]
    trainers = {
        name: CriticTrainer(
            critics[name], settings, train_data,
            batch_indices(len(train_data), settings.batch_size, shuffle,
                          order_generator(data_seed, name) if shuffle else None),
        )
        for name in BACKEND_NAMES
    }
    torch.manual_seed(training_seed)  # dropout masks

    # --- train side by side ------------------------------------------------------------------
    thr, tm = settings.near_threshold, settings.values_in_train_mode
    final: dict[str, float] = {}
    last_step: dict[str, float] = {}
    for t in range(settings.steps + 1):
        losses = {name: trainers[name].forward_backward() for name in BACKEND_NAMES}
        if t % settings.eval_every == 0 or t == settings.steps:  # always true at t == 0
            step_metrics = {f"critic/{name}/loss": losses[name] for name in BACKEND_NAMES}
            step_metrics["critic/parity/loss_abs_diff"] = abs(losses["value_head"] - losses["token_cls"])
            step_metrics.update(measure(critics, evals, thr, train_mode=tm))
            assert list(step_metrics) == STEP_METRICS, "step metrics drifted from the manifest"
            log_metrics(step_metrics, t)
            last_step = step_metrics
        if t == 0:
            for name in BACKEND_NAMES:
                final[f"critic/{name}/initial_loss"] = losses[name]
            for k, v in step_metrics.items():
                if k.startswith("critic/parity/") and k != "critic/parity/loss_abs_diff":
                    final[k.replace("critic/parity/", "critic/parity/before/", 1)] = v
        if t < settings.steps:
            for name in BACKEND_NAMES:
                trainers[name].apply()

    # --- final metrics -----------------------------------------------------------------------
    for name in BACKEND_NAMES:
        final[f"critic/{name}/final_loss"] = last_step[f"critic/{name}/loss"]
    final["critic/parity/initial_loss_abs_diff"] = abs(final["critic/value_head/initial_loss"] - final["critic/token_cls/initial_loss"])
    final["critic/parity/final_loss_abs_diff"] = last_step["critic/parity/loss_abs_diff"]
    for k, v in last_step.items():
        if k.startswith("critic/parity/") and k != "critic/parity/loss_abs_diff":
            final[k.replace("critic/parity/", "critic/parity/after/", 1)] = v
    rewards = train_data.rewards
    final.update({
        "critic/data/reward_mean": float(rewards.mean()),
        "critic/data/reward_std": float(rewards.std(unbiased=False)),
        "critic/data/num_train_sequences": float(len(train_data)),
        "critic/data/num_completion_tokens": float(train_data.loss_mask.sum()),
        "critic/controls/value_head_init": controls["value_head_init"],
        "critic/controls/dropout_prob": controls["dropout_prob"],
        "critic/controls/token_cls_dropout": controls["token_cls_dropout"],
        "critic/controls/data_shuffle": float(controls["data_shuffle"]),
        "critic/controls/deterministic": float(controls["deterministic"]),
        "critic/steps": float(settings.steps),
    })
    final.update(last_step)
    final["critic/wall_s"] = time.perf_counter() - t0
    missing = set(CRITIC_METRICS) - set(final)
    assert not missing, f"metrics missing from the manifest: {sorted(missing)}"
    final = {k: float(final[k]) for k in CRITIC_METRICS}

    # --- artifacts ---------------------------------------------------------------------------
    backends = tuple(settings.backends)
    interp = interpret(final, controls, expected_pearson=settings.expected_pearson)
    (artifact_dir / "critic_parity_table.md").write_text(
        "# Critic parity\n\n" + table_markdown(final, backends)
        + f"\nNearly identical: |diff| < {settings.near_threshold:g}. Real data: completion tokens of "
        f"{settings.num_eval_sequences} held-out sampled completions; random: {settings.num_random_sequences} "
        f"x {settings.random_seq_len} random tokens. {settings.steps} steps.\n\n## Interpretation\n\n"
        + interp.text
    )
    (artifact_dir / "critic_interpretation.txt").write_text(interp.text)

    def _json_safe(x):
        return None if isinstance(x, float) and math.isnan(x) else x

    (artifact_dir / "critic_parity.json").write_text(json.dumps({
        "metrics": {k: _json_safe(v) for k, v in final.items()},
        "resolved_controls": controls,
        "settings": settings.model_dump(mode="json"),
        "table": {"header": ["Metric", "Random before", "Random after", "Real before", "Real after"],
                  "rows": table_rows(final, backends)},
        "interpretation": {"parity_ok": interp.parity_ok, "causes": interp.causes,
                           "findings": interp.findings, "steps": interp.steps, "text": interp.text},
        "sample_completions": train_data.completions[:8],
        "model_path": str(model_path),
        "seed": seed,
    }, indent=2))
    if console is not None:
        render_table(final, console, backends)
        console.print(interp.text)
    return final
