"""h02's fix: the completion tokens the policy did not write are taken out of the loss."""

from __future__ import annotations

from typing import Any

from hypotrack.session.trl_seams import Seam, wrap
from hypotrack.treatments.base import Treatment


class MaskNonPolicyTokens(Treatment):
    name = "mask_non_policy_tokens"
    fixes = "h02"
    help = ("Treatment arm: take out of the loss the completion tokens the policy did not write (an echoed prompt, "
            "environment output), as the token_masking diagnostics classify them.")
    seams = ("rollout",)

    def attach(self, trainer: Any) -> None:
        """After each rollout, before the hooks and the loss see it: echoed prompt tokens leave the loss mask (and
        TRL's token count for dapo/cispo)."""
        def make(original: Any) -> Any:
            def rollout(inputs: Any) -> Any:
                output = original(inputs)
                mask_echoed_prompt(trainer, output)
                return output

            return rollout

        wrap(trainer, Seam.ROLLOUT, make)


def mask_echoed_prompt(trainer: Any, output: dict[str, Any]) -> None:
    import torch

    from hypotrack.hooks.token_masking import echoed_prompt_mask, special_ids

    mask = output["completion_mask"]
    echoed = echoed_prompt_mask(output["prompt_ids"].cpu(), output["prompt_mask"].cpu(),
                                output["completion_ids"].cpu(), special_ids(trainer.processing_class)).to(mask.device)
    removed = (mask.bool() & echoed).sum()
    output["completion_mask"] = mask * (~echoed).to(mask.dtype)
    if isinstance(output.get("num_items_in_batch"), torch.Tensor):
        output["num_items_in_batch"] = output["num_items_in_batch"] - removed.to(output["num_items_in_batch"])
