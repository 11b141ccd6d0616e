"""Every metric name the parity probes emit (no torch import), so criteria can name them."""
from __future__ import annotations

from hypotrack.definitions.vocabulary import REFERENCE_LOSS_TYPES as LOSS_TYPES

LOSS_VARIANTS = ["seq_reinforce", "k1_kl", "full_length", "kl_no_is_weight", "seed004_all"]
LOGPROB_CONTEXTS = ["sampling", "grad_enabled", "train_mode", "train_mode_dropout", "batch_of_one", "right_padding",
                    "trl_fused", "bf16", "cuda_fp32", "cuda_bf16"]

LOSS_METRICS = [
    "parity/loss/max_abs_diff",  # max over (loss_type, beta) of |loss_TRL - loss_reference|
    "parity/loss/grad_max_abs_diff",  # max over cases and parameters of |grad_TRL - grad_reference|
    "parity/loss/passed",  # 1 when every case is within tolerance (atol = rtol = tolerance)
    "parity/loss/n_cases",
    "parity/loss/seconds",
    "parity/loss/kl_metric_abs_diff",  # |TRL's logged `kl` - reference mean KL| (only when some beta != 0)
    "parity/loss/accumulation/grad_max_abs_diff",  # the same batch as 2 and 4 accumulated micro-batches vs one pass
    "parity/loss/accumulation/passed",  # 1 when they agree for every loss type not normalised per micro-batch
    *[f"parity/loss/{lt}/{m}" for lt in LOSS_TYPES for m in ("max_abs_diff", "grad_max_abs_diff")],
    *[f"parity/loss/variant/{v}/{m}" for v in LOSS_VARIANTS
      for m in ("loss_rel_diff", "grad_norm_ratio", "grad_cosine")],
]

LOGPROB_METRICS = [
    *[f"parity/logprobs/{c}/{m}" for c in LOGPROB_CONTEXTS
      for m in ("max_abs_diff", "mean_abs_diff", "bitwise_identical_frac")],
    "parity/logprobs/max_abs_diff_fp32",  # max over fp32 contexts that must agree (not train_mode_dropout)
    "parity/logprobs/max_abs_diff_bf16",  # max over bf16 contexts (present when one ran)
    "parity/logprobs/passed",  # 1 when max_abs_diff_fp32 <= logprob_tolerance
    "parity/logprobs/n_tokens",
    "parity/logprobs/seconds",
]

DETERMINISM_METRICS = [
    "parity/determinism/identical",  # 1 when metrics and final weights are bitwise identical
    "parity/determinism/metrics_identical",
    "parity/determinism/weights_identical",
    "parity/determinism/first_diff_step",  # 1-based step of the first differing metric, 0 when none
    "parity/determinism/n_params_differ",
    "parity/determinism/weights_max_abs_diff",
    "parity/determinism/metrics_max_abs_diff",
    "parity/determinism/seconds",
]

PARITY_METRICS: list[str] = LOSS_METRICS + LOGPROB_METRICS + DETERMINISM_METRICS
