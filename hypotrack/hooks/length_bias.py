"""h23 length runs away under length normalisation: do the lowest-scored completions grow?

A loss that divides each completion's token sum by its own length (TRL's loss_type grpo or sapo) gives a
long completion's tokens a smaller share of its advantage: a long wrong answer is penalised less per
token than a short one, so wrong answers drift longer (trl PR #3138, the Dr. GRPO analysis; dr_grpo and
dapo normalise by a constant or the batch's token count instead). From each rollout and loss:

- `floor_length`: the mean length (tokens in the loss) of the completions at the batch's lowest task
  reward; `above_length`: of the others. Their trends over the run are the signature.
- `floor_length_gap`: floor_length minus above_length (positive when wrong answers are the longer ones).
- `per_sequence_normalised`: 1 when the loss divides by each completion's length, else 0.
"""
from __future__ import annotations

from hypotrack.hooks.base import DiagnosticHook, LossParts, RolloutBatch

PER_SEQUENCE_LOSSES = ("grpo", "sapo")  # TRL 1.16's loss: (per_token_loss * mask).sum(-1) / mask.sum(-1)


class LengthBiasHook(DiagnosticHook):
    name = "length_bias"
    description = "h23: lengths of the lowest-scored completions against the others, and whether the loss divides by length"
    metrics = ("floor_length", "above_length", "floor_length_gap", "per_sequence_normalised")

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        lengths = batch.completion_mask.detach().cpu().sum(dim=1).tolist()
        task = batch.rewards_per_func.detach().cpu().float()[:, batch.task_index].tolist()
        scored = [(r, n) for r, n in zip(task, lengths) if r == r]
        if not scored:
            return {}
        floor = min(r for r, _ in scored)
        low = [n for r, n in scored if r <= floor]
        high = [n for r, n in scored if r > floor]
        out = {"floor_length": sum(low) / len(low)}
        if high:
            out["above_length"] = sum(high) / len(high)
            out["floor_length_gap"] = out["floor_length"] - out["above_length"]
        return out

    def on_loss(self, parts: LossParts, step: int) -> dict[str, float]:
        return {"per_sequence_normalised": float(parts.loss_type in PER_SEQUENCE_LOSSES)}
