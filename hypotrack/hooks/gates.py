"""Live invariant gates: identities a healthy GRPO run holds in its first steps, each pointing at a hypothesis.

Checked during the first ``steps`` optimizer steps (and the rollout after the last of them), then the
gates detach, so they cost nothing for the rest of the run:

- ``ratio`` (h08): where TRL recomputes the old policy's logprobs (num_iterations > 1, or more
  generation steps than accumulation steps), a batch's first pass, before any optimizer step on it,
  scores with the same weights: policy/old ratio exactly 1 (max |logp - old logp| within ``logp_tol``).
  Otherwise the two passes compute logprobs differently (dropout left on, another model mode, batch-
  dependent numerics).
- ``ref_kl`` (h18): with a KL term, the reference is the initial policy, so before the first optimizer
  step the reference's logprobs equal the policy's (the KL is 0). A reference loaded from another
  checkpoint, or the base model under a trained adapter, breaks it.
- ``grad`` (h19): whenever some group's rewards differ, the advantages are not all zero, the gradient
  norm is above 0 and it reaches most trainable weights. A zero gradient means the loss never reaches the
  trained weights (checkpointed layers whose inputs do not require grad; adapters that do not require
  grad; a loss mask that removes every completion token, h02's); half or more of the weights without any
  gradient means the backward pass stops before them (a head outside checkpointed layers still trains).
- ``moved`` (h25): every trainable weight that got a gradient changes at the optimizer step. One that does not
  is missing from the optimizer (built from the model's parameters before the LoRA adapters were added).
- ``parity`` (h14): the generator's logprobs of the tokens it sampled (after temperature, top-k/p, ...)
  match the scoring logprobs the loss uses (mean gap within ``parity_gap`` nats).
- ``lora`` (h06): with LoRA, the rollout after an optimizer step comes from the trained adapters (the
  generator ran with them on, and with the trainer's adapter weights).

A failed gate is a `GateFailure` with the numbers; `hypotrack.watch` warns once per gate and can stop
training on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, LossParts, RolloutBatch, StepContext
from hypotrack.thresholds import NO_GRAD_SHARE, UNMOVED_SHARE


@dataclass(frozen=True)
class GateFailure:
    gate: str
    hypothesis: str
    step: int  # the training step (1-based, as TRL logs it) during which the gate failed
    message: str

    def __str__(self) -> str:
        return f"gate {self.gate} failed at step {self.step} (points to {self.hypothesis}): {self.message}"


# Each gate and the hypothesis its failure points to.
GATE_HYPOTHESES = {"ratio": "h08", "ref_kl": "h18", "grad": "h19", "moved": "h25", "parity": "h14", "lora": "h06"}
GATE_NAMES = tuple(GATE_HYPOTHESES)


class GatesHook(DiagnosticHook):
    name = "gates"
    description = ("live invariant gates in the first steps: first-pass ratio 1 (h08), KL 0 to an initial-policy "
                   "reference (h18), gradient with reward variance (h19), weights with a gradient move (h25), "
                   "sampling/scoring parity (h14), LoRA adapters in the generator (h06)")
    metrics = (
        "ratio_logp_max_diff", "ref_logp_max_diff", "ref_logp_max_diff_eval", "ref_kl_mean", "grad_norm", "group_variance",
        "unmoved_share",
        "sampling_gap_mean", "lora_gen_adapter_active_share", "lora_gen_checksum_rel_diff", "failed",
        "stopped",  # logged by watch's session when stop_on ends the run (watch/session.py)
    )

    @dataclass(frozen=True)
    class Settings:
        steps: int = 2
        """Optimizer steps during which the gates check (the rollout after the last one included)."""
        logp_tol: float = 1e-3
        """Largest per-token logprob difference still counted as equal (ratio and reference gates)."""
        parity_gap: float = 0.01
        """Largest mean gap (nats per token) between sampling and scoring logprobs."""
        adapter_checksum_tol: float = 1e-3
        """Largest relative difference between the generator's and the trainer's adapter weights."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.failures: list[GateFailure] = []
        self.checked: set[str] = set()  # the gates that read their invariant at least once (silent ones held)
        self._optimizer_steps = 0
        self._fresh = False  # a rollout arrived and no optimizer step has used it yet
        self._variance = False
        self._moving: list[Any] = []  # the weights that got a gradient at this step, and their values before it
        self._before: Any = None
        self._peft = False
        self._inner: list[DiagnosticHook] = []
        self.active = True

    # ----------------------------------------------------------------- bookkeeping

    def _fail(self, gate: str, hypothesis: str, step: int, message: str) -> None:
        if not any(f.gate == gate for f in self.failures):
            self.failures.append(GateFailure(gate, hypothesis, step, message))

    def _detach(self) -> None:
        for hook in self._inner:
            hook.close()
        self._inner, self.active = [], False

    def close(self) -> None:
        self._detach()

    # ----------------------------------------------------------------- events

    def on_train_begin(self, ctx: StepContext) -> dict[str, float]:
        from hypotrack.hooks._util import is_peft
        from hypotrack.hooks.lora_sync import LoraSyncHook
        from hypotrack.hooks.sampling_parity import SamplingParityHook

        self._peft = is_peft(ctx.model)
        self._ctx = ctx  # the reference is scored again through it when the first step's logprobs disagree
        # the two generator-side gates read what these hooks tap from generate; they run every rollout here
        self._parity = SamplingParityHook(every=1)
        self._lora = LoraSyncHook(every=1, sample_rows=4) if self._peft else None
        self._inner = [h for h in (self._parity, self._lora) if h is not None]
        for hook in self._inner:
            hook.on_train_begin(ctx)
        return {}

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        if not self.active:
            return {}
        out: dict[str, float] = {}
        self._fresh = True
        from hypotrack.hooks._util import some_group_varies

        self._variance = some_group_varies(batch)
        out["group_variance"] = float(self._variance)
        parity = self._parity.on_rollout(batch, step)
        if "transform_gap_mean" in parity:
            gap = parity["transform_gap_mean"]
            out["sampling_gap_mean"] = gap
            self.checked.add("parity")
            if gap > self.config.parity_gap:
                self._fail("parity", "h14", step + 1,
                           f"the generator's logprobs of its sampled tokens differ from the scoring logprobs by "
                           f"{gap:.4g} nats per token on average (max {parity['transform_gap_max']:.4g}); sampling "
                           f"temperature {parity['sampling_temperature']:g}, scoring temperature "
                           f"{parity['scoring_temperature']:g}")
        if self._lora is not None:
            lora = self._lora.on_rollout(batch, step)
            active, drift = lora.get("gen_adapter_active_share"), lora.get("gen_checksum_rel_diff")
            if active is not None:
                out["lora_gen_adapter_active_share"] = active
            if drift is not None:
                out["lora_gen_checksum_rel_diff"] = drift
            if self._optimizer_steps >= 1 and active is not None and drift is not None:
                self.checked.add("lora")
            if self._optimizer_steps >= 1 and active is not None and drift is not None and (
                    active < 0.99 or drift > self.config.adapter_checksum_tol):
                self._fail("lora", "h06", step + 1,
                           f"after {self._optimizer_steps} optimizer step(s) the generator ran with "
                           f"{active:.0%} of the LoRA adapters active and adapter weights {drift:.3g} (relative) "
                           "away from the trainer's: the trained adapters do not reach generation")
        if self._optimizer_steps >= self.config.steps:
            self._detach()  # the rollout after the last gated optimizer step was the lora gate's last look
        return out

    def on_loss(self, parts: LossParts, step: int) -> dict[str, float]:
        if not self.active:
            return {}
        from hypotrack.hooks._util import masked_max, masked_mean

        out: dict[str, float] = {}
        policy = parts.per_token_logps.detach().float()
        if parts.old_recomputed and self._fresh:
            diff = masked_max((policy - parts.old_per_token_logps.float()).abs(), parts.mask)
            out["ratio_logp_max_diff"] = diff
            self.checked.add("ratio")
            if diff > self.config.logp_tol:
                self._fail("ratio", "h08", step + 1,
                           f"on the first pass over a fresh batch the policy/old-policy ratio should be exactly 1, "
                           f"but the logprobs differ by up to {diff:.4g} (tolerance {self.config.logp_tol:g}): the "
                           "old logprobs were computed differently (dropout on, another mode or model)")
        if parts.ref_per_token_logps is not None and self._optimizer_steps == 0:
            delta = parts.ref_per_token_logps.float() - policy
            diff = masked_max(delta.abs(), parts.mask)
            kl = masked_mean(delta.exp() - delta - 1, parts.mask)
            out.update(ref_logp_max_diff=diff, ref_kl_mean=kl)
            self.checked.add("ref_kl")
            if diff > self.config.logp_tol:
                without_dropout = self._reference_gap_without_dropout(parts)
                if without_dropout is not None:
                    out["ref_logp_max_diff_eval"] = without_dropout
                if without_dropout is None or without_dropout > self.config.logp_tol:
                    self._fail("ref_kl", "h18", step + 1,
                               f"before any optimizer step the reference's logprobs differ from the policy's by up "
                               f"to {diff:.4g} (k3 KL {kl:.4g} per token, tolerance {self.config.logp_tol:g}"
                               + (f"; {without_dropout:.4g} with dropout off" if without_dropout is not None else "")
                               + "): the reference is not the initial policy")
        return out

    def _reference_gap_without_dropout(self, parts: LossParts, rows: int = 8) -> float | None:
        """The largest |policy - reference| logprob gap on a few rows, both scored again in eval mode; None when
        there is no reference to score. The training passes run with dropout (a LoRA adapter's lora_dropout, an
        attention dropout), so their logprobs differ from a same-weights reference by the masks alone: a gap that
        vanishes with dropout off is that noise, not another reference."""
        from hypotrack.hooks._util import completion_logps, eval_mode, masked_max, reference_pass, unwrap

        ctx = getattr(self, "_ctx", None)
        trainer = getattr(ctx, "trainer", None)
        if ctx is None or parts.prompt_ids is None or parts.completion_ids is None:
            return None
        model = trainer.model if trainer is not None else ctx.model
        found = reference_pass(model, getattr(trainer, "ref_model", ctx.ref_model))
        if found is None:
            return None
        scored, reference = found
        args = (parts.prompt_ids[:rows], parts.prompt_mask[:rows], parts.completion_ids[:rows],
                parts.mask[:rows].long())
        with eval_mode(unwrap(model)):
            policy = completion_logps(model, *args, trainer)
        with eval_mode(unwrap(scored)), reference:
            ref = completion_logps(scored, *args, trainer)
        return masked_max((ref.float() - policy.float()).abs(), parts.mask[:rows])

    def on_before_optimizer_step(self, ctx: StepContext) -> dict[str, float]:
        if not self.active:
            return {}
        from hypotrack.hooks._util import gradient_reach, trained_parameters

        # transformers clips before this event: the norm is the one the optimizer applies (0 stays 0)
        share, norm = gradient_reach(trained_parameters(ctx))
        if self._variance:
            self.checked.add("grad")
        if self._variance and not norm > 0.0:
            where = ("no trained adapter received a gradient (checkpointed layers whose inputs do not require "
                     "grad; adapters the optimizer does not update, such as B matrices frozen at zero, which also "
                     "leave the A matrices without a gradient)" if self._peft else
                     "the loss does not reach the weights (checkpointed layers whose inputs do not require grad; "
                     "every loss token masked?)")
            self._fail("grad", "h19", ctx.step + 1,
                       f"some groups' rewards differ but the gradient norm is {norm:g}: {where}")
        elif self._variance and share >= NO_GRAD_SHARE:
            self._fail("grad", "h19", ctx.step + 1,
                       f"some groups' rewards differ but {share:.1%} of the trainable weights got no gradient (the "
                       f"norm, {norm:.4g}, is the rest's): the backward pass stops before them (checkpointed layers "
                       "whose inputs do not require grad?)")
        self._fresh = False
        self._optimizer_steps += 1
        if not any(f.gate == "grad" for f in self.failures):
            # weights the optimizer does not hold (h25) are read only where the weights it holds got a gradient:
            # a gradient that reaches none of them is the grad gate's finding (h19), one reading for one cause
            from hypotrack.hooks._util import fingerprints, optimizer_coverage, with_gradient

            self._moving = with_gradient(optimizer_coverage(ctx)[1])
            self._before = fingerprints(self._moving)
        return {"grad_norm": norm}

    def on_step_end(self, ctx: StepContext) -> dict[str, float]:
        if not self.active:
            return {}
        out: dict[str, float] = {}
        if self._before is not None:
            from hypotrack.hooks._util import unmoved_share

            share = unmoved_share(self._moving, self._before)
            if self._moving:
                self.checked.add("moved")
            self._moving, self._before = [], None
            out["unmoved_share"] = share
            if share >= UNMOVED_SHARE:
                self._fail("moved", "h25", ctx.step,
                           f"{share:.1%} of the trainable weights that got a gradient did not change at the optimizer "
                           "step: the optimizer does not hold them (built from the model's parameters before the LoRA "
                           "adapters were added?)")
        return {**out, "failed": float(len(self.failures))}
