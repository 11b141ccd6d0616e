"""The GRPO maths, once, in plain torch: advantages, per-token logprobs, KL estimators, loss aggregation.

Everything TRL 1.16's `GRPOTrainer` does between "rewards" and "loss.backward()" is written out here
once, in the order the maths is usually written. The diagnostics hooks recompute what TRL did with
it, `hypotrack parity loss` checks the trainer against it on the same batch (tests compare it with
TRL's own code), and the critic scores completions with the same logprobs:

    advantages      A_i = (r_i - mean_group(r)) / (std(r) + 1e-4)        (scale_rewards group|batch|none)
    log-ratio       l_it = logp_it - old_logp_it          (token level, or the masked mean per sequence)
    ratio           rho_it = exp(l_it); clipped to [1 - eps_low, 1 + eps_high]
    policy term     -min(rho * A, clip(rho) * A)           (grpo, bnpo, dr_grpo, dapo, luspo)
                    -stopgrad(min(rho, eps_high)) * A * logp   (cispo)
                    -sigmoid(tau * (rho - 1)) * 4 / tau * A    (sapo)
    KL (k3)         exp(ref - logp) - (ref - logp) - 1     ("k1": logp - ref, only for the seed-004 variant)
                    x rho when use_bias_correction_kl (TRL 1.16's default: True)
    per-token loss  policy + beta * KL
    normalisation   grpo/sapo: masked mean per sequence, then mean over sequences
                    bnpo:      masked sum / masked token count of the micro-batch
                    dr_grpo:   masked sum / (B * max_completion_length)
                    dapo/cispo: masked sum / (num_items_in_batch / processes * accum / steps_per_generation)
                    luspo:     masked sum per sequence, mean over sequences
                    and, in train mode, / gradient-accumulation steps (except dapo/cispo, folded in above)

Because every normalisation is linear in the per-token loss, the total splits exactly into a policy
term and a KL term; `GRPOStepResult` returns both, the normaliser and the total. Supported loss
types: `REFERENCE_LOSS_TYPES` (vespo is not claimed).

This module imports torch; nothing here imports TRL.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from hypotrack.definitions.vocabulary import REFERENCE_LOSS_TYPES

ADV_EPS = 1e-4  # TRL adds this to the std before dividing (grpo_trainer.py, where it scores a rollout)


# --------------------------------------------------------------------------------------------------
# rewards and advantages
# --------------------------------------------------------------------------------------------------
def nanstd(t: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """TRL's `nanstd`: Bessel-corrected and NaN-aware (a reward function may give None, i.e. NaN)."""
    mean = torch.nanmean(t, dim=dim, keepdim=True)
    var = torch.nanmean((t - mean) ** 2, dim=dim, keepdim=True)
    count = torch.sum(~torch.isnan(t), dim=dim, keepdim=True)
    corr = torch.where(count > 1, count / (count - 1), torch.full_like(var, float("nan")))
    std = torch.sqrt(var * corr)
    if keepdim:
        return std
    return std.squeeze(dim) if dim is not None else std.reshape(())


def combined_rewards(rewards_per_func: torch.Tensor, reward_weights: torch.Tensor) -> torch.Tensor:
    """TRL's scalar reward per completion: weighted nansum, NaN for rows where every function gave None."""
    rpf = rewards_per_func.float()
    rewards = (rpf * reward_weights.to(rpf.device, rpf.dtype).unsqueeze(0)).nansum(dim=1)
    rewards[torch.isnan(rpf).all(dim=1)] = float("nan")
    return rewards


