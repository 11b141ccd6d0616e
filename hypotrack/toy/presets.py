"""Calibrated GRPO settings for the toy lab (measured with calibrate.py; see its docstring).

Plain dicts of GRPOConfig field names so any runner can splat them: GRPOConfig(**GRPO_SETTINGS[task]).
Target: baseline reward (first 5 steps) in 0.25-0.75 and +0.10 after 100 steps for seeds 0, 1, 2.
STATUS (warmstart ws3): NOT yet met. arith full FT lr 3e-4: baselines 0.38-0.47, delta +0.19/+0.05/+0.07.
musique-mini full FT lr 3e-4: baselines 0.0-0.18 (warm start too weak), delta +0.09/+0.23/+0.32.
LoRA rates below are untested guesses.
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
    num_generations=4,  # 8 prompts x 4 completions per step: 2-4 prompts were too noisy to improve
    temperature=1.0,
    beta=0.0,  # no reference model: halves forward passes; set > 0 to exercise KL code paths
    loss_type="dapo",
    scale_rewards="group",
    max_steps=100,
    lr_scheduler_type="constant",  # linear decay starved the last steps of updates
    dataloader_num_workers=0,
    disable_tqdm=True,
)

GRPO_SETTINGS = {
    # Full fine-tuning.
    "arith": dict(_COMMON, learning_rate=3e-4, max_completion_length=6),
    # Long prompts make a step ~10x dearer than arith, so 4 prompts x 4 completions per step.
    "musique-mini": dict(_COMMON, learning_rate=3e-4, max_completion_length=6, per_device_train_batch_size=16),
}

# LoRA variant: same GRPO settings, higher learning rate (adapters start at zero and are few).
LORA_CONFIG = dict(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                   task_type="CAUSAL_LM")
LORA_SETTINGS = {
    "arith": dict(GRPO_SETTINGS["arith"], learning_rate=1e-2),
    "musique-mini": dict(GRPO_SETTINGS["musique-mini"], learning_rate=1e-2),
}

# Rows per GRPO dataset: 100 steps x 8 prompts = 800 prompts, with room for longer runs.
DATASET_SIZES = {"arith": 2000, "musique-mini": 2000}
