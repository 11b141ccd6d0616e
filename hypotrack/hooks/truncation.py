"""h04 context truncation: how long prompts are, how many were cut, and whether the answer survived.

GRPOConfig (trl 1.16) no longer truncates prompts, so the data side truncates and records, per row,
these columns (RolloutBatch.columns, one value per row):

- `prompt_full_length` (int): prompt tokens before truncation.
- `prompt_truncated` (bool): the prompt was cut.
- `answer_survived` (bool | None): the answer-bearing span is still fully inside the kept prompt
  (None when the task does not say where the answer lives). Takes precedence when present.
- otherwise, to compute survival here: `answer_start`/`answer_end` (character offsets of the
  answer-bearing span in the ORIGINAL prompt, end exclusive) plus the kept character range of the
  original prompt, either `prompt_kept_chars` = (start, end) (end exclusive) or
  `prompt_kept_start`/`prompt_kept_end`. Survived iff kept_start <= answer_start and
  answer_end <= kept_end (the whole span kept).
- a row that was not truncated trivially kept its answer.

Metrics: prompt_len_mean/p95/max (real tokens, from prompt_mask), truncation_rate (rows with
prompt_truncated, or prompt_full_length > actual length; 0.0 when neither column exists, with
truncation_known = 0), tokens_lost_mean (full - kept, over all rows), answer_known_share (rows whose
survival is known), answer_survival (share of known rows that kept the answer; emitted only when
answer_known_share > 0: an unknown survival is not reported as 1.0 or 0.0), completion_clipped_ratio
(completions with no eos: generation only stops without eos at max_completion_length).
"""
from __future__ import annotations

from typing import Any

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch


def _get(columns: dict[str, list[Any]], key: str, i: int) -> Any:
    vals = columns.get(key)
    if vals is None or i >= len(vals):
        return None
    return vals[i]


def row_survival(columns: dict[str, list[Any]], i: int, truncated: bool | None) -> bool | None:
    """True/False when the answer span's survival is known for row i, else None."""
    explicit = _get(columns, "answer_survived", i)
    if explicit is not None:
        return bool(explicit)
    a0, a1 = _get(columns, "answer_start", i), _get(columns, "answer_end", i)
    if a0 is None or a1 is None:
        return None
    kept = _get(columns, "prompt_kept_chars", i)
    if kept is None and _get(columns, "prompt_kept_start", i) is not None:
        kept = (_get(columns, "prompt_kept_start", i), _get(columns, "prompt_kept_end", i))
    if kept is not None and kept[0] is not None and kept[1] is not None:
        return int(kept[0]) <= int(a0) and int(a1) <= int(kept[1])
    if truncated is False:
        return True
    return None


class TruncationHook(DiagnosticHook):
    name = "truncation"
    description = "h04: prompt length stats, truncation rate, answer-span survival, clipped completions"
    metrics = (
        "prompt_len_mean", "prompt_len_p95", "prompt_len_max", "truncation_known", "truncation_rate",
        "tokens_lost_mean", "answer_known_share", "answer_survival", "completion_clipped_ratio",
    )

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        import math

        import torch

        # prompt lengths and the clipped-completion count come back in one read-back; the rest is plain Python
        lens_t = batch.prompt_mask.detach().sum(dim=1).float()
        B = lens_t.numel()
        ids = batch.completion_ids.detach()
        clip = batch.eos_token_id is not None and ids.numel()
        parts = [lens_t.cpu()]
        if clip:
            parts.append((~(ids == int(batch.eos_token_id)).any(dim=1)).float().mean().reshape(1).cpu())
        flat = torch.cat(parts).tolist()
        lens = flat[:B]
        fin = lambda v: v if math.isfinite(v) else 0.0  # what f() does to one value
        if B:
            srt = sorted(lens)
            pos = 0.95 * (B - 1)  # torch.quantile's linear interpolation between the closest ranks
            lo = int(math.floor(pos))
            hi = min(lo + 1, B - 1)
            p95 = srt[lo] + (srt[hi] - srt[lo]) * (pos - lo)
            out = {"prompt_len_mean": fin(sum(lens) / B), "prompt_len_p95": fin(p95), "prompt_len_max": fin(srt[-1])}
        else:
            out = {"prompt_len_mean": 0.0, "prompt_len_p95": 0.0, "prompt_len_max": 0.0}
        cols = batch.columns or {}
        truncated: list[bool | None] = []
        lost: list[float] = []
        for i in range(B):
            t = _get(cols, "prompt_truncated", i)
            full = _get(cols, "prompt_full_length", i)
            if full is not None:
                lost.append(max(float(full) - float(lens[i]), 0.0))
                t = bool(t) or float(full) > float(lens[i])
            truncated.append(None if t is None else bool(t))
        known = [t for t in truncated if t is not None]
        out["truncation_known"] = 1.0 if known else 0.0
        out["truncation_rate"] = sum(known) / len(known) if known else 0.0
        out["tokens_lost_mean"] = sum(lost) / len(lost) if lost else 0.0
        surv = [row_survival(cols, i, truncated[i]) for i in range(B)]
        ks = [s for s in surv if s is not None]
        out["answer_known_share"] = len(ks) / B if B else 0.0
        if ks:
            out["answer_survival"] = sum(ks) / len(ks)
        if clip:
            out["completion_clipped_ratio"] = fin(flat[B])
        else:
            out["completion_clipped_ratio"] = 0.0
        return out