def advantages_by_mode(rewards: torch.Tensor, num_generations: int) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """TRL's advantages under every `scale_rewards` mode at once (they share the group mean).

    TRL 1.16 under `multi_objective_aggregation: sum_then_normalize`, for a flat reward vector laid out
    as [prompt0 x G, prompt1 x G, ...]: the baseline is always the group mean; the divisor is the group
    std ("group"), the std of the whole batch ("batch") or nothing ("none"), plus ADV_EPS. NaN rewards
    are left out of the statistics, and NaN advantages become 0. Returns ({mode: (groups, G)
    advantages}, group std (groups,), batch std ()).
    """
    grouped = rewards.float().view(-1, num_generations)
    centred = grouped - torch.nanmean(grouped, dim=1, keepdim=True)
    if num_generations > 1:
        group_std = nanstd(grouped, dim=1)
    else:
        group_std = torch.zeros(grouped.size(0), device=grouped.device)
    batch_std = nanstd(grouped.reshape(-1)) if grouped.numel() > 1 else grouped.new_zeros(())
    modes = {
        "group": torch.nan_to_num(centred / (group_std.unsqueeze(1) + ADV_EPS), nan=0.0),
        "batch": torch.nan_to_num(centred / (batch_std + ADV_EPS), nan=0.0),
        "none": torch.nan_to_num(centred, nan=0.0),
    }
    return modes, group_std, batch_std


def group_advantages(
    rewards: torch.Tensor,
    num_generations: int,
    scale_rewards: Literal["group", "batch", "none"] = "group",
) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, the std they were divided by, per element) under one `scale_rewards` mode."""
    if scale_rewards not in ("group", "batch", "none"):
        raise ValueError(f"scale_rewards must be 'group', 'batch' or 'none', got {scale_rewards!r}")
    modes, group_std, batch_std = advantages_by_mode(rewards, num_generations)
    std = batch_std.expand(rewards.numel()) if scale_rewards == "batch" else group_std.repeat_interleave(num_generations)
    return modes[scale_rewards].reshape(-1), std


@dataclass
class NormalizeThenSum:
    """TRL 1.16's advantages under `multi_objective_aggregation: normalize_then_sum`, with their parts."""

    function_std: torch.Tensor  # (groups, F): std of each reward function within each group
    terms: torch.Tensor  # (groups, G, F): weighted z-score of each function
    batch_std: torch.Tensor  # (): std over the batch of the summed z-scores
    advantages: torch.Tensor  # (B,)


def normalize_then_sum(rewards_per_func: torch.Tensor, reward_weights: torch.Tensor,
                       num_generations: int) -> NormalizeThenSum:
    """Each function standardised within its group (by its own std + ADV_EPS), weighted z-scores summed,
    the sum standardised over the batch (scale_rewards is not used)."""
    rpf = rewards_per_func.float()
    functions = rpf.size(1)
    grouped = rpf.view(-1, num_generations, functions)
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = nanstd(grouped, dim=1, keepdim=True) if num_generations > 1 else torch.zeros_like(mean_k)
    terms = (grouped - mean_k) / (std_k + ADV_EPS) * reward_weights.to(rpf.device, rpf.dtype).view(1, 1, functions)
    rewards = terms.reshape(-1, functions).nansum(dim=1)
    rewards[torch.isnan(rpf).all(dim=1)] = float("nan")
    std = nanstd(rewards) if rewards.numel() > 1 else rewards.new_zeros(())
    advantages = torch.nan_to_num((rewards - torch.nanmean(rewards)) / (std + ADV_EPS), nan=0.0)
    return NormalizeThenSum(std_k.squeeze(1), terms, std, advantages)


