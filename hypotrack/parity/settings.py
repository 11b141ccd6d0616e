"""Settings of the parity checks (no torch import: the CLI and spec loader import this)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hypotrack.definitions.vocabulary import REFERENCE_LOSS_TYPES, SCALE_REWARDS

LossType = Literal[REFERENCE_LOSS_TYPES]  # type: ignore[valid-type]
LogprobContext = Literal["sampling", "grad_enabled", "train_mode", "train_mode_dropout", "batch_of_one",
                         "right_padding", "trl_fused", "bf16", "cuda_fp32", "cuda_bf16"]


class ParitySettings(BaseModel):
    """Options of one parity check (`check`); fields of the other checks are ignored by it."""

    model_config = ConfigDict(extra="forbid")

    check: Literal["loss", "logprobs", "determinism"] = Field(
        description="Which parity check to run: 'loss' (TRL's loss vs reference GRPO loss), 'logprobs' "
        "(same tokens scored in different contexts), 'determinism' (two identical runs compared bitwise).")
    # --- loss ---
    loss_types: list[LossType] = Field(
        default_factory=lambda: list(REFERENCE_LOSS_TYPES),
        description="loss: TRL loss types to compare with the reference (vespo is not implemented by the reference).")
    betas: list[float] = Field(default_factory=lambda: [0.0, 0.04],
                               description="loss: KL coefficients to test each loss type with (0 = no KL term).")
    tolerance: float = Field(
        default=1e-6, gt=0,
        description="loss: allowed |Δloss| and max |Δgrad|, applied as atol=rtol (|Δ| <= tol * max(1, scale)). "
        "logprobs: use logprob_tolerance.")
    epsilon: float = Field(default=0.2, gt=0, description="loss: lower clipping epsilon (GRPOConfig.epsilon).")
    epsilon_high: float | None = Field(default=0.28, description="loss: upper clipping epsilon (None = epsilon).")
    scale_rewards: Literal[SCALE_REWARDS] = Field(  # type: ignore[valid-type]
        default="group", description="loss: advantage scaling used to build the batch's advantages.")
    train_mode: bool = Field(default=True, description="loss: compare in train mode (TRL divides by the "
                             "gradient-accumulation steps) rather than eval mode.")
    gradient_accumulation_steps: int = Field(default=1, ge=1, description="loss: accumulation steps both sides "
                                             "normalise by in train mode (also steps_per_generation).")
    use_bias_correction_kl: bool = Field(default=True, description="loss: multiply the per-token KL by the "
                                         "importance ratio (TRL 1.16 default True).")
    variants: bool = Field(default=True, description="loss: also run the seed-004 manual-step variants "
                           "(sequence REINFORCE, k1 KL, full-length normalisation) against TRL's grpo loss.")
    variant_beta: float = Field(default=0.1, ge=0, description="loss: beta of the seed-004 variant comparison "
                                "(the seed used 0.1).")
    num_prompts: int = Field(default=2, ge=1, description="loss/logprobs: prompts in the probe batch.")
    num_generations: int = Field(default=4, ge=2, description="loss: completions per prompt (group size).")
    max_completion_length: int = Field(default=12, ge=2, description="loss/logprobs/determinism: completion "
                                       "tokens sampled per row.")
    # --- logprobs ---
    contexts: list[LogprobContext] = Field(
        default_factory=lambda: ["sampling", "grad_enabled", "train_mode", "train_mode_dropout", "batch_of_one",
                                 "right_padding", "trl_fused", "bf16", "cuda_fp32", "cuda_bf16"],
        description="logprobs: contexts compared with the base (eval, no-grad, fp32, CPU, full left-padded batch); "
        "CUDA contexts are skipped without a GPU.")
    dropout: float = Field(default=0.1, ge=0, lt=1, description="logprobs: attention_dropout forced for the "
                           "train_mode_dropout context.")
    logprob_tolerance: float = Field(default=1e-5, gt=0, description="logprobs: allowed max |Δ logp| over the "
                                     "fp32 contexts that must agree (parity/logprobs/max_abs_diff_fp32).")
    first_k: int = Field(default=5, ge=0, description="logprobs: differing tokens listed per context.")
    # --- determinism ---
    steps: int = Field(default=5, ge=1, description="determinism: GRPO steps per run.")
    loss_type: LossType = Field(default="dapo", description="determinism: loss type of the training runs.")
    beta: float = Field(default=0.0, ge=0, description="determinism: KL coefficient of the training runs.")
    learning_rate: float = Field(default=1e-3, gt=0, description="determinism: learning rate (high on purpose, "
                                 "so that weights move in a few steps).")
    perturb_at_step: int | None = Field(default=None, ge=1, description="determinism: perturb the second run's "
                                        "weights after this step (self-test of the reporting).")
    deterministic: bool = Field(default=True, description="determinism: call enable_determinism(seed) before "
                                "each run (torch deterministic algorithms, cuDNN/cuBLAS flags).")
    threads: int = Field(default=1, ge=1, description="torch CPU threads used by the check.")

    @field_validator("loss_types", "contexts")
    @classmethod
    def _non_empty(cls, v):
        if not v:
            raise ValueError("must list at least one entry")
        return v
