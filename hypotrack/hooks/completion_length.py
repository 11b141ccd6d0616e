"""h12 completions clipped at max_completion_length: cut before they finish, scored as failures.

A completion that reaches max_completion_length without an end-of-sequence token was cut off; a
verifier that needs the final answer scores it 0 (trl#5697: 97-99% clipped, trl#6263). TRL logs the
clipped ratio; this adds what it costs:

- `clipped_share`: completions without an eos token (generation stopped at the budget).
- `terminated_task_reward`, `clipped_task_reward`: the task reward (by role) of finished and clipped
  completions, each reported when the batch has some.
- `clipped_reward_gap`: terminated minus clipped task reward, when the batch has both.
- `length_mean`: completion tokens, eos included.
"""
from __future__ import annotations

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch


class CompletionLengthHook(DiagnosticHook):
    name = "completion_length"
    description = "h12: completions cut at max_completion_length and the task reward they lose"
    metrics = (
        "clipped_share", "length_mean", "terminated_task_reward", "clipped_task_reward", "clipped_reward_gap",
    )

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        ids = batch.completion_ids.detach().cpu()
        if batch.eos_token_id is None or not ids.numel():
            return {}
        finished = (ids == int(batch.eos_token_id)).any(dim=1).tolist()
        lengths = batch.completion_mask.detach().cpu().sum(dim=1).tolist()
        task = batch.rewards_per_func.detach().cpu().float()[:, batch.task_index].tolist()
        done = [r for r, f in zip(task, finished) if f and r == r]
        cut = [r for r, f in zip(task, finished) if not f and r == r]
        out = {"clipped_share": 1.0 - sum(finished) / len(finished), "length_mean": sum(lengths) / len(lengths)}
        if done:
            out["terminated_task_reward"] = sum(done) / len(done)
        if cut:
            out["clipped_task_reward"] = sum(cut) / len(cut)
        if done and cut:
            out["clipped_reward_gap"] = out["terminated_task_reward"] - out["clipped_task_reward"]
        return out
