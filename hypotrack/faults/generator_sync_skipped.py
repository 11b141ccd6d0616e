"""h06's cause under vLLM: the weights TRL syncs never reach the generator."""

from __future__ import annotations

from typing import Any

from hypotrack.faults.base import PlantedFault


class GeneratorSyncSkipped(PlantedFault):
    name = "generator_sync_skipped"
    imitates = "h06"
    description = ("the weights TRL syncs never reach vLLM: generation keeps sampling from the checkpoint vLLM loaded "
                   "while the trainer moves on (with sleep mode, generate() reloaded the weights from disk over each "
                   "sync, trl#5312, trl PR #5355; a custom rollout worker skipped the LoRA sync, trl PR #6344)")
    seams = ("generator_sync",)
    needs_vllm = ("it lives in vLLM's copy of the weights; run it on an experiment that generates with vLLM: "
                  "hypotrack selftest --experiment toy_arith_vllm --faults clean,generator_sync_skipped")

    def attach(self, trainer: Any) -> None:
        generation = getattr(trainer, "vllm_generation", None)
        if generation is not None:
            generation.sync_weights = lambda: None  # vLLM serves the checkpoint it loaded
