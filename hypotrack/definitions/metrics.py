"""The metric names a criterion may refer to, known without importing torch or trl.

A criterion that names a metric nobody logs would be inconclusive forever, so
the loader rejects it up front and suggests the closest known name.
"""

from __future__ import annotations

import difflib
import importlib

# What TRL 1.16's GRPOTrainer logs (plus Trainer's own loss/grad_norm/learning_rate).
TRL_METRICS = [
    "reward", "reward_std", "frac_reward_zero_std", "kl", "entropy", "loss", "grad_norm",
    "learning_rate", "num_tokens", "step_time", "policy_loss", "aux_loss", "entropy_coef",
    "clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean",
    "clip_ratio/low_min", "clip_ratio/high_max", "cispo_clip_ratio",
    "completions/mean_length", "completions/min_length", "completions/max_length",
    "completions/clipped_ratio", "completions/mean_terminated_length",
    "completions/min_terminated_length", "completions/max_terminated_length",
    "sampling/sampling_logp_difference/mean", "sampling/sampling_logp_difference/max",
    "sampling/importance_sampling_ratio/min", "sampling/importance_sampling_ratio/mean",
    "sampling/importance_sampling_ratio/max",
]
# Per reward function: {func} is the function's name (the part after ':' of its import path).
TRL_FUNC_METRICS = ["rewards/{func}/mean", "rewards/{func}/std"]
# Logged by hypotrack's GRPO worker itself, whatever hooks are attached: reward-function errors, the
# task reward by role (whatever the user's function is called) and the held-out evaluation before
# (step 0) and after training (the last step).
EVAL_METRICS = [*(f"eval/{what}/{decoding}" for what in ("task_reward", "reward")
                  for decoding in ("greedy", "sampled", "greedy_gain", "sampled_gain")),
                "eval/task_reward/greedy_rel_gain", "eval/task_reward/sampled_rel_gain"]
HYPOTRACK_METRICS = ["reward_errors", "reward_errors/{func}", "task_reward", "task_reward_std", *EVAL_METRICS]


def _manifest(module: str, attribute: str) -> object:
    """Catalogues live beside the code that emits the metrics (no torch at import)."""
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError):  # a component not installed contributes no names
        return {} if attribute in ("HOOK_METRICS", "HOOK_READS") else []


def hook_metrics() -> dict[str, list[str]]:
    return dict(_manifest("hypotrack.hooks.manifest", "HOOK_METRICS"))  # type: ignore[arg-type]


def hook_reads() -> dict[str, tuple[str, ...]]:
    """hook -> the experiment's declarations it reads (data.reference_column)."""
    return dict(_manifest("hypotrack.hooks.manifest", "HOOK_READS"))  # type: ignore[arg-type]


def hook_setting_names(hook: str) -> set[str]:
    settings = _manifest("hypotrack.hooks.manifest", "HOOK_SETTINGS") or {}
    return set(settings.get(hook, {}))  # type: ignore[union-attr]


def known_metric_patterns(trainer: str | None = None) -> list[str]:
    """Every metric name a criterion may use; with ``trainer``, only those that kind of run produces."""
    names: list[str] = []
    if trainer in (None, "grpo"):
        names += [*TRL_METRICS, *TRL_FUNC_METRICS, *HYPOTRACK_METRICS]
        for hook, metrics in hook_metrics().items():
            names += [f"diag/{hook}/{metric}" for metric in metrics]
    if trainer in (None, "parity"):
        names += list(_manifest("hypotrack.parity.manifest", "PARITY_METRICS"))  # type: ignore[arg-type]
    if trainer in (None, "critic"):
        names += list(_manifest("hypotrack.critic.manifest", "CRITIC_METRICS"))  # type: ignore[arg-type]
    return names


def trainer_of(metric: str) -> str:
    """The kind of run that produces a metric: parity, critic or grpo."""
    for trainer in ("parity", "critic"):
        if metric in known_metric_patterns(trainer):
            return f"trainer: {trainer}"
    return "trainer: grpo"


def expand(patterns: list[str], reward_funcs: list[str]) -> set[str]:
    """Concrete names: {func} becomes each reward function's name, {a}__{b} each ordered pair."""
    from itertools import permutations

    out: set[str] = set()
    for pattern in patterns:
        if "{func}" in pattern:
            out.update(pattern.replace("{func}", func) for func in reward_funcs)
        elif "{a}" in pattern and "{b}" in pattern:
            out.update(pattern.replace("{a}", a).replace("{b}", b) for a, b in permutations(reward_funcs, 2))
        else:
            out.add(pattern)
    return out


def reward_func_names(import_paths: list[str]) -> list[str]:
    return [path.rsplit(":", 1)[-1] for path in import_paths]


def check_metric(name: str, known: set[str], patterns: list[str]) -> str | None:
    """None when ``name`` is known, else a message with the closest suggestion."""
    if name in known:
        return None
    # A {func} metric for a function the experiment does not declare is still a typo,
    # but say which functions exist.
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown metric {name!r}{hint} (see `hypotrack validate --metrics` for the list)"
