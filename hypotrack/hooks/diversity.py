"""h15 entropy / mode collapse: the policy stops exploring and writes the same completion every time.

(verl#5953, trl#3320; seed 004's first red flag.) Sharpening is what RL is for; collapse is losing
most of the entropy the run started with, so that a prompt's completions come out identical and the
group has nothing left to compare.

- `entropy`: the policy's mean per-token entropy on loss-bearing tokens (the same quantity TRL logs).
- `entropy_ratio`: entropy now over entropy at the first step of the run (1: unchanged).
- `identical_group_share`: groups whose completions are all the same text.
- `distinct_share`: distinct completions per group over the group size, averaged over groups.
"""
from __future__ import annotations

from typing import Any

from hypotrack.hooks.base import DiagnosticHook, LossParts, RolloutBatch


class DiversityHook(DiagnosticHook):
    name = "diversity"
    description = "h15: policy entropy against the run's start, identical and distinct completions per group"
    metrics = (
        "entropy", "entropy_ratio", "identical_group_share", "distinct_share",
    )

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._first_entropy: float | None = None

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        G = int(batch.num_generations)
        texts = batch.completions_text
        n = (len(texts) // G) * G if G > 1 else 0
        if not n:
            return {}
        distinct = [len(set(texts[start:start + G])) for start in range(0, n, G)]
        return {"identical_group_share": sum(d == 1 for d in distinct) / len(distinct),
                "distinct_share": sum(distinct) / (len(distinct) * G)}

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
