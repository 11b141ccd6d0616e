"""h03 KL: the three KL estimators side by side, the KL term's weight in the loss, and whether the
reference logprobs really come from the frozen reference.

Per loss call (when TRL computed reference logprobs, i.e. beta != 0), on loss-bearing tokens, with
d = pol - ref: k1 = d, k2 = d^2 / 2, k3 = exp(-d) + d - 1 (TRL's), masked mean and max each;
`k1_neg_share` = share of tokens with k1 < 0. Tokens are sampled from the policy, so E[k1] = KL >= 0:
a negative `k1_mean` (or a k1_neg_share well above 0.5) means pol and ref are swapped somewhere.

KL share of the loss. The signed GRPO policy term is ~0 by construction (group-centred advantages sum to
zero, and at num_iterations=1 the ratio is 1), so |policy term| in the denominator would make any
beta > 0 look like 100% KL. We use magnitudes, aggregated exactly like the loss_type aggregates tokens:
  kl_loss_share = |beta * agg(k3)| / (agg(|ratio * A|) + |beta * agg(k3)| + 1e-8)
and, closer to what moves the weights, the share of the per-token gradient weight on grad(logp):
  kl_grad_share = agg(beta * |1 - exp(ref - pol)|) / (agg(|ratio * A|) + agg(beta * |1 - exp(ref - pol)|) + 1e-8)
over the rows with a non-zero advantage only: a row of a tied group has no policy gradient, so there any
KL term would read as the whole gradient, and a run whose groups mostly tie (a cut prompt, a task out of
reach) would look pinned by its KL term when it has nothing else to learn from (0 when no row has one).

Every `every` steps (a fresh forward is the expensive part) on `sample_rows` rows: the reference is
re-run (trainer.ref_model, or under LoRA the adapter-disabled model, as TRL does) and compared with the
reference logprobs the loss used: `ref_logp_max_abs_diff` (healthy ~0, numerics only).

`ref_is_policy` = 1.0 when the loss's reference logprobs equal the policy logprobs (max |diff| <
`ref_is_policy_tol`) although the policy has moved. At step 0 they coincide legitimately; "moved" means
the trainable parameters differ from their values at train begin (a per-tensor sum fingerprint,
checked after each optimizer step until the first change).

beta == 0 (no reference logprobs in the loss): the k* keys come from the every-`every`-steps fresh
reference forward instead (how far the policy drifted from where it started), when a reference exists
(ref_model, or LoRA's adapter-disabled model); `k_source` says where they came from
(1 = loss, 2 = fresh reference forward, 0 = none). Full fine-tuning with beta == 0 has no reference:
only `k_source`, `ref_available`, `policy_moved`, `beta` are emitted, as 0.0 for the others' checks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, LossParts, StepContext


def k_stats(pol, ref, mask) -> dict[str, float]:
    from hypotrack.grpo_math import kl_estimators
    from hypotrack.hooks._util import f, masked_max, masked_mean

    k = kl_estimators(pol, ref)
    m = mask.bool()
    out = {}
    for name in ("k1", "k2", "k3"):
        out[f"{name}_mean"], out[f"{name}_max"] = masked_mean(k[name], m), masked_max(k[name], m)
    out["k1_neg_share"] = f(((k["k1"] < 0) & m).sum() / m.sum().clamp(min=1)) if m.any() else 0.0
    return out


def aggregate(per_token, mask, loss_type: str):
    """Reduce (B, C) per-token values the way `loss_type` reduces the loss (this micro-batch's normaliser:
    the shares below are ratios of two such reductions, so TRL's batch-level constants cancel)."""
    from hypotrack.grpo_math import token_aggregation

    reduce, _, _ = token_aggregation(loss_type, mask.to(per_token.dtype))
    return reduce(per_token)


class KLHook(DiagnosticHook):
    name = "kl"
    description = (
        "h03: k1/k2/k3 KL estimates, KL share of the loss, reference logprobs vs a fresh "
        "frozen-reference forward, ref == policy"
    )
    metrics = (
        "beta", "policy_moved", "k_source", "k1_mean", "k1_max", "k2_mean", "k2_max", "k3_mean", "k3_max",
        "k1_neg_share", "kl_loss_share", "kl_grad_share", "ref_is_policy", "ref_available",
        "ref_logp_max_abs_diff",
    )

    @dataclass(frozen=True)
    class Settings:
        every: int = 10
        """Re-run the frozen reference on a sample of rows every this many steps."""
        sample_rows: int = 4
        """Rows of the batch the reference re-run scores."""
        ref_is_policy_tol: float = 1e-5
        """Largest logprob difference at which the reference still counts as the policy itself."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        c = self.config
        self.every, self.sample_rows, self.tol = max(int(c.every), 1), int(c.sample_rows), float(c.ref_is_policy_tol)
        self._fp0 = None  # per-tensor sums of trainable params at train begin (one small vector)
        self.moved = False
        self._n_loss = 0
        self._sample: dict[str, Any] | None = None  # this step's check sample, dropped in on_step_end
        self._peft_of: tuple[Any, bool] | None = None  # (model, is_peft(model)): a module walk, done once per model

    def _is_peft(self, model) -> bool:
        cached = self._peft_of
        if cached is not None and cached[0] is model:
            return cached[1]
        from hypotrack.hooks._util import is_peft

        res = is_peft(model)
        self._peft_of = (model, res)
        return res

    # -- policy moved? ----------------------------------------------------------------------------
    @staticmethod
    def _fingerprint(model):
        import torch

        from hypotrack.hooks._util import unwrap

        with torch.no_grad():
            sums = [p.detach().float().sum() for p in unwrap(model).parameters() if p.requires_grad]
            return torch.stack(sums).double().cpu() if sums else None

    def on_train_begin(self, ctx: StepContext) -> dict[str, float]:
        self._fp0 = self._fingerprint(ctx.model) if ctx.model is not None else None
        self.moved = False
        self._peft_of = None
        return {}

    # -- loss -------------------------------------------------------------------------------------
    def on_loss(self, parts: LossParts, step: int) -> dict[str, float]:
        import torch

        from hypotrack.grpo_math import kl_estimators
        from hypotrack.hooks._util import f

        pol = parts.per_token_logps.detach().float()
        mask = parts.mask.detach().bool()
        ref = parts.ref_per_token_logps
        out: dict[str, float] = {"beta": float(parts.beta), "policy_moved": 1.0 if self.moved else 0.0}
        if ref is not None:
            ref = ref.detach().float()
            out.update(k_stats(pol, ref, mask))
            out["k_source"] = 1.0
            diff = (pol - ref).abs()[mask]
            same = bool(diff.numel()) and f(diff.max()) < self.tol
            out["ref_is_policy"] = 1.0 if (same and self.moved) else 0.0
            old = parts.old_per_token_logps.detach().float() if parts.old_per_token_logps is not None else pol
            adv = parts.advantages.detach().float()
            adv = adv.unsqueeze(1) if adv.dim() == 1 else adv
            pg = (torch.exp(pol - old) * adv).abs().expand_as(pol)
            kl3 = kl_estimators(pol, ref)["k3"]
            klg = parts.beta * (1 - torch.exp(ref - pol)).abs()
            pg_a = f(aggregate(pg, mask, parts.loss_type))
            kl_a = abs(parts.beta * f(aggregate(kl3, mask, parts.loss_type)))
            out["kl_loss_share"] = kl_a / (pg_a + kl_a + 1e-8)
            # The gradient share only over rows that carry a policy gradient: where a group tied, its
            # advantages are 0 and any KL term would carry "all" of that row's gradient, whatever beta.
            signal = mask & (adv.abs() > 1e-8).expand_as(mask)
            if bool(signal.any()):
                pg_s = f(aggregate(pg, signal, parts.loss_type))
                klg_s = f(aggregate(klg, signal, parts.loss_type))
                out["kl_grad_share"] = klg_s / (pg_s + klg_s + 1e-8)
            else:
                out["kl_grad_share"] = 0.0
        else:
            out["ref_is_policy"] = 0.0
            out["kl_loss_share"] = 0.0
            out["kl_grad_share"] = 0.0
        if self._n_loss % self.every == 0 and parts.prompt_ids is not None and parts.completion_ids is not None:
            n = self.sample_rows
            self._sample = {
                "prompt_ids": parts.prompt_ids[:n].detach().clone(),
                "prompt_mask": parts.prompt_mask[:n].detach().clone(),
                "completion_ids": parts.completion_ids[:n].detach().clone(),
                "mask": mask[:n].clone(),
                "pol": pol[:n].clone(),
                "ref": ref[:n].clone() if ref is not None else None,
            }
        self._n_loss += 1
        return out

    # -- after the optimizer step -----------------------------------------------------------------
    def reference_logps(self, ctx: StepContext, s: dict[str, Any]):
        """Fresh reference logprobs for sample `s`, or None when no reference exists."""
        from hypotrack.hooks._util import attention_through_last, completion_logps, eval_mode, reference_pass, unwrap

        cmask = attention_through_last(s["mask"])
        trainer = getattr(ctx, "trainer", None)
        found = reference_pass(ctx.model, ctx.ref_model)
        if found is None:
            return None
        model, cm = found
        with eval_mode(unwrap(model)), cm:
            return completion_logps(model, s["prompt_ids"], s["prompt_mask"], s["completion_ids"], cmask, trainer)

    def on_step_end(self, ctx: StepContext) -> dict[str, float]:
        from hypotrack.hooks._util import f

        out: dict[str, float] = {}
        if not self.moved and self._fp0 is not None and ctx.model is not None:
            fp = self._fingerprint(ctx.model)
            self.moved = fp is not None and not bool((fp == self._fp0).all())
        s, self._sample = self._sample, None
        has_ref = ctx.ref_model is not None or (ctx.model is not None and self._is_peft(ctx.model))
        out["ref_available"] = 1.0 if has_ref else 0.0
        if s is None:
            return out
        fresh = self.reference_logps(ctx, s)
        if fresh is None:
            out["ref_logp_max_abs_diff"] = 0.0
            out["k_source"] = 0.0
            return out
        fresh = fresh.to(s["pol"].device)
        m = s["mask"]
        if s["ref"] is not None:
            d = (fresh - s["ref"]).abs()[m]
            out["ref_logp_max_abs_diff"] = f(d.max()) if d.numel() else 0.0
        else:
            out["ref_logp_max_abs_diff"] = 0.0
            out.update(k_stats(s["pol"], fresh, m))
            out["k_source"] = 2.0
        return out

