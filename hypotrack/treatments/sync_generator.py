"""h06's fix under vLLM: the trainer's weights pushed to the generator before every generation."""

from __future__ import annotations

from typing import Any

from hypotrack.session.trl_seams import Seam, mark_generator_synced, wrap
from hypotrack.treatments.base import Treatment


class SyncGenerator(Treatment):
    name = "sync_generator"
    fixes = "h06"
    help = ("Treatment arm: push the trainer's weights (LoRA adapters merged) to vLLM before every generation, "
            "whatever TRL's own sync did, and keep a tied output head tied to the embedding the push writes; nothing "
            "to do where the trained model generates itself.")
    seams = ("generate",)

    def attach(self, trainer: Any) -> None:
        """Through TRL's own `VLLMGeneration.sync_weights` (the class's, so a sync that was switched off or
        replaced on the instance still runs); a tied output head the generator holds as a copy of its own is tied
        again, so the embedding the push writes is the head generation reads. Nothing to do where the trained model
        generates itself."""
        generation = getattr(trainer, "vllm_generation", None)
        if generation is None:
            return
        from trl.generation.vllm_generation import VLLMGeneration

        from hypotrack.hooks._generator import served_generator

        served = served_generator(trainer)

        def make(original: Any) -> Any:
            def generate(*args: Any, **kwargs: Any) -> Any:
                if served is not None:
                    served.tie_output_head()
                VLLMGeneration.sync_weights(generation)
                mark_generator_synced(trainer)  # TRL's own sync has nothing left to do
                return original(*args, **kwargs)

            return generate

        wrap(trainer, Seam.GENERATE, make)