# --------------------------------------------------------------------------------------------------
# log-probabilities
# --------------------------------------------------------------------------------------------------
def token_logps(logits: torch.Tensor, token_ids: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """log softmax(logits / temperature) at ``token_ids``, in fp32; ``logits[:, t]`` scores ``token_ids[:, t]``."""
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    return torch.log_softmax(logits, dim=-1).gather(-1, token_ids.unsqueeze(-1)).squeeze(-1)


def completion_logps(
    model,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    temperature: float = 1.0,
    trainer: Any = None,
) -> torch.Tensor:
    """Per-token log p(completion token | prefix).

    With a ``trainer``, its own per-token logprobs (TRL's logprob seam, session/trl_seams.py: same temperature,
    same fused head, same numerics as the values a hook checks). Otherwise one plain forward + log_softmax + gather: the
    logit at position t predicts token t+1, hence the [-T-1:-1] slice, and positions whose attention
    mask is 0 (completion padding) are set to 0, as TRL's fused LM head does, so a KL term with ref
    logps of 0 there stays finite before masking.
    """
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
    T = completion_ids.size(1)
    if trainer is not None:
        from hypotrack.session.trl_seams import policy_logps

        logps = policy_logps(trainer, model, input_ids, attention_mask, T)
        if logps is not None:
            return logps.float()
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, -T - 1 : -1, :]
    return token_logps(logits, completion_ids, temperature).masked_fill(completion_mask == 0, 0.0)


