"""Loss parity: TRL's GRPOTrainer loss (its loss seam, session/trl_seams.py) vs the plain-torch reference.

One real GRPOTrainer is built on the model (tiny dataset, dummy reward, use_cpu, report_to none). A
rollout batch in TRL's shape is sampled once: prompt/completion ids and masks, group advantages from
synthetic rewards, and `old_per_token_logps` / `ref_per_token_logps` that deliberately differ from the
current log-probs (seeded Gaussian noise) so that ratio clipping and the KL term are exercised.

For every (loss_type, beta) the trainer's loss settings are set on that one trainer (the attributes
TRL's loss reads: loss_type, beta, epsilon_low/high, importance_sampling_level, ...), then both
sides run forward + backward from zeroed gradients on the same parameters and are compared:
|loss_trl - loss_ref| and max |grad_trl - grad_ref| over all parameters.

The seed-004 "manual GRPO" deviations are reproduced on purpose against TRL's grpo loss:
sequence-level REINFORCE, mean k1 KL instead of k3, division by the full padded length, and all
three together; their rows say how far each moves the loss and the gradient.

Gradient accumulation (trl#2617): for each loss_type, the same batch is also run as 2 and 4
micro-batches accumulated into one gradient, TRL's way (each micro-batch's loss, the
trainer's accumulation steps set, one backward each); the accumulated gradient must equal the
one-pass gradient. bnpo normalises by each micro-batch's own token count by design, so it differs
when micro-batches hold different numbers of tokens: reported, and left out of the verdict.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

from hypotrack.grpo_math import REFERENCE_LOSS_TYPES, GRPOLossConfig, group_advantages, reference_grpo_loss
from hypotrack.session import trl_seams

from .common import default_prompts, load_tokenizer, sample_rollout, set_threads

VARIANTS = {
    # name: (description, GRPOLossConfig overrides)
    "seq_reinforce": ("-A * sum(logp) / T: REINFORCE, no ratio/clip", dict(policy_estimator="reinforce")),
    "k1_kl": ("mean k1 KL (logp - ref) instead of k3", dict(kl_estimator="k1")),
    "full_length": ("divide by padded length, not masked count", dict(length_norm="full")),
    "kl_no_is_weight": ("k3 KL without TRL 1.16's importance-ratio weight (use_bias_correction_kl=False)",
                        dict(use_bias_correction_kl=False)),
    "seed004_all": (
        "all three (the seed-004 manual step)",
        dict(policy_estimator="reinforce", kl_estimator="k1", length_norm="full"),
    ),
}


@dataclass
class LossParityRow:
    loss_type: str
    beta: float
    variant: str  # "" for the TRL-exact reference, else a VARIANTS key (compared with TRL's grpo)
    policy_ref: float
    kl_ref: float
    normalizer: float
    normalizer_desc: str
    total_ref: float
    total_trl: float
    loss_abs_diff: float
    loss_rel_diff: float
    grad_max_abs_diff: float
    grad_max_abs: float  # max |grad| on the TRL side: the scale the gradient tolerance is relative to
    grad_norm_ref: float
    grad_norm_trl: float
    grad_norm_ratio: float  # ref / trl
    grad_cosine: float
    kl_metric_diff: float  # |TRL's logged `kl` - reference mean k3 KL| (nan when beta == 0)
    tolerance: float
    passed: bool  # |Δloss| <= tol * max(1, |loss|) and max|Δgrad| <= tol * max(1, max|grad|); variants: True means "differs from TRL beyond tolerance", as they should
    notes: str = ""


ACCUMULATION_STEPS = (2, 4)
# Loss types whose normaliser is, by definition, each micro-batch's own (their accumulated gradient may differ).
PER_MICRO_BATCH = ("bnpo",)


@dataclass
class AccumulationRow:
    loss_type: str
    steps: int  # gradient_accumulation_steps the batch was split into
    grad_max_abs_diff: float  # vs the one-pass gradient
    grad_max_abs: float
    expected_equal: bool  # False for loss types normalised per micro-batch
    passed: bool


@dataclass
class LossParityResult:
    rows: list[LossParityRow]
    batch: dict = field(default_factory=dict)  # shapes / token counts / clip fractions, for the report
    seconds: float = 0.0
    accumulation: list[AccumulationRow] = field(default_factory=list)

    @property
    def exact_rows(self) -> list[LossParityRow]:
        return [r for r in self.rows if not r.variant]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.exact_rows)

    def metrics(self) -> dict[str, float]:
        ex = self.exact_rows
        m = {
            "parity/loss/max_abs_diff": max((r.loss_abs_diff for r in ex), default=float("nan")),
            "parity/loss/grad_max_abs_diff": max((r.grad_max_abs_diff for r in ex), default=float("nan")),
            "parity/loss/passed": float(self.passed),
            "parity/loss/n_cases": float(len(ex)),
            "parity/loss/seconds": self.seconds,
        }
        for lt in {r.loss_type for r in ex}:
            rows = [r for r in ex if r.loss_type == lt]
            m[f"parity/loss/{lt}/max_abs_diff"] = max(r.loss_abs_diff for r in rows)
            m[f"parity/loss/{lt}/grad_max_abs_diff"] = max(r.grad_max_abs_diff for r in rows)
        kl = [r.kl_metric_diff for r in ex if not math.isnan(r.kl_metric_diff)]
        if kl:
            m["parity/loss/kl_metric_abs_diff"] = max(kl)
        checked = [a for a in self.accumulation if a.expected_equal]
        if checked:
            m["parity/loss/accumulation/grad_max_abs_diff"] = max(a.grad_max_abs_diff for a in checked)
            m["parity/loss/accumulation/passed"] = float(all(a.passed for a in checked))
        for r in self.rows:
            if r.variant:
                m[f"parity/loss/variant/{r.variant}/loss_rel_diff"] = r.loss_rel_diff
                m[f"parity/loss/variant/{r.variant}/grad_norm_ratio"] = r.grad_norm_ratio
                m[f"parity/loss/variant/{r.variant}/grad_cosine"] = r.grad_cosine
        return m


# --------------------------------------------------------------------------------------------------
def _dummy_reward(completions, **kwargs):
    return [float(len(str(c)) % 3) for c in completions]


def build_trainer(model_path: str, seed: int = 0, num_generations: int = 4, max_completion_length: int = 12,
                  gradient_accumulation_steps: int = 1, epsilon: float = 0.2, epsilon_high: float | None = None,
                  output_dir: str | None = None, loss_type: str = "dapo", beta: float = 0.0, **grpo_overrides):
    """A real GRPOTrainer on the model at model_path (CPU, fp32, no reporting), ready for its loss seam."""
    import tempfile

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tok = load_tokenizer(model_path)
    ds = Dataset.from_dict({"prompt": default_prompts(model_path, 8, seed)})
    args = GRPOConfig(
        output_dir=output_dir or tempfile.mkdtemp(prefix="hypotrack-parity-"),
        use_cpu=True, report_to="none", seed=seed, bf16=False, fp16=False,
        per_device_train_batch_size=num_generations, num_generations=num_generations,
        gradient_accumulation_steps=gradient_accumulation_steps, max_completion_length=max_completion_length,
        epsilon=epsilon, epsilon_high=epsilon_high, beta=beta, loss_type=loss_type, logging_steps=1,
        save_strategy="no", model_init_kwargs={"dtype": torch.float32}, **grpo_overrides,
    )
    trainer = GRPOTrainer(model=model_path, reward_funcs=_dummy_reward, args=args, train_dataset=ds,
                          processing_class=tok)
    # Outside a training loop this attribute is not set yet; TRL divides by it in train mode.
    trainer.current_gradient_accumulation_steps = args.gradient_accumulation_steps
    return trainer


def configure_trainer(trainer, cfg: GRPOLossConfig) -> None:
    """Put the loss settings of cfg on the trainer (its attributes and its args), as __init__ would."""
    a = trainer.args
    trainer.loss_type = a.loss_type = cfg.loss_type
    trainer.beta = a.beta = cfg.beta
    trainer.epsilon_low, trainer.epsilon_high = cfg.epsilon_low, cfg.epsilon_high
    a.epsilon, a.epsilon_high = cfg.epsilon_low, cfg.epsilon_high
    trainer.importance_sampling_level = a.importance_sampling_level = cfg.importance_sampling_level
    a.delta = cfg.delta
    a.use_bias_correction_kl = cfg.use_bias_correction_kl
    a.sapo_temperature_pos, a.sapo_temperature_neg = cfg.sapo_temperature_pos, cfg.sapo_temperature_neg
    trainer.max_completion_length = a.max_completion_length = cfg.max_completion_length
    trainer.current_gradient_accumulation_steps = cfg.gradient_accumulation_steps
    a.steps_per_generation = cfg.steps_per_generation
    trl_seams.reset_metric_buffer(trainer)


def make_batch(model, tokenizer, seed: int, num_prompts: int = 2, num_generations: int = 4,
               max_completion_length: int = 12, scale_rewards: str = "group", noise: float = 0.3,
               steps_per_generation: int = 1, prompts: list[str] | None = None, model_path: str = "") -> dict:
    """A TRL-shaped micro-batch; old/ref log-probs are the current ones plus seeded noise (masked to 0)."""
    import torch

    from hypotrack.grpo_math import completion_logps

    prompts = prompts or default_prompts(model_path, num_prompts, seed)
    p_ids, p_mask, c_ids, c_mask, _ = sample_rollout(model, tokenizer, prompts[:num_prompts], num_generations,
                                                     max_completion_length, seed)
    g = torch.Generator().manual_seed(seed + 1)
    rewards = torch.rand(p_ids.size(0), generator=g).round()  # 0/1 rewards, like a verifier
    rewards[::num_generations] = 1.0 - rewards[1::num_generations]  # no zero-std group
    advantages, _ = group_advantages(rewards, num_generations, scale_rewards)
    with torch.no_grad():
        cur = completion_logps(model, p_ids, p_mask, c_ids, c_mask)
    mf = c_mask.float()
    old = (cur + noise * torch.randn(cur.shape, generator=g)) * mf
    ref = (cur + noise * torch.randn(cur.shape, generator=g)) * mf
    return {
        "prompt_ids": p_ids, "prompt_mask": p_mask, "completion_ids": c_ids, "completion_mask": c_mask,
        "advantages": advantages, "old_per_token_logps": old, "ref_per_token_logps": ref,
        # the generation batch spans steps_per_generation micro-batches of the same token count
        "num_items_in_batch": c_mask.sum() * steps_per_generation, "rewards": rewards,
    }


def _grads(model):
    return [p.grad.detach().clone() if p.grad is not None else None for p in model.parameters() if p.requires_grad]


def _grad_stats(ga, gb):
    """(max |a-b|, |a|, |b|, cos(a, b), max |b|) over all parameter gradients, in float64."""
    import torch

    maxd, na, nb, dot, maxb = 0.0, 0.0, 0.0, 0.0, 0.0
    for a, b in zip(ga, gb):
        a = torch.zeros(()) if a is None else a.double()
        b = torch.zeros(()) if b is None else b.double()
        maxd = max(maxd, float((a - b).abs().max()))
        maxb = max(maxb, float(b.abs().max()))
        na += float((a * a).sum())
        nb += float((b * b).sum())
        dot += float((a * b).sum())
    na, nb = math.sqrt(na), math.sqrt(nb)
    cos = dot / (na * nb) if na > 0 and nb > 0 else float("nan")
    return maxd, na, nb, cos, maxb


def _within(diff: float, scale: float, tol: float) -> bool:
    """atol = rtol = tol, as torch.allclose: |diff| <= tol * max(1, |scale|)."""
    return diff <= tol * max(1.0, abs(scale))


def _run_trl(trainer, model, inputs, seed):
    import torch

    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)  # same dropout masks as the reference forward, if the model has dropout in train mode
    trl_inputs = {k: v for k, v in inputs.items() if k != "rewards"}
    loss = trl_seams.compute_loss(trainer, model, trl_inputs)
    loss.backward()
    kl_logged = trl_seams.logged_metric(trainer, "kl", "train" if model.training else "eval") or [float("nan")]
    return float(loss.detach()), _grads(model), (kl_logged[-1] if kl_logged else float("nan"))


def _run_ref(model, inputs, cfg, seed):
    import torch

    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    res = reference_grpo_loss(model, inputs, cfg)
    res.total.backward()
    return res, _grads(model)


def run_loss_parity(model_path: str, loss_types=("grpo", "bnpo", "dr_grpo", "dapo"), betas=(0.0, 0.04),
                    tolerance: float = 1e-6, seed: int = 0, num_prompts: int = 2, num_generations: int = 4,
                    max_completion_length: int = 12, epsilon: float = 0.2, epsilon_high: float | None = 0.28,
                    scale_rewards: str = "group", train_mode: bool = True, gradient_accumulation_steps: int = 1,
                    variants: bool = True, variant_beta: float = 0.1, noise: float = 0.3,
                    use_bias_correction_kl: bool = True,
                    threads: int = 1) -> LossParityResult:
    """Compare TRL's loss with the reference for each loss_type x beta (+ seed-004 variants)."""
    import torch

    set_threads(threads)
    t0 = time.perf_counter()
    bad = [lt for lt in loss_types if lt not in REFERENCE_LOSS_TYPES]
    if bad:
        raise ValueError(f"loss types {bad} are not implemented by the reference; supported: {REFERENCE_LOSS_TYPES}")
    trainer = build_trainer(model_path, seed=seed, num_generations=num_generations,
                            max_completion_length=max_completion_length,
                            gradient_accumulation_steps=gradient_accumulation_steps,
                            epsilon=epsilon, epsilon_high=epsilon_high)
    model = trainer.model
    tok = trainer.processing_class
    model.eval()
    inputs = make_batch(model, tok, seed, num_prompts=num_prompts, num_generations=num_generations,
                        max_completion_length=max_completion_length, scale_rewards=scale_rewards, noise=noise,
                        steps_per_generation=gradient_accumulation_steps, model_path=model_path)
    model.train(train_mode)
    eps_high = epsilon if epsilon_high is None else epsilon_high

    def cfg_for(lt, beta, **over):
        settings = {"gradient_accumulation_steps": gradient_accumulation_steps,
                    "steps_per_generation": gradient_accumulation_steps,
                    "use_bias_correction_kl": use_bias_correction_kl, **over}
        return GRPOLossConfig(
            loss_type=lt, beta=beta, epsilon_low=epsilon, epsilon_high=eps_high,
            importance_sampling_level="sequence" if lt == "luspo" else "token",
            max_completion_length=max_completion_length, train_mode=train_mode, **settings,
        )

    rows: list[LossParityRow] = []
    clip = {}
    trl_cache = {}
    cases = [(lt, b) for lt in loss_types for b in betas]
    if variants:
        cases_v = [("grpo", variant_beta)]
        for c in cases_v:
            if c not in cases:
                cases.append(c)
    for lt, beta in cases:
        cfg = cfg_for(lt, beta)
        if lt == "cispo" and eps_high < 1.0:
            cfg.epsilon_high = 5.0  # CISPO's epsilon_high is a ratio cap (eps_max), not 0.2-ish
        configure_trainer(trainer, cfg)
        loss_trl, g_trl, kl_logged = _run_trl(trainer, model, inputs, seed)
        trl_cache[(lt, beta)] = (loss_trl, g_trl)
        res, g_ref = _run_ref(model, inputs, cfg, seed)
        maxd, n_ref, n_trl, cos, gmax = _grad_stats(g_ref, g_trl)
        total = float(res.total.detach())
        d = abs(total - loss_trl)
        kl_diff = abs(kl_logged - res.mean_kl) if beta != 0.0 else float("nan")
        clip[f"{lt}/beta={beta}"] = (res.clip_low_frac, res.clip_high_frac)
        if (lt, beta) in [(x, y) for x in loss_types for y in betas]:
            rows.append(LossParityRow(
                loss_type=lt, beta=beta, variant="", policy_ref=float(res.policy.detach()),
                kl_ref=float(res.kl.detach()), normalizer=res.normalizer, normalizer_desc=res.normalizer_desc,
                total_ref=total, total_trl=loss_trl, loss_abs_diff=d,
                loss_rel_diff=d / abs(loss_trl) if loss_trl else float("inf") if d else 0.0,
                grad_max_abs_diff=maxd, grad_max_abs=gmax, grad_norm_ref=n_ref, grad_norm_trl=n_trl,
                grad_norm_ratio=n_ref / n_trl if n_trl else float("nan"), grad_cosine=cos,
                kl_metric_diff=kl_diff, tolerance=tolerance,
                passed=_within(d, loss_trl, tolerance) and _within(maxd, gmax, tolerance)
                and (math.isnan(kl_diff) or _within(kl_diff, res.mean_kl, tolerance)),
            ))
    if variants:
        loss_trl, g_trl = trl_cache[("grpo", variant_beta)]
        for name, (desc, over) in VARIANTS.items():
            if variant_beta == 0.0 and name in ("k1_kl", "kl_no_is_weight"):
                continue
            cfg = cfg_for("grpo", variant_beta, **over)
            res, g_ref = _run_ref(model, inputs, cfg, seed)
            maxd, n_ref, n_trl, cos, gmax = _grad_stats(g_ref, g_trl)
            total = float(res.total.detach())
            d = abs(total - loss_trl)
            rows.append(LossParityRow(
                loss_type="grpo", beta=variant_beta, variant=name, policy_ref=float(res.policy.detach()),
                kl_ref=float(res.kl.detach()), normalizer=res.normalizer, normalizer_desc=res.normalizer_desc,
                total_ref=total, total_trl=loss_trl, loss_abs_diff=d,
                loss_rel_diff=d / abs(loss_trl) if loss_trl else float("inf") if d else 0.0,
                grad_max_abs_diff=maxd, grad_max_abs=gmax, grad_norm_ref=n_ref, grad_norm_trl=n_trl,
                grad_norm_ratio=n_ref / n_trl if n_trl else float("nan"), grad_cosine=cos,
                kl_metric_diff=float("nan"), tolerance=tolerance,
                passed=not (_within(d, loss_trl, tolerance) and _within(maxd, gmax, tolerance)), notes=desc,
            ))
    accumulation = accumulation_parity(trainer, model, inputs, loss_types, cfg_for, seed, tolerance) \
        if train_mode and gradient_accumulation_steps == 1 else []
    model.zero_grad(set_to_none=True)
    m = inputs["completion_mask"]
    batch = {
        "sequences": int(m.size(0)), "completion_width": int(m.size(1)), "masked_tokens": int(m.sum()),
        "prompt_width": int(inputs["prompt_ids"].size(1)), "train_mode": train_mode,
        "gradient_accumulation_steps": gradient_accumulation_steps, "clip_fractions(low,high)": clip,
        "torch": torch.__version__, "trl": __import__("trl").__version__,
    }
    return LossParityResult(rows=rows, batch=batch, seconds=time.perf_counter() - t0, accumulation=accumulation)


