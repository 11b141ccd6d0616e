"""Gradient norms per layer and weight change since train begin (any hypothesis).

Gradients: `on_step_end` runs after optimizer.step (and possibly zero_grad), so the gradients are gone by
then. Instead `on_train_begin` registers a `register_post_accumulate_grad_hook` on every trainable
parameter: it fires after each backward once the gradient is accumulated into `.grad`, and stores that
parameter's grad norm as a 0-dim tensor (overwritten each time: the last write before the optimizer step
is the full accumulated, pre-clipping gradient, the same quantity TRL logs as `grad_norm`). No extra
trainer call is needed. The hooks only record on steps that will be reported (`every`).

Weights: a copy of the trainable parameters at train begin (`snapshot_device`, default "cpu" keeps it off
the accelerator; LoRA adapters are small, full fine-tuning doubles the trainable parameter memory there).
Every `every` steps: delta_norm = ||W - W0|| over all trainable tensors, delta_rel = delta_norm / ||W0||,
and the same per layer (layers = numbered transformer blocks, plus "embed" and "other").

Stable key set: totals, the max over layers, the first and last numbered layer, and embed.
"""
from __future__ import annotations

from typing import Any

from hypotrack.hooks.base import DiagnosticHook, StepContext


class WeightsHook(DiagnosticHook):
    name = "weights"

    def __init__(self, every: int = 1, snapshot_device: str = "cpu", **settings: Any) -> None:
        super().__init__(every=every, snapshot_device=snapshot_device, **settings)
        self.every = max(int(every), 1)
        self.snapshot_device = snapshot_device
        self._w0: dict[str, Any] = {}
        self._gnorm: dict[str, Any] = {}
        self._handles: list[Any] = []
        self._armed = True
        self._layer: dict[str, str] = {}
        self._n_steps = 0

    def _params(self, model):
        from hypotrack.hooks._util import unwrap

        return [(n, p) for n, p in unwrap(model).named_parameters() if p.requires_grad]

    def on_train_begin(self, ctx: StepContext) -> dict[str, float]:
        import torch

        from hypotrack.hooks._util import layer_of

        self.close()
        with torch.no_grad():
            for n, p in self._params(ctx.model):
                dev = p.device if self.snapshot_device in ("same", "") else self.snapshot_device
                self._w0[n] = p.detach().to(dev, copy=True)
                self._layer[n] = layer_of(n)
                if hasattr(p, "register_post_accumulate_grad_hook"):
                    self._handles.append(p.register_post_accumulate_grad_hook(self._grad_hook(n)))
        self._armed = True
        self._n_steps = 0
        return {}

    def _grad_hook(self, name: str):
        def hook(p):
            if self._armed and p.grad is not None:
                self._gnorm[name] = p.grad.detach().float().norm()

        return hook

    def close(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles, self._gnorm, self._w0 = [], {}, {}

    @staticmethod
    def _layer_keys(per_layer: dict[str, float], prefix: str) -> dict[str, float]:
        nums = sorted(int(k.split("_")[1]) for k in per_layer if k.startswith("layer_"))
        out = {
            f"{prefix}_max_layer": max(per_layer.values()) if per_layer else 0.0,
            f"{prefix}_layer_first": per_layer.get(f"layer_{nums[0]}", 0.0) if nums else 0.0,
            f"{prefix}_layer_last": per_layer.get(f"layer_{nums[-1]}", 0.0) if nums else 0.0,
            f"{prefix}_embed": per_layer.get("embed", 0.0),
        }
        return out

    def on_step_end(self, ctx: StepContext) -> dict[str, float]:
        import math

        import torch

        from hypotrack.hooks._util import f

        report = self._n_steps % self.every == 0
        self._n_steps += 1
        self._armed = self._n_steps % self.every == 0  # record grads for the next step only if it is reported
        if not report or not self._w0:
            self._gnorm = {}
            return {}
        out: dict[str, float] = {}
        # gradients
        g2: dict[str, float] = {}
        zero = 0
        names = list(self._gnorm)
        vals = torch.stack([self._gnorm[n] for n in names]).cpu().tolist() if names else []  # one sync
        norms = {n: (v if math.isfinite(v) else 0.0) for n, v in zip(names, vals)}
        for n, v in norms.items():
            g2[self._layer[n]] = g2.get(self._layer[n], 0.0) + v * v
            zero += v == 0.0
        per_layer = {k: math.sqrt(v) for k, v in g2.items()}
        out["grad_norm_total"] = math.sqrt(sum(g2.values()))
        out.update(self._layer_keys(per_layer, "grad_norm"))
        out["grad_zero_share"] = zero / len(self._w0) if norms else 1.0
        self._gnorm = {}
        # weight deltas
        d2: dict[str, float] = {}
        w2: dict[str, float] = {}
        with torch.no_grad():
            for n, p in self._params(ctx.model):
                w0 = self._w0.get(n)
                if w0 is None:
                    continue
                lay = self._layer[n]
                d = (p.detach().to(w0.device, torch.float32) - w0.float()).norm()
                d2[lay] = d2.get(lay, 0.0) + f(d) ** 2
                w2[lay] = w2.get(lay, 0.0) + f(w0.float().norm()) ** 2
        out["delta_norm"] = math.sqrt(sum(d2.values()))
        out["delta_rel"] = out["delta_norm"] / (math.sqrt(sum(w2.values())) + 1e-12)
        rel = {k: math.sqrt(d2[k]) / (math.sqrt(w2[k]) + 1e-12) for k in d2}
        out.update(self._layer_keys(rel, "delta_rel"))
        return out
