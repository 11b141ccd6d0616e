"""h02's cause: the rollout hands back the prompt's tokens in front of the completion's."""

from __future__ import annotations

from typing import Any

from hypotrack.faults.base import PlantedFault
from hypotrack.session.trl_seams import Seam, wrap


class PromptInLoss(PlantedFault):
    name = "prompt_in_loss"
    imitates = "h02"
    description = ("the rollout hands back the prompt tokens in front of the completion (the return_full_text "
                   "mistake), so the loss trains on the prompt")
    seams = ("generate",)

    def attach(self, trainer: Any) -> None:
        """Each completion's token ids start with the prompt's (bos excluded). The reward still scores the real
        completion text, as when only the token ids handed to the trainer carry the prompt: nothing looks wrong in
        the rewards, but every step trains the policy to reproduce its input."""
        bos = trainer.processing_class.bos_token_id

        def make(original: Any) -> Any:
            def generate(*args: Any, **kwargs: Any) -> Any:
                out = list(original(*args, **kwargs))
                prompt_ids, completion_ids, tool_mask, _completions, logprobs = out[:5]
                echoed = [[t for t in list(p) if t != bos] for p in prompt_ids]
                out[1] = [e + list(c) for e, c in zip(echoed, completion_ids)]
                if tool_mask is not None:
                    out[2] = [[1] * len(e) + list(m) for e, m in zip(echoed, tool_mask)]
                if logprobs is not None:
                    out[4] = [[None] * len(e) + list(lp) for e, lp in zip(echoed, logprobs)]
                return tuple(out)

            return generate

        wrap(trainer, Seam.GENERATE, make)
