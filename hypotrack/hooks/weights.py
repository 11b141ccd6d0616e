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

Per step (h16, a learning rate too high): step_delta_rel = ||W_t - W_prev|| / ||W_prev|| against a second
copy refreshed at each reported step (the same size as the first), and grad_clipped = 1 when the total
gradient norm exceeded the trainer's max_grad_norm, so its mean is the share of steps clipping rescaled.

Stable key set: totals, the max over layers, the first and last numbered layer, and embed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, StepContext

_CHUNK_NUMEL = 1 << 24  # elements per batched (foreach) delta computation: bounds the transient copy


class WeightsHook(DiagnosticHook):
    name = "weights"
    description = "any: per-layer gradient norms and weight change since train begin"
    metrics = (
        "grad_norm_total", "grad_norm_max_layer", "grad_norm_layer_first", "grad_norm_layer_last",
        "grad_norm_embed", "grad_zero_share", "delta_norm", "delta_rel", "delta_rel_max_layer",
        "delta_rel_layer_first", "delta_rel_layer_last", "delta_rel_embed", "step_delta_rel", "grad_clipped",
    )

    @dataclass(frozen=True)
    class Settings:
        every: int = 1
        """Report gradient norms and weight change every this many steps."""
        snapshot_device: str = "cpu"
        """Where the train-begin copy of the trainable weights lives ("cpu" keeps it off the accelerator)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.every = max(int(self.config.every), 1)
        self.snapshot_device = self.config.snapshot_device
        self._w0: dict[str, Any] = {}
        self._gnorm: dict[str, Any] = {}
        self._handles: list[Any] = []
        self._armed = True
        self._layer: dict[str, str] = {}
        self._n_steps = 0
        # cached at train begin: trainable (name, param) pairs, their snapshots, layer of each, ||W0||^2 per layer
        self._tracked: list[tuple[str, Any, Any]] = []
        self._prev: list[Any] = []  # the trainable tensors at the last reported step
        self._w2: dict[str, float] = {}
        self._pending: list[tuple[str, Any]] = []  # (name, param) whose grad arrived in the running backward
        self._flush_queued = False

    def _params(self, model):
        from hypotrack.hooks._util import unwrap

        return [(n, p) for n, p in unwrap(model).named_parameters() if p.requires_grad]

    def on_train_begin(self, ctx: StepContext) -> dict[str, float]:
        import math

        import torch

        from hypotrack.hooks._util import layer_of

        self.close()
        with torch.no_grad():
            for n, p in self._params(ctx.model):
                dev = p.device if self.snapshot_device in ("same", "") else self.snapshot_device
                self._w0[n] = p.detach().to(dev, copy=True)
                self._layer[n] = layer_of(n)
                self._tracked.append((n, p, self._w0[n]))
                if hasattr(p, "register_post_accumulate_grad_hook"):
                    self._handles.append(p.register_post_accumulate_grad_hook(self._grad_hook(n)))
            # ||W0|| never changes: its per-layer squares are computed once here
            w2: dict[str, float] = {}
            if self._tracked:
                norms = torch.stack([w.float().norm().cpu() for _, _, w in self._tracked]).tolist()
                for (n, _, _), v in zip(self._tracked, norms):
                    v = v if math.isfinite(v) else 0.0
                    w2[self._layer[n]] = w2.get(self._layer[n], 0.0) + v * v
            self._w2 = w2
            self._prev = [w.clone() for _, _, w in self._tracked]
        self._armed = True
        self._n_steps = 0
        return {}

    def _grad_hook(self, name: str):
        # The hook only notes the parameter; the norms of all gradients that arrived in this backward are computed
        # in one batched call (torch._foreach_norm) queued to run when the backward pass finishes, i.e. still
        # before any clipping or optimizer step, as the per-parameter norm was.
        def hook(p):
            if self._armed and p.grad is not None:
                self._pending.append((name, p))
                if not self._flush_queued:
                    try:
                        import torch

                        torch.autograd.Variable._execution_engine.queue_callback(self._flush)
                        self._flush_queued = True
                    except Exception:  # noqa: BLE001 - not inside the autograd engine: record right away
                        self._flush()

        return hook

    def _flush(self) -> None:
        import torch

        pending, self._pending, self._flush_queued = self._pending, [], False
        if not pending:
            return
        with torch.no_grad():
            grads = [p.grad.detach() for _, p in pending if p.grad is not None]
            names = [n for n, p in pending if p.grad is not None]
            if not grads:
                return
            if all(g.dtype == torch.float32 and not g.is_sparse for g in grads):
                norms = torch._foreach_norm(grads)
            else:
                norms = [g.float().norm() for g in grads]
            self._gnorm.update(zip(names, norms))

    def close(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles, self._gnorm, self._w0 = [], {}, {}
        self._tracked, self._w2, self._pending, self._flush_queued = [], {}, [], False
        self._prev = []

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

    def _delta_norms(self, reference: list[Any]) -> list[float]:
        """||W - reference|| per tracked tensor, batched: one foreach subtraction + norm per chunk, one read-back."""
        import torch

        with torch.no_grad():
            out: list[Any] = []
            chunk_p: list[Any] = []
            chunk_w: list[Any] = []
            size = 0

            def run():
                if chunk_p:
                    out.extend(torch._foreach_norm(torch._foreach_sub(chunk_p, chunk_w)))
                    chunk_p.clear()
                    chunk_w.clear()

            for (_, p, _), w0 in zip(self._tracked, reference):
                pp = p.detach()
                if pp.device != w0.device or pp.dtype != torch.float32:
                    pp = pp.to(w0.device, torch.float32)
                ww = w0 if w0.dtype == torch.float32 else w0.float()
                if pp.shape != ww.shape:  # the parameter was resized: fall back to the plain expression
                    run()
                    out.append((pp - ww).norm())
                    continue
                chunk_p.append(pp)
                chunk_w.append(ww)
                size += pp.numel()
                if size >= _CHUNK_NUMEL:
                    run()
                    size = 0
            run()
            if not out:
                return []
            devs = {t.device for t in out}
            if len(devs) > 1:
                out = [t.cpu() for t in out]
            return torch.stack(out).tolist()

    def on_step_end(self, ctx: StepContext) -> dict[str, float]:
        import math

        import torch

        report = self._n_steps % self.every == 0
        self._n_steps += 1
        self._armed = self._n_steps % self.every == 0  # record grads for the next step only if it is reported
        if self._pending:  # a backward whose end-of-pass callback did not run (defensive)
            self._flush()
        if not report or not self._w0:
            self._gnorm = {}
            return {}
        out: dict[str, float] = {}
        # gradients
        g2: dict[str, float] = {}
        zero = 0
        names = list(self._gnorm)
        vals = torch.stack([self._gnorm[n] for n in names]).cpu().tolist() if names else []  # one sync
        layer = self._layer
        for n, v in zip(names, vals):
            v = v if math.isfinite(v) else 0.0
            lay = layer[n]
            g2[lay] = g2.get(lay, 0.0) + v * v
            zero += v == 0.0
        per_layer = {k: math.sqrt(v) for k, v in g2.items()}
        out["grad_norm_total"] = math.sqrt(sum(g2.values()))
        out.update(self._layer_keys(per_layer, "grad_norm"))
        out["grad_zero_share"] = zero / len(self._w0) if names else 1.0
        self._gnorm = {}
        # weight deltas (||W0|| per layer was computed at train begin)
        d2: dict[str, float] = {}
        for (n, _, _), d in zip(self._tracked, self._delta_norms([w for _, _, w in self._tracked])):
            d = d if math.isfinite(d) else 0.0
            lay = layer[n]
            d2[lay] = d2.get(lay, 0.0) + d * d
        w2 = {k: self._w2.get(k, 0.0) for k in d2}
        out["delta_norm"] = math.sqrt(sum(d2.values()))
        out["delta_rel"] = out["delta_norm"] / (math.sqrt(sum(w2.values())) + 1e-12)
        rel = {k: math.sqrt(d2[k]) / (math.sqrt(w2[k]) + 1e-12) for k in d2}
        out.update(self._layer_keys(rel, "delta_rel"))
        out.update(self._step_change(ctx, out["grad_norm_total"]))
        return out

    def _step_change(self, ctx: StepContext, grad_norm: float) -> dict[str, float]:
        import math

        import torch

        steps = self._delta_norms(self._prev)
        prev2 = torch.stack([w.float().norm() ** 2 for w in self._prev]).sum().item() if self._prev else 0.0
        with torch.no_grad():
            for (_, p, _), w in zip(self._tracked, self._prev):
                w.copy_(p.detach())
        out = {"step_delta_rel": math.sqrt(sum(d * d for d in steps if math.isfinite(d))) / (math.sqrt(prev2) + 1e-12)}
        max_norm = getattr(getattr(ctx.trainer, "args", None), "max_grad_norm", None)
        if max_norm and max_norm > 0 and math.isfinite(grad_norm):
            out["grad_clipped"] = float(grad_norm > max_norm)
        return out