# --------------------------------------------------------------------------------------------------
# KL estimators
# --------------------------------------------------------------------------------------------------
def kl_estimators(policy_logps: torch.Tensor, ref_logps: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-token k1, k2, k3 of KL(policy || ref) on tokens sampled from the policy, with d = pol - ref:
    k1 = d, k2 = d^2 / 2, k3 = exp(-d) + d - 1 (TRL's, always >= 0; E[k1] = E[k3] = KL)."""
    d = (policy_logps - ref_logps).float()
    return {"k1": d, "k2": 0.5 * d * d, "k3": torch.exp(-d) + d - 1}


# --------------------------------------------------------------------------------------------------
# loss aggregation
# --------------------------------------------------------------------------------------------------
def token_aggregation(
    loss_type: str,
    mask: torch.Tensor,
    *,
    max_completion_length: int | None = None,
    num_items: float | torch.Tensor | None = None,
    accum: int = 1,
) -> tuple[Callable[[torch.Tensor], torch.Tensor], float, str]:
    """(reduce, normaliser, description): how `loss_type` turns (B, T) per-token values into one number.

    grpo/sapo: masked mean per sequence, then mean over sequences; bnpo: masked token mean of the
    micro-batch; dr_grpo: masked sum / (B * max_completion_length); dapo/cispo/vespo: masked sum /
    num_items (the generation batch's masked tokens, already scaled for processes and accumulation;
    default: this micro-batch's); luspo: masked sum per sequence, mean over sequences. Every reduction
    except dapo/cispo/vespo is also divided by ``accum`` (they fold it into num_items).
    """
    if not mask.is_floating_point():
        mask = mask.to(torch.float32)
    B, T = mask.shape
    if loss_type in ("grpo", "sapo"):
        def reduce(x):
            return ((x * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / accum

        return reduce, float(B * accum), f"per-seq masked mean, mean over {B} seqs, / accum {accum}"
    if loss_type == "bnpo":
        n = mask.sum().clamp(min=1.0)

        def reduce(x):
            return (x * mask).sum() / n / accum

        return reduce, float(n) * accum, f"masked tokens {int(n)} x accum {accum}"
    if loss_type == "dr_grpo":
        length = max_completion_length or T

        def reduce(x):
            return (x * mask).sum() / (B * length) / accum

        return reduce, float(B * length * accum), f"{B} seqs x max_completion_length {length} x accum {accum}"
    if loss_type in ("dapo", "cispo", "vespo"):
        items = torch.as_tensor(mask.sum() if num_items is None else num_items, dtype=mask.dtype).clamp(min=1.0)

        def reduce(x):
            return (x * mask).sum() / items

        return reduce, float(items), "num_items_in_batch / processes x accum / steps_per_generation"
    if loss_type == "luspo":
        def reduce(x):
            return (x * mask).sum(-1).mean() / accum

        return reduce, float(B * accum), f"per-seq masked sum, mean over {B} seqs, / accum {accum}"
    raise ValueError(f"unknown loss_type {loss_type!r}")


# --------------------------------------------------------------------------------------------------
# the step
# --------------------------------------------------------------------------------------------------
@dataclass
class GRPOLossConfig:
    """The knobs of TRL's loss this reference reproduces (names follow GRPOConfig)."""

    loss_type: str = "dapo"
    beta: float = 0.0
    epsilon_low: float = 0.2
    epsilon_high: float = 0.2
    delta: float | None = None
    importance_sampling_level: Literal["token", "sequence"] = "token"
    max_completion_length: int = 16  # dr_grpo's constant normaliser
    # TRL >= 1.x default True: per-token KL is multiplied by the (differentiable) importance ratio,
    # which changes the KL gradient even on-policy (DeepSeek-V3.2 unbiased reverse-KL estimator).
    use_bias_correction_kl: bool = True
    sapo_temperature_pos: float = 1.0
    sapo_temperature_neg: float = 1.05
    # Train-mode bookkeeping: TRL divides by the accumulation steps in train mode, not in eval mode.
    train_mode: bool = True
    gradient_accumulation_steps: int = 1
    steps_per_generation: int = 1
    num_processes: int = 1
    # Deliberate deviations (seed 004), all off for the TRL-exact loss.
    kl_estimator: Literal["k3", "k1"] = "k3"
    policy_estimator: Literal["ratio", "reinforce"] = "ratio"
    length_norm: Literal["masked", "full"] = "masked"


@dataclass
class GRPOStepResult:
    policy: torch.Tensor  # policy term after normalisation (scalar, differentiable)
    kl: torch.Tensor  # beta * KL term after normalisation (scalar, differentiable); 0 when beta == 0
    total: torch.Tensor  # policy + kl (what backward() is called on)
    normalizer: float  # the divisor of the masked sum (see `normalizer_desc`)
    normalizer_desc: str
    mean_kl: float  # masked token mean of the (unscaled) per-token KL, TRL's `kl` metric
    clip_low_frac: float  # share of tokens clipped from below with A < 0 (TRL's clip_ratio/low_mean)
    clip_high_frac: float
    per_token_logps: torch.Tensor = field(repr=False)


def grpo_step_loss(
    per_token_logps: torch.Tensor,
    old_per_token_logps: torch.Tensor | None,
    ref_per_token_logps: torch.Tensor | None,
    advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    cfg: GRPOLossConfig,
    num_items_in_batch: float | torch.Tensor | None = None,
) -> GRPOStepResult:
    """Loss of one GRPO micro-batch from its per-token log-probs (shape B x T), split into components."""
    if cfg.loss_type not in REFERENCE_LOSS_TYPES:
        raise ValueError(f"loss_type {cfg.loss_type!r} is not implemented by the reference ({REFERENCE_LOSS_TYPES})")
    logp = per_token_logps
    mask = completion_mask.to(logp.dtype)
    B, T = logp.shape
    adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(1)  # (B, 1)
    old = logp.detach() if old_per_token_logps is None else old_per_token_logps

    # --- importance ratio ---
    log_ratio = logp - old
    if cfg.importance_sampling_level == "token":
        log_w = log_ratio
    elif cfg.importance_sampling_level == "sequence":
        log_w = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).unsqueeze(-1)
    else:
        raise ValueError(f"importance_sampling_level must be 'token' or 'sequence', got {cfg.importance_sampling_level!r}")
    ratio = torch.exp(log_w)

    # --- policy term per token ---
    if cfg.policy_estimator == "reinforce":
        # seed 004: -A * log pi, no ratio, no clipping
        policy_tok = -adv * logp
    elif cfg.loss_type == "cispo":
        policy_tok = -torch.clamp(ratio, max=cfg.epsilon_high).detach() * adv * logp
    elif cfg.loss_type == "sapo":
        tau = torch.where(adv > 0, cfg.sapo_temperature_pos, cfg.sapo_temperature_neg)
        policy_tok = -(torch.sigmoid(tau * (ratio - 1)) * 4 / tau) * adv
    else:
        clipped = torch.clamp(ratio, 1 - cfg.epsilon_low, 1 + cfg.epsilon_high)
        unclipped = ratio if cfg.delta is None else torch.clamp(ratio, max=cfg.delta)
        policy_tok = -torch.min(unclipped * adv, clipped * adv)
    policy_tok = policy_tok.expand(B, T) if policy_tok.shape != (B, T) else policy_tok

    # --- KL term per token ---
    if cfg.beta != 0.0:
        kl_tok = kl_estimators(logp, ref_per_token_logps)[cfg.kl_estimator]
        if cfg.use_bias_correction_kl:
            kl_tok = kl_tok * ratio
        mean_kl = float(((kl_tok * mask).sum() / mask.sum().clamp(min=1.0)).detach())
    else:
        kl_tok = torch.zeros_like(logp)
        mean_kl = 0.0

    # --- normalisation (a linear map, applied to each component) ---
    accum = cfg.gradient_accumulation_steps if cfg.train_mode else 1
    lt = cfg.loss_type
    if cfg.length_norm == "full":
        # seed 004: divide each sequence by the padded length instead of its own token count
        def reduce(x):
            return ((x * mask).sum(-1) / T).mean() / accum

        normalizer, desc = float(T * B * accum), f"per-seq / full length {T}, mean over {B} seqs, / accum {accum}"
    else:
        n_items = None
        if lt in ("dapo", "cispo"):
            if num_items_in_batch is None:
                raise ValueError(f"loss_type {lt!r} needs num_items_in_batch (masked tokens in the generation batch)")
            n_items = torch.as_tensor(num_items_in_batch, dtype=logp.dtype).clamp(min=1.0) / cfg.num_processes
            if cfg.train_mode:
                n_items = n_items * cfg.gradient_accumulation_steps / cfg.steps_per_generation
        reduce, normalizer, desc = token_aggregation(lt, mask, max_completion_length=cfg.max_completion_length,
                                                     num_items=n_items, accum=accum)

    policy = reduce(policy_tok)
    kl = reduce(cfg.beta * kl_tok) if cfg.beta != 0.0 else policy.new_zeros(())
    total = policy + kl

    with torch.no_grad():
        n = mask.sum().clamp(min=1.0)
        if lt in ("grpo", "bnpo", "dr_grpo", "dapo", "luspo"):
            low = ((ratio < 1 - cfg.epsilon_low) & (adv < 0)).to(mask.dtype).expand(B, T)
            high = ((ratio > 1 + cfg.epsilon_high) & (adv > 0)).to(mask.dtype).expand(B, T)
            clip_low, clip_high = float((low * mask).sum() / n), float((high * mask).sum() / n)
        else:
            clip_low = clip_high = float("nan")
    return GRPOStepResult(
        policy=policy,
        kl=kl,
        total=total,
        normalizer=normalizer,
        normalizer_desc=desc,
        mean_kl=mean_kl,
        clip_low_frac=clip_low,
        clip_high_frac=clip_high,
        per_token_logps=logp,
    )


def reference_grpo_loss(model, inputs: dict, cfg: GRPOLossConfig, temperature: float = 1.0) -> GRPOStepResult:
    """Full reference step on a TRL-shaped inputs dict: forward, log-probs, loss components."""
    logps = completion_logps(
        model,
        inputs["prompt_ids"],
        inputs["prompt_mask"],
        inputs["completion_ids"],
        inputs["completion_mask"],
        temperature=temperature,
    )
    return grpo_step_loss(
        logps,
        inputs.get("old_per_token_logps"),
        inputs.get("ref_per_token_logps"),
        inputs["advantages"],
        inputs["completion_mask"],
        cfg,
        num_items_in_batch=inputs.get("num_items_in_batch"),
    )
