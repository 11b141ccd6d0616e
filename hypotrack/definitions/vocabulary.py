"""The closed sets of words hypotrack and TRL agree on, declared once.

Plain tuples, no imports: the registry, the spec models, the CLI's choices, the
GRPO maths and the hooks all read them from here.
"""

from __future__ import annotations

# A hypothesis's status in the registry. not_applicable: the run lacks what the hypothesis needs (no KL
# term, a single reward function): nothing was ruled out, and nothing is left to test on that run.
STATUSES: tuple[str, ...] = ("pending", "testing", "validated", "partial", "invalidated", "inconclusive",
                             "not_applicable")
RESOLVED_STATUSES = frozenset({"validated", "invalidated", "partial", "not_applicable"})
PRIORITIES: tuple[str, ...] = ("high", "medium", "low")
PRIORITY_RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
# A test run's state.
RUN_STATES: tuple[str, ...] = ("running", "finished", "failed", "killed")
ARMS: tuple[str, ...] = ("control", "treatment")

# GRPOConfig.scale_rewards and .loss_type values of trl 1.16 (its help text and its loss).
SCALE_REWARDS: tuple[str, ...] = ("group", "batch", "none")
# The dtype vLLM serves the model in: "trainer" is the dtype the trainer computes in; "auto" is vLLM's own choice
# (TRL builds its engine without a dtype, and vLLM then serves a float32 checkpoint in bfloat16).
GENERATOR_DTYPES: tuple[str, ...] = ("auto", "trainer", "float32", "bfloat16", "float16")
LOSS_TYPES: tuple[str, ...] = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo", "cispo", "sapo", "vespo")
# The ones hypotrack.grpo_math reproduces (and `hypotrack parity loss` checks): all but vespo.
REFERENCE_LOSS_TYPES: tuple[str, ...] = tuple(t for t in LOSS_TYPES if t != "vespo")

TRAINERS: tuple[str, ...] = ("grpo", "critic", "parity")

# What a hypothesis may require of the experiment it tests (its `requires:`). When the control arm
# lacks it, the hypothesis cannot explain that run: the verdict says so instead of changing the run.
REQUIREMENTS: dict[str, str] = {
    "kl_term": "a KL term (beta > 0)",
    "lora": "LoRA adapters",
    "generator_sync": "weights the generator must be kept in step with: LoRA adapters, or vLLM generating (use_vllm)",
    "auxiliary_rewards": "auxiliary reward functions besides the task reward",
    "group_scaling": "advantages divided by a per-group std (scale_rewards: group, or normalize_then_sum)",
    "sequence_importance_sampling": "vLLM generating, with TRL's importance-sampling correction weighing whole "
                                    "completions (vllm_importance_sampling_mode sequence_mask, its default, or "
                                    "sequence_truncate)",
}
# TRL's vllm_importance_sampling_mode values that weigh a whole completion by the sum of its log-ratios (h27)
SEQUENCE_IMPORTANCE_MODES: tuple[str, ...] = ("sequence_mask", "sequence_truncate")
# The outcome a treatment's effect is measured on: the task reward over the last steps of training,
# or the held-out evaluation after training (greedy or sampled decoding); none for checks that are
# their own test (parity, critic).
EFFECT_OUTCOMES: tuple[str, ...] = ("task_reward", "eval_greedy", "eval_sampled", "none")

# The sampling settings TRL's vLLM requests leave unset (tests/test_trl_contract.py pins them): a vLLM server fills
# them from the served model's generation_config.json, so a run can sample with settings it never declared
# (NeMo-RL#3497). The sampling_parity hook applies the server's values; h14's treatment sends them as 0.
SAMPLING_LEFT_TO_THE_SERVER: tuple[str, ...] = ("presence_penalty", "frequency_penalty")