def accumulation_parity(trainer, model, inputs, loss_types, cfg_for, seed, tolerance) -> list[AccumulationRow]:
    """The same batch as 1, 2 and 4 accumulated micro-batches: the gradients must agree (trl#2617)."""
    import torch

    rows = []
    batch_rows = inputs["completion_mask"].size(0)
    for lt in loss_types:
        configure_trainer(trainer, cfg_for(lt, 0.0))
        _, whole, _ = _run_trl(trainer, model, inputs, seed)
        for steps in ACCUMULATION_STEPS:
            if batch_rows % steps:
                continue
            configure_trainer(trainer, cfg_for(lt, 0.0, gradient_accumulation_steps=steps, steps_per_generation=steps))
            trainer.args.gradient_accumulation_steps = trainer.current_gradient_accumulation_steps = steps
            trainer.args.steps_per_generation = steps
            model.zero_grad(set_to_none=True)
            size = batch_rows // steps
            for start in range(0, batch_rows, size):
                micro = {k: (v[start:start + size] if torch.is_tensor(v) and v.dim() and v.size(0) == batch_rows else v)
                         for k, v in inputs.items() if k != "rewards"}
                torch.manual_seed(seed)
                trl_seams.compute_loss(trainer, model, micro).backward()
            maxd, _, _, _, gmax = _grad_stats(whole, _grads(model))
            expected = lt not in PER_MICRO_BATCH
            rows.append(AccumulationRow(lt, steps, maxd, gmax, expected, _within(maxd, gmax, tolerance)))
        trainer.args.gradient_accumulation_steps = trainer.current_gradient_accumulation_steps = 1
        trainer.args.steps_per_generation = 1
    return rows


