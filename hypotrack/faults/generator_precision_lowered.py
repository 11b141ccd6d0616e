"""h14's cause under vLLM: the generator serves in a lower precision than the trainer scores in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault


class GeneratorPrecisionLowered(PlantedFault):
    name = "generator_precision_lowered"
    imitates = "h14"
    description = ("vLLM serves the float32 model in bfloat16 while the trainer scores in float32, as TRL's colocated "
                   "engine does when nothing names a dtype: every importance ratio carries the precision gap "
                   "(trl#4772, transformers#31267; trl PR #6774 matches the dtypes)")
    seams = ("config", "generator_dtype")
    needs_vllm = ("it lives in the dtype vLLM serves in; run it on an experiment that generates with vLLM: "
                  "hypotrack selftest --experiment toy_arith_vllm --faults clean,generator_precision_lowered")

    @dataclass(frozen=True)
    class Settings:
        dtype: str = "bfloat16"
        """The dtype vLLM serves the model in."""

    def configure(self, arm: dict[str, Any]) -> None:
        arm["generator_dtype"] = self.config.dtype
