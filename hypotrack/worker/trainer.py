"""`HypotrackGRPOTrainer`: TRL's GRPOTrainer with the seams hypotrack's hooks need.

A TrainerCallback sees neither rollouts nor loss tensors, so this subclass wraps
these methods of trl 1.16 (tests/test_trl_contract.py checks they still exist):

- `_calculate_rewards`: keep the per-function rewards of the batch being scored;
- `_generate_and_score_completions`: hand the finished rollout to `on_rollout`;
- `_get_per_token_logps_and_entropies` + `_compute_loss`: hand the policy's
  logprobs and the loss to `on_loss`;
- `training_step`: stop the arm with a clear error on a NaN or infinite loss (guards.py).

With `repair_mask` (h02's treatment, `--mask-non-policy-tokens`) the rollout's loss mask
loses the completion tokens that echo the prompt, as the token_masking diagnostics
classify them, before the hooks and the loss see it.

Hook metrics go into TRL's own metric buffer, so they are averaged per logging
step and logged under the same step numbers as `reward`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from trl import GRPOTrainer

from hypotrack.hooks.base import DiagnosticHook, LossParts, RolloutBatch, StepContext
from hypotrack.worker.guards import check_loss
from hypotrack.worker.rewards import RewardErrorLog


class HypotrackGRPOTrainer(GRPOTrainer):
    def __init__(self, *args: Any, hooks: list[DiagnosticHook] | None = None,
                 reward_errors: RewardErrorLog | None = None, faults: Any = None,
                 sample_every: int = 10, task_reward_index: int = 0, repair_mask: bool = False,
                 reference_column: str | None = None, **kwargs: Any) -> None:
        self.hypotrack_hooks = list(hooks or [])
        self.reward_errors = reward_errors or RewardErrorLog()
        self.faults = faults  # planted faults (toy lab self-test): reward seam here, the rest via attach()
        self.sample_every = max(1, sample_every)
        self.task_reward_index = task_reward_index
        self.repair_mask = repair_mask
        self.reference_column = reference_column
        self.samples: list[dict[str, Any]] = []
        self._scored: dict[str, Any] = {}
        self._capture_logps = False
        self._captured_logps: torch.Tensor | None = None
        self._captured_entropies: torch.Tensor | None = None
        super().__init__(*args, **kwargs)

    # ----------------------------------------------------------------- rollouts

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        if self.faults is not None:
            rewards_per_func = self.faults.rewards(self, rewards_per_func, inputs, completions)
        self._scored = {"inputs": inputs, "prompts": prompts, "completions": completions,
                        "rewards_per_func": self._local_rows(rewards_per_func.detach(), len(prompts))}
        return rewards_per_func

    def _local_rows(self, gathered: torch.Tensor, count: int) -> torch.Tensor:
        """This process's rows of a tensor TRL gathered from every process (TRL's own process slice).

        Under `accelerate launch` each rank's hooks then see one consistent share of the rollout
        (its completions, their rewards and advantages); only rank 0's diagnostics are streamed.
        """
        start = self.accelerator.process_index * count
        return gathered[start:start + count]

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        errors = self.reward_errors.take_step_counts()
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["reward_errors"].append(float(sum(errors.values())))
        for name in self.reward_func_names:
            self._metrics[mode][f"reward_errors/{name}"].append(float(errors.get(name, 0)))
        if self.repair_mask:
            self._mask_echoed_prompt(output)
        scored, self._scored = self._scored, {}
        if not scored:
            return output
        step = self.state.global_step
        if step % self.sample_every == 0 and len(self.samples) < 400:
            self._keep_samples(step, scored, output)
        if self.hypotrack_hooks:
            batch = self._rollout_batch(scored, output, errors)
            for hook in self.hypotrack_hooks:
                self._record(hook, hook.on_rollout(batch, step), mode)
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

    def _rollout_batch(self, scored: dict[str, Any], output: dict[str, Any], errors: dict[str, int]) -> RolloutBatch:
        inputs = scored["inputs"]
        skip = {"prompt", "completion", "completion_ids"}
        columns = {key: [row.get(key) for row in inputs] for key in inputs[0] if key not in skip} if inputs else {}
        extra = {key: value for key, value in output.items() if key.startswith("hypotrack_")}
        return RolloutBatch(
            prompt_ids=output["prompt_ids"], prompt_mask=output["prompt_mask"],
            completion_ids=output["completion_ids"], completion_mask=output["completion_mask"],
            advantages=output["advantages"], rewards_per_func=scored["rewards_per_func"],
            reward_weights=self.reward_weights.detach().cpu(), reward_func_names=list(self.reward_func_names),
            num_generations=self.num_generations, scale_rewards=str(self.scale_rewards),
            aggregation=str(self.multi_objective_aggregation), task_index=self.task_reward_index,
            pad_token_id=self.processing_class.pad_token_id, eos_token_id=self.processing_class.eos_token_id,
            prompts_text=[p if isinstance(p, str) else str(p) for p in scored["prompts"]],
            completions_text=[c if isinstance(c, str) else str(c) for c in scored["completions"]],
            old_per_token_logps=output.get("old_per_token_logps"),
            ref_per_token_logps=output.get("ref_per_token_logps"),
            sampling_per_token_logps=output.get("sampling_per_token_logps"),
            tool_mask=output.get("tool_mask"), columns=columns, reward_errors=errors,
            tokenizer=self.processing_class,
            extra_masks={key[len("hypotrack_"):]: value for key, value in extra.items()},
            reward_funcs=list(self.reward_funcs), prompts=list(scored["prompts"]),
            reference_column=self.reference_column,
        )

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
        if self._capture_logps:
            self._captured_logps = result[0].detach()
            self._captured_entropies = result[1].detach() if result[1] is not None else None
            self._capture_logps = False
        return result

    def _compute_loss(self, model, inputs):
        self._capture_logps = bool(self.hypotrack_hooks)
        loss = super()._compute_loss(model, inputs)
        self._capture_logps = False
        if self.hypotrack_hooks and self._captured_logps is not None:
            mask = inputs["completion_mask"]
            if "tool_mask" in inputs:
                mask = mask * inputs["tool_mask"]
            policy = self._captured_logps
            old = inputs.get("old_per_token_logps")
            parts = LossParts(
                per_token_logps=policy, old_per_token_logps=policy if old is None else old.detach(),
                ref_per_token_logps=inputs.get("ref_per_token_logps"), mask=mask, advantages=inputs["advantages"],
                beta=float(self.beta), loss_type=str(self.loss_type), loss=float(loss.detach()),
                prompt_ids=inputs["prompt_ids"], prompt_mask=inputs["prompt_mask"],
                completion_ids=inputs["completion_ids"], entropies=self._captured_entropies,
            )
            self._captured_logps = self._captured_entropies = None
            mode = "train" if self.model.training else "eval"
            for hook in self.hypotrack_hooks:
                self._record(hook, hook.on_loss(parts, self.state.global_step), mode)
        return loss

    def training_step(self, model, inputs, num_items_in_batch):
        loss = super().training_step(model, inputs, num_items_in_batch)
        check_loss(loss, self.state.global_step + 1)
        return loss

    # ----------------------------------------------------------------- helpers

    def step_context(self) -> StepContext:
        return StepContext(step=self.state.global_step, model=self.model, ref_model=getattr(self, "ref_model", None),
                           trainer=self)

    def _record(self, hook: DiagnosticHook, metrics: dict[str, float] | None, mode: str = "train") -> None:
        for key, value in (metrics or {}).items():
            self._metrics[mode][f"diag/{hook.name}/{key}"].append(float(value))
