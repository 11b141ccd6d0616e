"""h14's cause under vLLM: sampling cut to its top tokens, whose renormalised logprobs the loss compares with
full-vocabulary ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault


class TruncatedSamplingSupport(PlantedFault):
    name = "truncated_sampling_support"
    imitates = "h14"
    description = ("vLLM samples from the top tokens only (top_p 0.8) and returns logprobs renormalised over them, "
                   "while the trainer scores the same tokens over the full vocabulary: every importance ratio "
                   "carries the kept probability mass, not a policy change (trl#6789, trl PR #7269)")
    seams = ("config",)
    needs_vllm = ("it lives in the logprobs vLLM returns after its sampling transforms; run it on an experiment that "
                  "generates with vLLM: hypotrack selftest --experiment toy_arith_vllm --faults "
                  "clean,truncated_sampling_support")

    @dataclass(frozen=True)
    class Settings:
        top_p: float = 0.8
        """The nucleus vLLM samples from (TRL's GRPOConfig.top_p; 1.0 keeps every token)."""

    def configure(self, arm: dict[str, Any]) -> None:
        arm["grpo"]["top_p"] = self.config.top_p