# --------------------------------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------------------------------
def _fmt(x: float, digits: int = 3) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "-"
    return f"{x:.{digits}e}" if (x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e4)) else f"{x:.{digits + 3}f}"


def render_table(result: LossParityResult):
    """A rich Table, components side by side."""
    from rich.table import Table

    t = Table(title=f"GRPO loss parity: reference vs TRL's loss ({result.seconds:.1f}s)")
    for c in ("loss_type", "beta", "variant", "policy (ref)", "KL term (ref)", "normaliser", "total ref",
              "total TRL", "|Δ loss|", "max |Δ grad|", "max |grad|", "grad norm ref/TRL", "cos", "ok"):
        t.add_column(c, justify="right" if c not in ("loss_type", "variant") else "left")
    for r in result.rows:
        ok = "[green]ok[/]" if r.passed else "[red]FAIL[/]"
        if r.variant:
            ok = "[yellow]differs[/]" if r.passed else "[red]same?[/]"
        t.add_row(r.loss_type, f"{r.beta:g}", r.variant or "(exact)", _fmt(r.policy_ref), _fmt(r.kl_ref),
                  f"{r.normalizer:g}", _fmt(r.total_ref), _fmt(r.total_trl), _fmt(r.loss_abs_diff),
                  _fmt(r.grad_max_abs_diff), _fmt(r.grad_max_abs), f"{r.grad_norm_ratio:.4f}", f"{r.grad_cosine:.6f}", ok)
    return t


