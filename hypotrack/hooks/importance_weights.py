"""h27 the importance-sampling correction under vLLM throws whole completions away: a small per-token gap
between vLLM's logprobs and the trainer's, summed over a long completion, moves its weight far from 1.

With vLLM generating, TRL weights each completion's loss by an importance weight that corrects for the
engine sampling slightly differently from the trainer. In its sequence modes (`sequence_mask`, TRL's
default, and `sequence_truncate`) the weight is exp(the SUM over the completion's tokens of the trainer's
logprob minus vLLM's), where GSPO and TRL's own `importance_sampling_level="sequence"` take the MEAN
(trl#5814, trl PR #5815). A gap of 0.01 nats per token, harmless per token, is a factor of e^3 over 300
tokens: `sequence_mask` then zeroes the completion (its weight passed the cap) and a negative drift shrinks
it, so the longer the completions the less of each batch trains (trl#4772: 0.012 nats x ~100 tokens gives
ratios of about 3.3, masked at the default cap of 3). TRL's own `sampling/importance_sampling_ratio/mean`
shows the loss of weight but not its cause.

On every rollout where TRL computed the correction (its `importance_sampling_ratio`, present only with
vLLM and `vllm_importance_sampling_correction` on), from the trainer's and vLLM's logprobs of the sampled
tokens:

- `sequence_level`: 1 when TRL weighs whole completions (one weight per completion), 0 when it weighs
  tokens (`token_truncate`, `token_mask`).
- `weight_mean`: the weight TRL applies, averaged over completions (a token mode's weights averaged over
  the completion's tokens first); `dropped_share`: completions whose weight is 0 (masked whole).
- `weight_off_share`: completions whose applied weight is outside [0.8, 1.25]: their gradient is scaled by
  more than a quarter, or dropped.
- `per_token_weight_off_share`: completions whose mean log-ratio per token is beyond 0.05 nats (the weight
  exp(mean log-ratio) outside [0.951, 1.051]): near 0 while the gap per token is small, whatever the length.
  A gap per token beyond that is the engine's or a sampling transform's (h06, h14), which the sum only compounds.
- `sum_only_off_share`: completions whose applied weight is outside [0.8, 1.25] while their mean log-ratio per
  token is within 0.05 nats: the ones the sum alone moved (h27's own mechanism). On completions of 4 tokens or
  fewer it is 0 by arithmetic (4 x 0.05 nats stays inside the band).
- `token_gap_mean`: |trainer - vLLM| logprob per completion token (TRL's sampling_logp_difference);
  `length_mean`: completion tokens.
"""
from __future__ import annotations

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch

# A weight within [1/1.25, 1.25] changes a completion's gradient by less than a quarter.
WEIGHT_BAND = (0.8, 1.25)
# A gap of more than 0.05 nats per token on average is a mismatch of its own (h06, h14), not noise the sum compounds.
TOKEN_GAP = 0.05


class ImportanceWeightsHook(DiagnosticHook):
    name = "importance_weights"
    description = ("h27: the importance weights TRL gives vLLM's completions, and whether summing the per-token "
                   "log-ratios (its sequence modes) rather than the gap itself moves them off 1")
    metrics = ("sequence_level", "weight_mean", "dropped_share", "weight_off_share", "per_token_weight_off_share",
               "sum_only_off_share", "token_gap_mean", "length_mean")

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        import torch

        from hypotrack.hooks._util import loss_bearing_mask, masked_mean, sampling_log_ratio

        applied, log_ratio = batch.importance_sampling_ratio, sampling_log_ratio(batch)
        if applied is None or log_ratio is None or not batch.completion_mask.numel():
            return {}
        mask = loss_bearing_mask(batch).cpu()
        tokens = mask.sum(dim=1)
        rows = tokens > 0
        if not bool(rows.any()):
            return {}
        # TRL's own log-ratio: a token whose vLLM logprob is missing (NaN) counts as no difference
        diff = torch.nan_to_num(log_ratio.cpu() * mask, nan=0.0)
        applied = applied.detach().float().cpu()
        sequence_level = applied.dim() == 2 and applied.shape[1] == 1 and mask.shape[1] != 1
        if sequence_level:
            weight = applied[:, 0]
        else:
            weight = (applied * mask).sum(dim=1) / tokens.clamp(min=1.0)
        per_token_gap = diff.sum(dim=1) / tokens.clamp(min=1.0)
        low, high = WEIGHT_BAND
        weight, per_token_gap, tokens = weight[rows], per_token_gap[rows], tokens[rows]
        off, token_off = (weight < low) | (weight > high), per_token_gap.abs() > TOKEN_GAP
        return {
            "sequence_level": float(sequence_level),
            "weight_mean": float(weight.mean()),
            "dropped_share": float((weight == 0).float().mean()),
            "weight_off_share": float(off.float().mean()),
            "per_token_weight_off_share": float(token_off.float().mean()),
            "sum_only_off_share": float((off & ~token_off).float().mean()),
            "token_gap_mean": masked_mean(diff.abs(), mask),
            "length_mean": float(tokens.mean()),
        }
