"""The hooks' events, built from what TRL's seams see: a `RolloutBatch` after each generation, a `LossParts`
inside each loss computation, and a `StepContext` at the events a callback sees.

The session (session/arm_session.py) wraps the seams and hands their arguments and results here; everything
goes to the hooks through one `HookSet`, which records into TRL's own metric buffer.
"""

from __future__ import annotations

from typing import Any

from hypotrack.hooks.base import LossParts, RolloutBatch, StepContext
from hypotrack.hooks.hookset import HookSet


class TrainerTap:
    """Turns what the wrapped seams see into the hooks' events, for one trainer."""

    def __init__(self, hookset: HookSet, task_index: int = 0, reference_column: str | None = None) -> None:
        self.hookset = hookset
        self.task_index = task_index
        self.reference_column = reference_column
        self.scored: dict[str, Any] = {}
        self._capture = False
        self._logps: Any = None
        self._entropies: Any = None

    # ----------------------------------------------------------------- rollouts

    def rewards_scored(self, trainer: Any, inputs: list[dict[str, Any]], prompts: list[Any], completions: list[Any],
                       rewards_per_func: Any) -> None:
        self.scored = {"inputs": inputs, "prompts": prompts, "completions": completions,
                       "rewards_per_func": local_rows(trainer, rewards_per_func.detach(), len(prompts))}

    def take_scored(self) -> dict[str, Any]:
        scored, self.scored = self.scored, {}
        return scored

    def rollout(self, trainer: Any, scored: dict[str, Any], output: dict[str, Any],
                reward_errors: dict[str, int] | None = None) -> None:
        if scored and self.hookset.wants("on_rollout"):
            self.hookset.rollout(self.rollout_batch(trainer, scored, output, reward_errors or {}),
                                 trainer.state.global_step)

    def rollout_batch(self, trainer: Any, scored: dict[str, Any], output: dict[str, Any],
                      errors: dict[str, int]) -> RolloutBatch:
        inputs = scored["inputs"]
        skip = {"prompt", "completion", "completion_ids"}
        columns = {key: [row.get(key) for row in inputs] for key in inputs[0] if key not in skip} if inputs else {}
        extra = {key: value for key, value in output.items() if key.startswith("hypotrack_")}
        tokenizer = trainer.processing_class
        tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor wraps its tokenizer
        return RolloutBatch(
            prompt_ids=output["prompt_ids"], prompt_mask=output["prompt_mask"],
            completion_ids=output["completion_ids"], completion_mask=output["completion_mask"],
            advantages=output["advantages"], rewards_per_func=scored["rewards_per_func"],
            reward_weights=trainer.reward_weights.detach().cpu(), reward_func_names=list(trainer.reward_func_names),
            num_generations=trainer.num_generations, scale_rewards=str(trainer.scale_rewards),
            aggregation=str(trainer.multi_objective_aggregation), task_index=self.task_index,
            pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
            prompts_text=[p if isinstance(p, str) else str(p) for p in scored["prompts"]],
            completions_text=[c if isinstance(c, str) else str(c) for c in scored["completions"]],
            old_per_token_logps=output.get("old_per_token_logps"),
            ref_per_token_logps=output.get("ref_per_token_logps"),
            sampling_per_token_logps=output.get("sampling_per_token_logps"),
            importance_sampling_ratio=output.get("importance_sampling_ratio"),
            tool_mask=output.get("tool_mask"), columns=columns, reward_errors=errors,
            tokenizer=tokenizer,
            extra_masks={key[len("hypotrack_"):]: value for key, value in extra.items()},
            reward_funcs=list(trainer.reward_funcs), prompts=list(scored["prompts"]),
            reference_column=self.reference_column,
        )

    # ----------------------------------------------------------------- loss

    def begin_loss(self) -> None:
        self._capture = self.hookset.wants("on_loss")

    def logps_computed(self, result: tuple[Any, ...]) -> None:
        """The first logprobs computed inside the loss are the policy's (TRL computes them first)."""
        if self._capture:
            self._logps = result[0].detach()
            self._entropies = result[1].detach() if result[1] is not None else None
            self._capture = False

    def end_loss(self, trainer: Any, inputs: dict[str, Any], loss: Any) -> None:
        self._capture = False
        policy, self._logps = self._logps, None
        entropies, self._entropies = self._entropies, None
        if policy is None:
            return
        mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        old = inputs.get("old_per_token_logps")
        parts = LossParts(
            per_token_logps=policy, old_per_token_logps=policy if old is None else old.detach(),
            ref_per_token_logps=inputs.get("ref_per_token_logps"), mask=mask, advantages=inputs["advantages"],
            beta=float(trainer.beta), loss_type=str(trainer.loss_type), loss=float(loss.detach()),
            prompt_ids=inputs["prompt_ids"], prompt_mask=inputs["prompt_mask"],
            completion_ids=inputs["completion_ids"], entropies=entropies, old_recomputed=old is not None,
        )
        self.hookset.loss(parts, trainer.state.global_step)

    # ----------------------------------------------------------------- the events a callback sees

    def train_begin(self, trainer: Any) -> None:
        self.hookset.train_begin(step_context(trainer))

    def before_optimizer_step(self, trainer: Any) -> None:
        if self.hookset.wants("on_before_optimizer_step"):
            self.hookset.before_optimizer_step(step_context(trainer))

    def step_end(self, trainer: Any) -> None:
        if self.hookset.wants("on_step_end"):
            self.hookset.step_end(step_context(trainer))

    def train_end(self, trainer: Any) -> None:
        self.hookset.train_end(step_context(trainer))
        self.hookset.close()


def local_rows(trainer: Any, gathered: Any, count: int) -> Any:
    """This process's rows of a tensor TRL gathered from every process (TRL's own process slice).

    Under `accelerate launch` each rank's hooks then see one consistent share of the rollout (its
    completions, their rewards and advantages).
    """
    start = trainer.accelerator.process_index * count
    return gathered[start:start + count]


def step_context(trainer: Any) -> StepContext:
    return StepContext(step=trainer.state.global_step, model=trainer.model, ref_model=getattr(trainer, "ref_model", None),
                       trainer=trainer)
