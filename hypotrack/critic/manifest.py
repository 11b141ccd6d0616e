"""Every metric name a critic parity run emits (no torch here; criteria are checked against this list).

Naming:
- `critic/<backend>/loss`                 value loss of each critic at the logged step (same key every step,
                                          so MLflow plots both losses side by side)
- `critic/parity/<data>/<metric>`         parity of the critics' values at the logged step (current)
- `critic/parity/before|after/<data>/...` the same before training (step 0) and after the last step
- `critic/<backend>/initial_loss`, `critic/parity/initial_loss_abs_diff`
  the seed's "initial loss values should be identical if properly configured"
with <backend> in value_head, token_cls and <data> in random (random-token sequences) and real (sampled
task completions, completion tokens only).
"""
from __future__ import annotations

BACKEND_NAMES = ("value_head", "token_cls")
DATA_KINDS = ("random", "real")
# Parity metrics between the two critics' values on one data kind.
PAIR_METRICS = ("pearson", "spearman", "near_share", "mean_abs_diff", "max_abs_diff")
# Value range of each critic on one data kind.
RANGE_METRICS = tuple(f"{b}/{m}" for b in BACKEND_NAMES for m in ("min", "max"))
PARITY_METRICS = PAIR_METRICS + RANGE_METRICS


def parity_key(data: str, metric: str, phase: str | None = None) -> str:
    """phase None = current (per-step) value; "before" / "after" = the table columns."""
    mid = f"{phase}/" if phase else ""
    return f"critic/parity/{mid}{data}/{metric}"


# Logged at every logged step, always with exactly these keys.
STEP_METRICS: list[str] = (
    [f"critic/{b}/loss" for b in BACKEND_NAMES]
    + ["critic/parity/loss_abs_diff"]
    + [parity_key(d, m) for d in DATA_KINDS for m in PARITY_METRICS]
)

# Returned (and logged once) at the end of the run.
FINAL_METRICS: list[str] = (
    [f"critic/{b}/initial_loss" for b in BACKEND_NAMES]
    + [f"critic/{b}/final_loss" for b in BACKEND_NAMES]
    + ["critic/parity/initial_loss_abs_diff", "critic/parity/final_loss_abs_diff"]
    + [parity_key(d, m, p) for p in ("before", "after") for d in DATA_KINDS for m in PARITY_METRICS]
    + [
        "critic/data/reward_mean",
        "critic/data/reward_std",
        "critic/data/num_train_sequences",
        "critic/data/num_completion_tokens",
        "critic/controls/value_head_init",
        "critic/controls/dropout_prob",
        "critic/controls/token_cls_dropout",
        "critic/controls/data_shuffle",
        "critic/controls/deterministic",
        "critic/steps",
        "critic/wall_s",
    ]
)

CRITIC_METRICS: list[str] = STEP_METRICS + FINAL_METRICS

assert len(set(CRITIC_METRICS)) == len(CRITIC_METRICS), "duplicate critic metric names"
