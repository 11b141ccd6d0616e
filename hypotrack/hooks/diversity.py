"""h15 entropy / mode collapse: the policy stops exploring and writes the same completion every time.

(verl#5953, trl#3320; seed 004's first red flag.) Sharpening is what RL is for; collapse is losing
most of the entropy the run started with, so that a prompt's completions come out identical and the
group has nothing left to compare.

- `entropy`: the policy's mean per-token entropy on loss-bearing tokens (the same quantity TRL logs).
- `entropy_ratio`: entropy now over entropy at the first step of the run (1: unchanged).
- `identical_group_share`: groups whose completions are all the same text.
- `distinct_share`: distinct completions per group over the group size, averaged over groups.
- `sampling_temperature`: the temperature completions are sampled at (GRPOConfig's, or the one
  `generation_kwargs` overrides it with). Identical completions at temperature 1 with the entropy the run
  started with are a confident model, or one that cannot see what would tell its answers apart (a prompt
  cut before its evidence): not a collapse. A low temperature, or a falling entropy, is.
"""
from __future__ import annotations

from typing import Any

from hypotrack.hooks.base import DiagnosticHook, LossParts, RolloutBatch, StepContext


class DiversityHook(DiagnosticHook):
    name = "diversity"
    description = "h15: policy entropy against the run's start, identical and distinct completions per group"
    metrics = (
        "entropy", "entropy_ratio", "identical_group_share", "distinct_share", "sampling_temperature",
    )

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._first_entropy: float | None = None
        self._temperature: float | None = None

    def on_train_begin(self, ctx: StepContext) -> dict[str, float]:
        args = getattr(ctx.trainer, "args", None)
        overrides = getattr(args, "generation_kwargs", None) or {}
        temperature = overrides.get("temperature", getattr(args, "temperature", None))
        self._temperature = float(temperature) if temperature is not None else None
        return {}

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        G = int(batch.num_generations)
        texts = batch.completions_text
        n = (len(texts) // G) * G if G > 1 else 0
        if not n:
            return {}
        distinct = [len(set(texts[start:start + G])) for start in range(0, n, G)]
        out = {"identical_group_share": sum(d == 1 for d in distinct) / len(distinct),
               "distinct_share": sum(distinct) / (len(distinct) * G)}
        if self._temperature is not None:
            out["sampling_temperature"] = self._temperature
        return out

    def on_loss(self, parts: LossParts, step: int) -> dict[str, float]:
        from hypotrack.hooks._util import masked_mean

        if parts.entropies is None:
            return {}
        entropy = masked_mean(parts.entropies.detach().float(), parts.mask.detach().bool())
        if self._first_entropy is None and entropy > 0:
            self._first_entropy = entropy
        out = {"entropy": entropy}
        if self._first_entropy:
            out["entropy_ratio"] = entropy / self._first_entropy
        return out
