"""h27's cause: TRL's importance-sampling correction under vLLM weighing each completion by the sum of its tokens'
log-ratios, TRL's default (sequence_mask)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault


class SequenceImportanceCorrection(PlantedFault):
    name = "sequence_importance_correction"
    imitates = "h27"
    description = ("TRL corrects for vLLM sampling slightly differently from the trainer with one weight per "
                   "completion, exp(the sum of its per-token log-ratios): a gap of 0.01 nats a token, which two "
                   "bfloat16 computations of the same model leave, moves the weight of a 100-token completion out of "
                   "[0.8, 1.25] or masks it whole (trl#5814, trl PR #5815; TRL's default vllm_importance_sampling_mode)")
    seams = ("config",)
    needs_vllm = ("it lives in the importance weights TRL computes from vLLM's logprobs, on completions long enough "
                  "for a small gap to sum: hypotrack selftest --experiment toy_letters_vllm --faults "
                  "clean,sequence_importance_correction")

    @dataclass(frozen=True)
    class Settings:
        mode: str = "sequence_mask"
        """TRL's vllm_importance_sampling_mode: sequence_mask (TRL's default) or sequence_truncate."""

    def configure(self, arm: dict[str, Any]) -> None:
        arm["grpo"]["vllm_importance_sampling_mode"] = self.config.mode