def to_markdown(result: LossParityResult) -> str:
    cols = ["loss_type", "beta", "variant", "policy_ref", "kl_ref", "normalizer", "total_ref", "total_trl",
            "loss_abs_diff", "grad_max_abs_diff", "grad_max_abs", "grad_norm_ratio", "grad_cosine", "passed"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in result.rows:
        d = asdict(r)
        lines.append("| " + " | ".join(
            (_fmt(d[c]) if isinstance(d[c], float) and c != "beta" else str(d[c])) for c in cols) + " |")
    lines.append("")
    lines.append(f"Batch: {result.batch}")
    if result.accumulation:
        lines += ["", "Gradient accumulation (the same batch as micro-batches, vs one pass):", "",
                  "| loss_type | micro-batches | max abs grad diff | max abs grad | must agree | agrees |", "|---|---|---|---|---|---|"]
        for a in result.accumulation:
            lines.append(f"| {a.loss_type} | {a.steps} | {_fmt(a.grad_max_abs_diff)} | {_fmt(a.grad_max_abs)} | "
                         f"{'yes' if a.expected_equal else 'no (per micro-batch)'} | {a.passed} |")
    return "\n".join(lines)


def to_json(result: LossParityResult) -> dict:
    return {"rows": [asdict(r) for r in result.rows], "batch": result.batch, "seconds": result.seconds,
            "passed": result.passed, "metrics": result.metrics(),
            "accumulation": [asdict(a) for a in result.accumulation]}
