"""h06's cause under vLLM, in part: the generator's output head is a copy that weight syncs never reach."""

from __future__ import annotations

from typing import Any

from hypotrack.faults.base import PlantedFault


class GeneratorOutputHeadStale(PlantedFault):
    name = "generator_output_head_stale"
    imitates = "h06"
    description = ("vLLM's output head is a copy of the tied embedding taken when the model loaded: every sync writes "
                   "the embedding, the head keeps its starting values, and generation samples from a half-updated "
                   "model (vLLM's CPU build packs each layer's weight at load and a server's reload_weights leaves the "
                   "tied head's packed copy stale; only full fine-tuning shows it, LoRA never moves the head)")
    seams = ("generator_sync",)
    needs_vllm = ("it lives in vLLM's copy of the weights; run it on an experiment that generates with vLLM and "
                  "trains the embedding (full fine-tuning): hypotrack selftest --experiment toy_arith_vllm_server "
                  "--faults clean,generator_output_head_stale")
    needs_full_fine_tuning = ("LoRA never trains the output head, so a stale copy of it changes nothing; run it on "
                              "toy_arith_vllm_server")

    def attach(self, trainer: Any) -> None:
        from hypotrack.hooks._generator import served_generator

        generator = served_generator(trainer)
        if generator is not None:
            generator.copy_output_head()
