"""`HypotrackGRPOTrainer`: TRL's GRPOTrainer with the seams hypotrack's hooks need.

It overrides the methods hooks/_trainer_tap.py names (the same ones `hypotrack.watch` wraps on a
user's trainer instance) and hands what they see to one `TrainerTap`, which dispatches to the hooks
through their `HookSet`. On top of that, for hypotrack's own arms:

- `_calculate_rewards`: planted faults in the rewards (toy lab self-test);
- `_generate_and_score_completions`: reward-function error counts, kept samples, and with
  `repair_mask` (h02's treatment, `--mask-non-policy-tokens`) a loss mask without the completion
  tokens that echo the prompt, as the token_masking diagnostics classify them, before the hooks and
  the loss see it;
- `training_step`: stop the arm with a clear error on a NaN or infinite loss (guards.py).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from trl import GRPOTrainer

from hypotrack.hooks._trainer_tap import TapCallback, TrainerTap, record_into, step_context
from hypotrack.hooks.base import DiagnosticHook, StepContext
from hypotrack.hooks.hookset import HookSet
from hypotrack.worker.guards import check_loss
from hypotrack.worker.rewards import RewardErrorLog


class HypotrackGRPOTrainer(GRPOTrainer):
    def __init__(self, *args: Any, hooks: list[DiagnosticHook] | None = None,
                 reward_errors: RewardErrorLog | None = None, faults: Any = None,
                 sample_every: int = 10, task_reward_index: int = 0, repair_mask: bool = False,
                 reference_column: str | None = None, **kwargs: Any) -> None:
        self.hookset = HookSet(hooks or [], record_into(self))
        self.tap = TrainerTap(self.hookset, task_reward_index, reference_column)
        self.reward_errors = reward_errors or RewardErrorLog()
        self.faults = faults  # planted faults (toy lab self-test): reward seam here, the rest via attach()
        self.sample_every = max(1, sample_every)
        self.task_reward_index = task_reward_index
        self.repair_mask = repair_mask
        self.samples: list[dict[str, Any]] = []
        super().__init__(*args, **kwargs)
        self.add_callback(TapCallback(self.hookset, self))

    @property
    def hypotrack_hooks(self) -> list[DiagnosticHook]:
        return self.hookset.hooks

    # ----------------------------------------------------------------- rollouts

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        if self.faults is not None:
            rewards_per_func = self.faults.rewards(self, rewards_per_func, inputs, completions)
        self.tap.rewards_scored(self, inputs, prompts, completions, rewards_per_func)
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        errors = self.reward_errors.take_step_counts()
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["reward_errors"].append(float(sum(errors.values())))
        for name in self.reward_func_names:
            self._metrics[mode][f"reward_errors/{name}"].append(float(errors.get(name, 0)))
        if self.repair_mask:
            self._mask_echoed_prompt(output)
        scored = self.tap.take_scored()
        if not scored:
            return output
        step = self.state.global_step
        if step % self.sample_every == 0 and len(self.samples) < 400:
            self._keep_samples(step, scored, output)
        self.tap.rollout(self, scored, output, errors)
        return output

    def _mask_echoed_prompt(self, output: dict[str, Any]) -> None:
        """Take echoed prompt tokens out of the loss mask (and out of TRL's token count for dapo/cispo)."""
        from hypotrack.hooks.token_masking import echoed_prompt_mask, special_ids

        mask = output["completion_mask"]
        echoed = echoed_prompt_mask(output["prompt_ids"].cpu(), output["prompt_mask"].cpu(),
                                    output["completion_ids"].cpu(), special_ids(self.processing_class)).to(mask.device)
        removed = (mask.bool() & echoed).sum()
        output["completion_mask"] = mask * (~echoed).to(mask.dtype)
        if isinstance(output.get("num_items_in_batch"), torch.Tensor):
            output["num_items_in_batch"] = output["num_items_in_batch"] - removed.to(output["num_items_in_batch"])

    def _keep_samples(self, step: int, scored: dict[str, Any], output: dict[str, Any]) -> None:
        rewards = scored["rewards_per_func"].cpu()
        advantages = output["advantages"].detach().cpu().tolist()
        for i in range(min(len(scored["prompts"]), self.num_generations * 2)):
            row = {"step": step, "prompt": str(scored["prompts"][i])[-300:], "completion": str(scored["completions"][i]),
                   "advantage": float(advantages[i]) if i < len(advantages) else float("nan")}
            for j, name in enumerate(self.reward_func_names):
                value = float(rewards[i, j])
                row[f"reward/{name}"] = None if math.isnan(value) else value
            self.samples.append(row)

    # ----------------------------------------------------------------- loss

    def _get_per_token_logps_and_entropies(self, *args: Any, **kwargs: Any):
        result = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        self.tap.logps_computed(result)
        return result

    def _compute_loss(self, model, inputs):
        self.tap.begin_loss()
        loss = super()._compute_loss(model, inputs)
        self.tap.end_loss(self, inputs, loss)
        return loss

    def training_step(self, model, inputs, num_items_in_batch):
        loss = super().training_step(model, inputs, num_items_in_batch)
        check_loss(loss, self.state.global_step + 1)
        return loss

    # ----------------------------------------------------------------- helpers

    def step_context(self) -> StepContext:
        return step_context(self)
