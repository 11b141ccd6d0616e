"""h26 updates too small to move the policy: how far the policy has moved from where it started, on a fixed probe.

A learning rate, a LoRA rank and alpha, or a step budget too small for the update to matter leaves a run whose
rewards vary within groups (the gradient has something to learn from), whose gradient norm looks healthy, and
whose policy hardly changes: the reward stays flat. TRL's own `kl` shows the drift only with a KL term, and
against a reference that may not be the starting policy. This hook measures it directly, on the starting
policy's own samples:

- At the first loss computation (before any optimizer step) it keeps `probe_rows` rows of that batch (prompt and
  completion token ids and the loss mask), and before the first optimizer step scores their completion tokens
  with the policy as it starts (eval mode, no dropout).
- Every `every` optimizer steps it scores the same tokens with the policy as it is now:
  - `logp_drift`: the mean |logp_now - logp_start| over the loss-bearing tokens, in nats per token. For a small
    change it is about sqrt(2 KL / pi) per token: 0.01 is a KL of about 1.6e-4 nats per token.
  - `kl_from_start`: the k3 estimate of KL(start || now) on the start's own samples, mean of r - 1 - log r with
    r = p_now / p_start (the estimator TRL logs as `kl`).
  - `steps_taken`: the optimizer steps behind the reading, so a short test run can be told from a long one.

The probe is a few rows of token ids kept on the model's device (no activations): memory stays flat. The cost is
one forward pass of `probe_rows` rows every `every` steps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, LossParts, StepContext


class PolicyDriftHook(DiagnosticHook):
    name = "policy_drift"
    description = ("h26: how far the policy's logprobs of its first samples moved from where they started "
                   "(mean |delta logp| and KL per token)")
    metrics = ("logp_drift", "kl_from_start", "steps_taken")

    @dataclass(frozen=True)
    class Settings:
        every: int = 5
        """Re-score the probe every this many optimizer steps (and at the last one)."""
        probe_rows: int = 8
        """Rows of the first batch kept as the probe."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.every, self.rows = max(int(self.config.every), 1), max(int(self.config.probe_rows), 1)
        self._probe: dict[str, Any] | None = None
        self._start: Any = None  # the starting policy's logprobs of the probe's completion tokens
        self._steps = 0

    def on_loss(self, parts: LossParts, step: int) -> dict[str, float]:
        if self._probe is None and parts.prompt_ids is not None and parts.completion_ids is not None:
            n = self.rows
            self._probe = {"prompt_ids": parts.prompt_ids[:n].detach().clone(),
                           "prompt_mask": parts.prompt_mask[:n].detach().clone(),
                           "completion_ids": parts.completion_ids[:n].detach().clone(),
                           "mask": parts.mask[:n].detach().bool().clone()}
        return {}

    def _score(self, ctx: StepContext) -> Any:
        from hypotrack.hooks._util import attention_through_last, completion_logps, eval_mode, unwrap

        p = self._probe
        with eval_mode(unwrap(ctx.model)):
            return completion_logps(ctx.model, p["prompt_ids"], p["prompt_mask"], p["completion_ids"],
                                    attention_through_last(p["mask"]), getattr(ctx, "trainer", None)).float()

    def on_before_optimizer_step(self, ctx: StepContext) -> dict[str, float]:
        if self._start is None and self._probe is not None and ctx.model is not None:
            self._start = self._score(ctx)
        return {}

    def on_step_end(self, ctx: StepContext) -> dict[str, float]:
        self._steps += 1
        if self._start is None or ctx.model is None:
            return {}
        trainer = getattr(ctx, "trainer", None)
        last = getattr(getattr(trainer, "state", None), "max_steps", 0) == ctx.step
        if self._steps % self.every and not last:
            return {}
        return self.reading(self._score(ctx))

    def reading(self, now: Any) -> dict[str, float]:
        from hypotrack.hooks._util import masked_mean

        start, mask = self._start.to(now.device), self._probe["mask"].to(now.device)
        delta = now - start
        return {"logp_drift": masked_mean(delta.abs(), mask),
                "kl_from_start": masked_mean(delta.exp() - delta - 1, mask),
                "steps_taken": float(self._steps)}
