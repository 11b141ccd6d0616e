"""h06 LoRA weight sync: do the adapters train, does the generator use them, is the reference the base?

Adapters (every `every` steps, LoRA only): per LoRA module and adapter, ||A||, ||B|| and the effective
update ||scale * B @ A|| (computed as sqrt(trace((B^T B)(A A^T))), no d x d product); aggregated as
mean/min; `frozen_adapter_share` = share of adapters whose A and B are both bit-identical to train begin;
`zero_b_share` = share whose B is all zeros (the adapter has no effect at all); `step_change_mean` =
mean ||A - A_prev|| + ||B - B_prev|| since the previous report; `untrainable_adapter_share` = share of
adapters whose A or B does not require grad (the adapters can never move, whatever the advantages say: a
wiring bug, unlike adapters that stay put because every advantage is zero; an adapter the optimizer does
not hold is h25's, read by the optimizer_coverage hook).

`ref_equals_base` (every `every` steps): 1.0 when the weights the reference forward uses still equal the
base weights at train begin (per-tensor sums, exact): under LoRA with ref_model None the reference is
the adapter-disabled model, i.e. the non-adapter parameters, so this catches a base that is being
trained; with a ref_model it compares ref_model's parameters to the policy's initial (base) weights by
name. Without any reference (full fine-tuning, beta 0) neither key is logged: there is nothing to compare.

Generator vs trainer. On the transformers generation path the generator IS the trained model, so the
hook watches the generation itself: forward hooks on the causal LM see every decoding forward (a no-grad
forward with cache arguments and no labels) on rollouts it measures (every `every`-th). From them it records
- `gen_adapter_active_share`: share of LoRA layers whose adapter was active (enabled, not disabled) during
  generation (healthy 1.0; "adapters never reach the generator" gives 0.0),
- `gen_checksum_rel_diff`: checksum of the effective weights seen at generation (sum over LoRA layers of
  the entries of scale * B @ A when active, = (1^T B)(A 1), cheap; full fine-tuning: sum of all trainable
  parameters) vs the same checksum in the trainer's state right after generation,
- the generator's own logprob of every token it sampled (logits / temperature, as TRL scores them).
`logp_gap_mean`/`logp_gap_max` = |sampling logps - trainer logps| on loss-bearing tokens: TRL's
`sampling_per_token_logps` vs `old_per_token_logps` when vLLM provides them (`logp_gap_source` 1), else
the captured generator logps vs the trainer's logps (`old_per_token_logps`, or a trainer forward on
`sample_rows` rows) (`logp_gap_source` 2); `gen_token_match_share` checks the capture lined up with the
batch (tokens that do not match are not compared). At step 0 with fresh adapters B == 0, so a disabled
generator is invisible until the adapters move: read these after the first steps.

A generator that is a separate copy of the model (TRL's `use_vllm`, colocate mode) is read directly
(hooks/_generator.py): `gen_served` is 1 when the hook reads the weights vLLM serves, and
`gen_stale_weight_share` is the share of the tensors training has moved whose served copy is nearer their
starting values than the trainer's current ones (0: every sync arrived; 1: the generator never got an update),
on the second rollout (or the first after training moved a weight) and every `every` after. vLLM's own sampling
logprobs give `logp_gap_*` (source 1) as above.

Full fine-tuning: `lora_enabled`, the adapter keys and `gen_adapter_active_share` are not logged (there
are no adapters: a 0 would read like adapters switched off, and an arm's metrics list only what applies to
it); the checksum and gap keys work the same, since the generator's weights can lag the trainer's there too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch, StepContext

ADAPTER_KEYS = (
    "adapter_count", "a_norm_mean", "b_norm_mean", "b_norm_min", "delta_norm_mean", "delta_norm_min",
    "frozen_adapter_share", "zero_b_share", "step_change_mean", "untrainable_adapter_share",
)


def _norm_name(name: str) -> str:
    """Parameter name without peft wrapping: base_model.model.x.base_layer.weight -> x.weight."""
    for pre in ("base_model.model.", "module."):
        if name.startswith(pre):
            name = name[len(pre):]
    return name.replace(".base_layer.", ".")


class LoraSyncHook(DiagnosticHook):
    name = "lora_sync"
    description = (
        "h06: LoRA adapter norms and movement, reference == base, generator vs trainer weights and "
        "logprob gap"
    )
    metrics = (
        "lora_enabled", "adapter_count", "a_norm_mean", "b_norm_mean", "b_norm_min", "delta_norm_mean",
        "delta_norm_min", "frozen_adapter_share", "zero_b_share", "step_change_mean",
        "untrainable_adapter_share", "ref_equals_base", "ref_available", "gen_captured",
        "gen_adapter_active_share", "gen_checksum_rel_diff", "gen_token_match_share", "logp_gap_mean",
        "logp_gap_max", "logp_gap_source", "gen_served", "gen_stale_weight_share",
    )

    @dataclass(frozen=True)
    class Settings:
        every: int = 10
        """Capture a generation and report adapter norms every this many rollouts and steps."""
        sample_rows: int = 8
        """Rows re-scored by the trainer to compare with the generator's logprobs."""
        temperature: float | None = None
        """Temperature of the generator's logprobs; None: the trainer's own."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.every, self.sample_rows = max(int(self.config.every), 1), int(self.config.sample_rows)
        self.temperature = self.config.temperature
        self._model = None
        self._trainer = None
        self._handles: list[Any] = []
        self._init: dict[str, tuple[Any, Any]] = {}
        self._prev: dict[str, tuple[Any, Any]] = {}
        self._base_fp0: dict[str, float] = {}
        self._n_rollouts = 0
        self._n_steps = 0
        self._cap: dict[str, Any] | None = None  # capture of the current generation (cleared in on_rollout)
        self.lora = False
        self._adapter_cache: tuple[Any, list[Any]] | None = None
        self._fp_items: tuple[Any, bool, list[Any]] | None = None  # (model, skip_lora, [(name, param)]) for _fp
        self._generator: Any = None  # a separate generator hypotrack can read (hooks/_generator.py), or None
        self._served_start: dict[str, float] | None = None  # a separate generator's starting fingerprints
        self._served_read = False  # whether a stale share was read yet (nothing moved: no reading)

    # -- helpers ----------------------------------------------------------------------------------
    def _adapters(self):
        """(key, A weight, B weight, scale, layer, adapter name) for every LoRA module and adapter name.

        The module walk is done once per model (cached); the scale is read live."""
        cached = self._adapter_cache
        if cached is None or cached[0] is not self._model:
            from hypotrack.hooks._util import lora_layers, policy_adapters

            found = []
            policy = policy_adapters(self._model)  # walked at train begin, while the policy's adapters are on
            for lname, layer in lora_layers(self._model):
                for ad in layer.lora_A.keys():
                    if ad not in layer.lora_B or (policy is not None and ad not in policy):
                        continue
                    found.append((f"{lname}:{ad}", layer, ad))
            cached = self._adapter_cache = (self._model, found)
        for key, layer, ad in cached[1]:
            scale = float(layer.scaling.get(ad, 1.0)) if hasattr(layer, "scaling") else 1.0
            yield key, layer.lora_A[ad].weight, layer.lora_B[ad].weight, scale, layer, ad

    def _untrainable_share(self, ctx: StepContext) -> float:
        """The share of adapters whose A or B does not require grad (an adapter the optimizer does not hold is
        h25's reading, hooks/optimizer_coverage.py)."""
        adapters = [(A, B) for _, A, B, *_ in self._adapters()]
        if not adapters:
            return 0.0
        return sum(not (A.requires_grad and B.requires_grad) for A, B in adapters) / len(adapters)

    @staticmethod
    def _active(layer, ad) -> bool:
        if getattr(layer, "disable_adapters", False) or getattr(layer, "merged", False):
            return False  # merged counts via the base weights, disabled not at all
        act = getattr(layer, "active_adapters", None)
        return act is None or ad in act

    def _checksum(self, gen: bool) -> tuple[float, float]:
        """(checksum of effective weights, share of LoRA layers active)."""
        import torch

        from hypotrack.hooks._util import unwrap

        with torch.no_grad():
            if not self.lora:
                ps = [p.detach().float().sum() for p in unwrap(self._model).parameters() if p.requires_grad]
                return (float(torch.stack(ps).double().sum()) if ps else 0.0), 0.0
            n = 0
            act: list[tuple[float, Any, Any]] = []
            for _, A, B, s, layer, ad in self._adapters():
                n += 1
                if self._active(layer, ad):
                    act.append((s, A.detach(), B.detach()))
            if not act:
                return 0.0, 0.0
            # (1^T B)(A 1) per active adapter, batched over adapters of the same shapes, one read-back
            groups: dict[tuple, list[int]] = {}
            for i, (_, A, B) in enumerate(act):
                groups.setdefault((tuple(A.shape), tuple(B.shape), A.device, B.device), []).append(i)
            order: list[int] = []
            parts: list[Any] = []
            for idx in groups.values():
                As = torch.stack([act[i][1] for i in idx]).double()  # (k, r, in)
                Bs = torch.stack([act[i][2] for i in idx]).double()  # (k, out, r)
                parts.append((Bs.sum(1) * As.sum(2).to(Bs.device)).sum(1).cpu())  # (k,)
                order += idx
            vals = [0.0] * len(act)
            for i, v in zip(order, torch.cat(parts).tolist()):
                vals[i] = v
            tot = 0.0
            for (s, _, _), v in zip(act, vals):
                tot += s * v
            return tot, len(act) / n

    def _fp(self, model, skip_lora: bool) -> dict[str, float]:
        import torch

        from hypotrack.hooks._util import unwrap

        with torch.no_grad():
            cached = self._fp_items
            if cached is not None and cached[0] is model and cached[1] == skip_lora:
                items = cached[2]
            else:
                items = [
                    (_norm_name(n), p) for n, p in unwrap(model).named_parameters() if not (skip_lora and "lora_" in n)
                ]
                if model is self._model:  # the trained model's parameter list is walked once
                    self._fp_items = (model, skip_lora, items)
            if not items:
                return {}
            sums = torch.stack([p.detach().double().sum() for _, p in items]).cpu().tolist()
            return dict(zip([n for n, _ in items], sums))

    # -- generation capture -----------------------------------------------------------------------
    def _install(self, model) -> None:
        from hypotrack.hooks._util import unwrap

        m = unwrap(model)
        lm = m.get_base_model() if hasattr(m, "get_base_model") else m
        self._handles.append(lm.register_forward_pre_hook(self._pre, with_kwargs=True))
        self._handles.append(lm.register_forward_hook(self._post, with_kwargs=True))

    def close(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    def _is_gen(self, kwargs) -> bool:
        from hypotrack.hooks._util import is_generate_forward

        return self._cap is not None and is_generate_forward(kwargs)

    def _pre(self, module, args, kwargs):
        if not self._is_gen(kwargs):
            return None
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            return None
        from hypotrack.hooks._util import is_prefill

        cap = self._cap
        prefill = is_prefill(ids, kwargs, cap.get("width"))
        cap["width"] = ids.size(1)
        if prefill:  # a new generate call
            cap["calls"] += 1
            if cap["calls"] == 1:
                cap["checksum"], cap["active"] = self._checksum(gen=True)
                cap["rows"] = ids.size(0)
            cap["prev"] = None
            return None
        if cap["calls"] == 1 and cap["prev"] is not None:
            tok = ids[:, -1]
            cap["logps"].append(cap["prev"].gather(1, tok.unsqueeze(1)).squeeze(1))
            cap["toks"].append(tok.detach().clone())
        return None

    def _post(self, module, args, kwargs, output):
        import torch

        if not self._is_gen(kwargs) or self._cap["calls"] != 1:
            return None
        logits = getattr(output, "logits", None)
        if logits is None:
            return None
        t = self._temperature()
        self._cap["prev"] = torch.log_softmax(logits[:, -1, :].detach().float() / t, dim=-1)
        return None

    def _temperature(self) -> float:
        if self.temperature is not None:
            return float(self.temperature)
        return float(getattr(self._trainer, "temperature", 1.0) or 1.0)

    # -- events -----------------------------------------------------------------------------------
    def on_train_begin(self, ctx: StepContext) -> dict[str, float]:
        from hypotrack.hooks._util import is_peft

        self.close()
        self._model, self._trainer = ctx.model, ctx.trainer
        self._adapter_cache, self._fp_items = None, None
        self.lora = is_peft(ctx.model)
        self._init, self._prev = {}, {}
        for key, A, B, *_ in self._adapters() if self.lora else ():
            self._init[key] = (A.detach().clone(), B.detach().clone())
        self._prev = dict(self._init)
        self._base_fp0 = self._fp(ctx.model, skip_lora=True)
        from hypotrack.hooks._generator import fingerprints, served_generator, trainer_tensors

        self._generator = served_generator(ctx.trainer)
        self._served_start = (None if self._generator is None
                              else fingerprints(trainer_tensors(ctx.model), self._generator.dtype))
        self._served_read = False
        self._install(ctx.model)
        self._n_rollouts, self._n_steps = 0, 0
        self._arm()
        return {"lora_enabled": 1.0} if self.lora else {}

    def _arm(self) -> None:
        measured = self._n_rollouts % self.every == 0
        self._cap = {"calls": 0, "prev": None, "logps": [], "toks": [], "rows": 0} if measured else None

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        import torch

        from hypotrack.hooks._util import f, loss_bearing_mask, sampling_gap

        cap, self._cap = self._cap, None
        self._n_rollouts += 1
        out: dict[str, float] = self._served_reading()
        vllm_gap = sampling_gap(batch)
        if vllm_gap is None and (cap is None or self._model is None):
            self._arm()  # not a measured rollout and no sampling logps: nothing to compute
            return out
        try:
            mask = loss_bearing_mask(batch).bool()
            if vllm_gap is not None:
                out.update(logp_gap_mean=f(vllm_gap.mean()) if vllm_gap.numel() else 0.0,
                           logp_gap_max=f(vllm_gap.max()) if vllm_gap.numel() else 0.0)
                out["logp_gap_source"] = 1.0
            if cap is None or self._model is None:
                return out
            out["gen_captured"] = 1.0 if cap["calls"] >= 1 else 0.0
            if cap["calls"] < 1:
                return out  # the generator is not this model (vLLM / a copy): only TRL's sampling logps can tell
            now, _ = self._checksum(gen=False)
            out["gen_checksum_rel_diff"] = abs(cap["checksum"] - now) / (abs(now) + 1e-12) if cap["checksum"] != now else 0.0
            if self.lora:
                out["gen_adapter_active_share"] = cap["active"]
            if "logp_gap_source" in out or not cap["logps"] or cap["rows"] != batch.completion_ids.size(0):
                return out
            B, C = batch.completion_ids.shape
            n = min(len(cap["logps"]), C)
            glp = torch.stack(cap["logps"][:n], dim=1).to(mask.device)  # (B, n): logp of token t
            gtok = torch.stack(cap["toks"][:n], dim=1).to(mask.device)
            ids = batch.completion_ids[:, :n]
            ok = mask[:, :n] & (gtok == ids)
            out["gen_token_match_share"] = f(ok.sum() / mask[:, :n].sum().clamp(min=1))
            # Compare logprobs only on rows the trainer holds exactly as generated: on a shifted row
            # (tokens added in front, e.g. an echoed prompt) equal tokens sit in different contexts,
            # and their logprob difference says nothing about weight sync.
            row_ok = ((gtok == ids) | ~mask[:, :n]).all(dim=1)
            ok = ok & row_ok[:, None]
            if batch.old_per_token_logps is not None:
                trainer_lp, rows = batch.old_per_token_logps.detach().float()[:, :n], slice(None)
            else:
                from hypotrack.hooks._util import completion_logps, eval_mode, unwrap

                r = self.sample_rows
                rows = slice(0, r)
                with eval_mode(unwrap(self._model)):
                    trainer_lp = completion_logps(
                        self._model, batch.prompt_ids[:r], batch.prompt_mask[:r], batch.completion_ids[:r],
                        batch.completion_mask[:r], self._trainer, self._temperature(),
                    )[:, :n]
            d = (glp[rows] - trainer_lp.to(glp.device)).abs()[ok[rows]]
            out["logp_gap_mean"] = f(d.mean()) if d.numel() else 0.0
            out["logp_gap_max"] = f(d.max()) if d.numel() else 0.0
            out["logp_gap_source"] = 2.0
            return out
        finally:
            self._arm()

    def _served_reading(self) -> dict[str, float]:
        """A separate generator's weights against the trainer's, on the second rollout and every `every` after, and
        on every rollout until training has moved a weight (a first step whose groups all tied moves none)."""
        due = (self._n_rollouts - 1) % self.every == 1 % self.every
        waiting = self._n_rollouts >= 2 and not self._served_read
        if self._served_start is None or not (due or waiting):
            return {}
        from hypotrack.hooks._generator import stale_share

        share = stale_share(self._generator, self._served_start, self._model)
        if share is None:
            return {"gen_served": 1.0}
        self._served_read = True
        return {"gen_served": 1.0, "gen_stale_weight_share": share}

    def on_step_end(self, ctx: StepContext) -> dict[str, float]:
        import math

        import torch


        report = self._n_steps % self.every == 0
        self._n_steps += 1
        if not report or self._model is None:
            return {}
        out: dict[str, float] = {"lora_enabled": 1.0} if self.lora else {}
        # reference == base
        if ctx.ref_model is not None:
            ref_fp = self._fp(ctx.ref_model, skip_lora=True)
            same = all(ref_fp.get(k) == v for k, v in self._base_fp0.items() if k in ref_fp) and bool(
                set(ref_fp) & set(self._base_fp0)
            )
            out["ref_available"] = 1.0
        elif self.lora:
            now = self._fp(self._model, skip_lora=True)
            same = now == self._base_fp0
            out["ref_available"] = 1.0
        else:
            return out  # full fine-tuning without a KL term: there is no reference to compare
        out["ref_equals_base"] = 1.0 if same else 0.0
        if not self.lora:
            return out
        # per adapter: ||A||, ||B||, trace((B^T B)(A A^T)), moved since train begin, B all zero, ||A - A_prev||,
        # ||B - B_prev|| (NaN when there is no previous value), stacked and read back with one `.tolist()`
        rows, scales, keys = [], [], []
        nan = float("nan")
        with torch.no_grad():
            for key, A, B, s, _, _ in self._adapters():
                A_, B_ = A.detach().float(), B.detach().float()
                A0, B0 = self._init.get(key, (None, None))
                if A0 is None:
                    moved = torch.ones((), device=A_.device)
                elif A0.shape != A.shape or B0.shape != B.shape:
                    moved = torch.ones((), device=A_.device)
                else:
                    moved = ((A.detach() != A0).any() | (B.detach() != B0).any()).float()
                Ap, Bp = self._prev.get(key, (A0, B0))
                if Ap is not None:
                    ca, cb = (A_ - Ap.float()).norm(), (B_ - Bp.float()).norm()
                else:
                    ca = cb = torch.full((), nan, device=A_.device)
                rows.append(torch.stack([
                    A_.norm(), B_.norm(), torch.trace((B_.T @ B_) @ (A_ @ A_.T)), moved.to(A_.device),
                    (~B_.any()).float(), ca.to(A_.device), cb.to(A_.device),
                ]).cpu())
                scales.append(s)
                keys.append((key, Ap is not None))
                self._prev[key] = (A.detach().clone(), B.detach().clone())
        fin = lambda v: v if math.isfinite(v) else 0.0
        an, bn, dn, moved, zero_b, change = [], [], [], [], [], []
        for s, (_key, has_prev), r in zip(scales, keys, torch.stack(rows).tolist() if rows else []):
            an.append(fin(r[0]))
            bn.append(fin(r[1]))
            dn.append(abs(s) * math.sqrt(max(fin(r[2]), 0.0)))
            moved.append(bool(r[3]))
            zero_b.append(bool(r[4]))
            if has_prev:
                change.append(fin(r[5]) + fin(r[6]))
        n = len(an)
        mean = lambda xs: sum(xs) / len(xs) if xs else 0.0
        out.update(
            adapter_count=float(n),
            a_norm_mean=mean(an),
            b_norm_mean=mean(bn),
            b_norm_min=min(bn) if bn else 0.0,
            delta_norm_mean=mean(dn),
            delta_norm_min=min(dn) if dn else 0.0,
            frozen_adapter_share=(n - sum(moved)) / n if n else 0.0,
            untrainable_adapter_share=self._untrainable_share(ctx),
            zero_b_share=sum(zero_b) / n if n else 0.0,
            step_change_mean=mean(change),
        )
        return out
