"""Calibrated GRPO settings for the toy lab (measured with calibrate.py; see its docstring).

These mirror the experiment YAMLs (experiments/toy_arith.yaml, experiments/musique_mini.yaml:
settings, lora, rewards, reward_weights, data.size); tests/test_toy_lab.py checks they agree.
Plain dicts of GRPOConfig field names so any runner can splat them: GRPOConfig(**GRPO_SETTINGS[task]).
Target: baseline reward (first 5 steps) in 0.25-0.75 and +0.10 after 100 steps for seeds 0, 1, 2,
with LoRA (the default) and reward = 1.0 * correct + 0.1 * format.
STATUS (warmstart ws5, LoRA lr 3e-3): NOT fully met (2 of 3 seeds per task).
arith: baselines 0.62/0.79/0.64, delta +0.18/-0.09/+0.20 (seed 1: baseline too high, no gain); step ~0.07 s idle.
musique-mini: baselines 0.61/0.71/0.72, delta +0.17/+0.08/+0.13; step ~0.45 s (on a loaded 2-core box).
LoRA lr 1e-2 collapses (arith: reward -> 0.10, format only); lr 2e-3/5e-3 no better than 3e-3.
Next levers: arith warm start 520-540 steps (baseline ~0.5), num_generations 8; musique warm start ~125 steps.
"""

# Shared by every task: CPU, no mixed precision, log every step so baselines are measurable.
_COMMON = dict(
    use_cpu=True,
    bf16=False,
    fp16=False,
    report_to="none",
    logging_steps=1,
    save_strategy="no",
    per_device_train_batch_size=32,
    num_generations=4,
    temperature=1.0,
    beta=0.0,  # no reference model: halves forward passes; set > 0 to exercise KL code paths
    loss_type="dapo",
    scale_rewards="group",
    max_steps=100,
    lr_scheduler_type="constant",  # linear decay starved the last steps of updates
    dataloader_num_workers=0,
    disable_tqdm=True,
)

# LoRA is the default (the YAMLs' lora.enabled: true); learning rates below are LoRA rates.
GRPO_SETTINGS = {
    "arith": dict(_COMMON, learning_rate=3e-3, max_completion_length=6),
    "musique-mini": dict(_COMMON, learning_rate=3e-3, max_completion_length=6, per_device_train_batch_size=16),
}
LORA_CONFIG = dict(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
FULL_FT_LEARNING_RATE = 3e-4  # h06's treatment arm: full fine-tuning

REWARDS = {
    "arith": ["hypotrack.toy.rewards:arith_correct", "hypotrack.toy.rewards:arith_format"],
    "musique-mini": ["hypotrack.toy.rewards:musique_correct", "hypotrack.toy.rewards:musique_format"],
}
REWARD_WEIGHTS = {"arith": [1.0, 0.1], "musique-mini": [1.0, 0.1]}

# Rows per GRPO dataset (the YAMLs' data.size).
DATASET_SIZES = {"arith": 512, "musique-mini": 512}
