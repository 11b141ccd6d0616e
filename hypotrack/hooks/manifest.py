"""What each diagnostics hook emits and accepts, without importing torch (the spec loader uses this to
reject unknown hook names, metric names and settings at load time).

Metric names are the short names a hook returns; the trainer logs them as ``diag/<hook>/<name>``.
``{func}`` stands for a reward function name, ``{a}``/``{b}`` for a pair of them (a before b in the
experiment's reward function order). Not every key appears at every step: the "every N steps" checks
report on their steps only, and a few keys are emitted only when they are defined (see each module).
"""
from __future__ import annotations

HOOK_METRICS: dict[str, list[str]] = {
    "advantages": [
        "abs_max", "abs_mean", "abs_p99",
        "group_std_min", "group_std_mean",
        "near_zero_std_share", "near_zero_std_abs_adv_max",
        "abs_max_group", "abs_max_batch", "abs_max_none",
        "recompute_max_abs_diff",
    ],
    "token_masking": [
        "prompt_share", "environment_share", "padding_share", "completion_share",
        "loss_tokens_per_row", "eos_masked_share", "pad_eos_same", "echo_row_share",
        "loss_padding_share",
    ],
    "kl": [
        "beta", "policy_moved", "k_source",
        "k1_mean", "k1_max", "k2_mean", "k2_max", "k3_mean", "k3_max", "k1_neg_share",
        "kl_loss_share", "kl_grad_share",
        "ref_is_policy", "ref_available", "ref_logp_max_abs_diff",
    ],
    "truncation": [
        "prompt_len_mean", "prompt_len_p95", "prompt_len_max",
        "truncation_known", "truncation_rate", "tokens_lost_mean",
        "answer_known_share", "answer_survival",
        "completion_clipped_ratio",
    ],
    "reward_signal": [
        "{func}/mean", "{func}/std", "{func}/nan_share", "{func}/errors",
        "corr/{a}__{b}",
        "zero_std_group_share", "errors",
        "task/mean", "task/std", "aux/count", "aux/std_max", "aux/task_corr_min", "aux/task_alignment",
        "aux/untracked_share", "aux/reward_share", "aux/mean",
    ],
    "lora_sync": [
        "lora_enabled",
        "adapter_count", "a_norm_mean", "b_norm_mean", "b_norm_min", "delta_norm_mean", "delta_norm_min",
        "frozen_adapter_share", "zero_b_share", "step_change_mean", "untrainable_adapter_share",
        "ref_equals_base", "ref_available",
        "gen_captured", "gen_adapter_active_share", "gen_checksum_rel_diff", "gen_token_match_share",
        "logp_gap_mean", "logp_gap_max", "logp_gap_source",
    ],
    "weights": [
        "grad_norm_total", "grad_norm_max_layer", "grad_norm_layer_first", "grad_norm_layer_last",
        "grad_norm_embed", "grad_zero_share",
        "delta_norm", "delta_rel", "delta_rel_max_layer", "delta_rel_layer_first", "delta_rel_layer_last",
        "delta_rel_embed", "step_delta_rel", "grad_clipped",
    ],
    "zero_variance": ["tied_share", "tied_distinct_share", "zero_advantage_share", "reward_constant"],
    "completion_length": ["clipped_share", "length_mean", "terminated_task_reward", "clipped_task_reward",
                          "clipped_reward_gap"],
    "reward_check": ["reference_beats_wrong_share", "reference_reward_mean", "wrong_reward_mean", "checked_rows"],
    "sampling_parity": ["transform_gap_mean", "transform_gap_max", "gap_without_temperature",
                        "gap_without_repetition_penalty", "gap_without_top_k_top_p", "closing_transform",
                        "sampling_temperature", "scoring_temperature"],
    "diversity": ["entropy", "entropy_ratio", "identical_group_share", "distinct_share"],
}

HOOK_DESCRIPTIONS: dict[str, str] = {
    "advantages": "h01: advantage magnitudes, per-group reward std, near-zero-std groups, abs max under each scale_rewards mode",
    "token_masking": "h02: share of loss-bearing tokens that are prompt / environment / padding / completion, eos masking, HTML samples",
    "kl": "h03: k1/k2/k3 KL estimates, KL share of the loss, reference logprobs vs a fresh frozen-reference forward, ref == policy",
    "truncation": "h04: prompt length stats, truncation rate, answer-span survival, clipped completions",
    "reward_signal": "h05: the task reward and the auxiliary ones by role (how much of the advantage signal the "
                     "task reward does not explain), per function mean/std/errors, correlations, histograms",
    "lora_sync": "h06: LoRA adapter norms and movement, reference == base, generator vs trainer weights and logprob gap",
    "weights": "any: per-layer gradient norms and weight change since train begin",
    "zero_variance": "h11: groups whose completions all get the same reward though they differ, zero advantages",
    "completion_length": "h12: completions cut at max_completion_length and the task reward they lose",
    "reward_check": "h13: the task reward of each row's reference answer against a wrong answer in the same format",
    "sampling_parity": "h14: logprob gap between the sampling transforms and the scoring one, and which transform "
                       "closes it",
    "diversity": "h15: policy entropy against the run's start, identical and distinct completions per group",
}

# Settings each hook accepts: name -> type (None defaults are allowed for every setting whose default is None).
HOOK_SETTINGS: dict[str, dict[str, type]] = {
    "advantages": {"near_tie": float},
    "token_masking": {"min_prompt_echo": int, "echo_fraction": float, "n_samples": int, "sample_every": int,
                      "max_samples": int},
    "kl": {"every": int, "sample_rows": int, "ref_is_policy_tol": float},
    "truncation": {},
    "reward_signal": {"reservoir_size": int},
    "lora_sync": {"every": int, "sample_rows": int, "temperature": float},
    "weights": {"every": int, "snapshot_device": str},
    "zero_variance": {},
    "completion_length": {},
    "reward_check": {"every": int, "rows": int},
    "sampling_parity": {"every": int},
    "diversity": {},
}

# Their defaults (the values the hook constructors use).
HOOK_SETTING_DEFAULTS: dict[str, dict[str, object]] = {
    "advantages": {"near_tie": 0.01},
    "token_masking": {"min_prompt_echo": 8, "echo_fraction": 0.5, "n_samples": 3, "sample_every": 50,
                      "max_samples": 12},
    "kl": {"every": 10, "sample_rows": 4, "ref_is_policy_tol": 1e-05},
    "truncation": {},
    "reward_signal": {"reservoir_size": 2000},
    "lora_sync": {"every": 10, "sample_rows": 8, "temperature": None},
    "weights": {"every": 1, "snapshot_device": 'cpu'},
    "zero_variance": {},
    "completion_length": {},
    "reward_check": {"every": 10, "rows": 16},
    "sampling_parity": {"every": 10},
    "diversity": {},
}
