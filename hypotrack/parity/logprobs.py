"""Logprob parity: the same completion tokens scored in different contexts.

One rollout is sampled (left-padded prompts, temperature 1, `output_logits=True`). Its completion
tokens are then re-scored in each context and compared token by token, on loss-bearing tokens only
(completion mask 1), with the BASE context: eval mode, no grad, fp32, CPU, the whole batch in TRL's
layout (left-padded prompt + right-padded completion), one plain forward + log_softmax + gather.

Contexts (each changes one thing):
  sampling            log_softmax of the raw logits `generate` returned while sampling (KV cache, incremental)
  grad_enabled        same forward with autograd on (seed 001's suspect; expected bitwise identical)
  train_mode          model.train() with the model's own dropout config (identical if it has no dropout)
  train_mode_dropout  model.train() after forcing attention_dropout=<dropout> (shows what dropout does)
  batch_of_one        each sequence alone, no padding
  right_padding       the whole batch right-padded instead of left-padded prompts
  trl_fused           TRL 1.16's production path: `add_fused_lm_head` + `model(..., labels, fused_lm_head=True)`
  bf16                the model in bfloat16 (CPU), logits cast to fp32 before log_softmax
  cuda_fp32/cuda_bf16 the model on CUDA (only when torch.cuda.is_available())

Per context: max and mean |Δ|, the share of bitwise-identical tokens, and the first differing tokens
with both values and their float32 bit patterns (`struct.pack('>f')` hex), as in seed 002.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import asdict, dataclass, field

from .common import default_prompts, hex32, load_model, load_tokenizer, sample_rollout, set_threads

CPU_CONTEXTS = ("sampling", "grad_enabled", "train_mode", "train_mode_dropout", "batch_of_one", "right_padding",
                "trl_fused", "bf16")
CUDA_CONTEXTS = ("cuda_fp32", "cuda_bf16")
ALL_CONTEXTS = CPU_CONTEXTS + CUDA_CONTEXTS
# fp32 contexts a correct pipeline must agree on (train_mode_dropout is a demonstration, bf16 is lossy)
FP32_MUST_AGREE = ("sampling", "grad_enabled", "train_mode", "batch_of_one", "right_padding", "trl_fused",
                   "cuda_fp32")
BF16_CONTEXTS = ("bf16", "cuda_bf16")
EXPECTED = {
    "sampling": "close", "grad_enabled": "identical", "train_mode": "identical if no dropout",
    "train_mode_dropout": "differs", "batch_of_one": "close", "right_padding": "close", "trl_fused": "close",
    "bf16": "~1e-2", "cuda_fp32": "close", "cuda_bf16": "~1e-2",
}


@dataclass
class TokenDiff:
    row: int
    pos: int
    token_id: int
    token: str
    base: float
    other: float
    base_hex: str
    other_hex: str
    delta: float


@dataclass
class ContextResult:
    context: str
    dtype: str
    device: str
    n_tokens: int
    max_abs_diff: float
    mean_abs_diff: float
    bitwise_identical_frac: float
    expected: str
    first_diffs: list[TokenDiff] = field(default_factory=list)
    seconds: float = 0.0
    skipped: str = ""


@dataclass
class LogprobParityResult:
    contexts: list[ContextResult]
    tolerance: float
    batch: dict = field(default_factory=dict)
    seconds: float = 0.0

    def _agg(self, names) -> float:
        vals = [c.max_abs_diff for c in self.contexts if c.context in names and not c.skipped]
        return max(vals) if vals else float("nan")

    @property
    def max_abs_diff_fp32(self) -> float:
        return self._agg(FP32_MUST_AGREE)

    @property
    def passed(self) -> bool:
        v = self.max_abs_diff_fp32
        return not math.isnan(v) and v <= self.tolerance

    def metrics(self) -> dict[str, float]:
        m: dict[str, float] = {}
        for c in self.contexts:
            if c.skipped:
                continue
            m[f"parity/logprobs/{c.context}/max_abs_diff"] = c.max_abs_diff
            m[f"parity/logprobs/{c.context}/mean_abs_diff"] = c.mean_abs_diff
            m[f"parity/logprobs/{c.context}/bitwise_identical_frac"] = c.bitwise_identical_frac
        m["parity/logprobs/max_abs_diff_fp32"] = self.max_abs_diff_fp32
        bf = self._agg(BF16_CONTEXTS)
        if not math.isnan(bf):
            m["parity/logprobs/max_abs_diff_bf16"] = bf
        m["parity/logprobs/passed"] = float(self.passed)
        m["parity/logprobs/n_tokens"] = float(self.batch.get("tokens", 0))
        m["parity/logprobs/seconds"] = self.seconds
        return m


# --------------------------------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------------------------------
def _score(model, input_ids, attention_mask, completion_ids):
    """Per-token logps (B, T) in fp32 from one forward: logits at t predict token t+1."""
    from hypotrack.grpo_math import token_logps

    T = completion_ids.size(1)
    return token_logps(model(input_ids=input_ids, attention_mask=attention_mask).logits[:, -T - 1 : -1, :], completion_ids)


def _to_device(model, device, dtype):
    m = copy.deepcopy(model)
    return m.to(device=device, dtype=dtype).eval()


def _compare(name, base, other, mask, comp_ids, tokenizer, first_k, dtype, device, seconds) -> ContextResult:
    import torch

    sel = mask.bool()
    b, o = base[sel], other.float().cpu()[sel]
    d = (b - o).abs()
    same = b.view(torch.int32) == o.view(torch.int32)
    diffs = []
    rows, cols = sel.nonzero(as_tuple=True)
    for k in (~same).nonzero(as_tuple=True)[0][:first_k].tolist():
        r, p = int(rows[k]), int(cols[k])
        tid = int(comp_ids[r, p])
        diffs.append(TokenDiff(r, p, tid, tokenizer.decode([tid]), float(b[k]), float(o[k]), hex32(b[k]),
                               hex32(o[k]), float(o[k] - b[k])))
    return ContextResult(name, dtype, device, int(sel.sum()), float(d.max()) if d.numel() else 0.0,
                         float(d.mean()) if d.numel() else 0.0, float(same.float().mean()) if d.numel() else 1.0,
                         EXPECTED.get(name, ""), diffs, seconds)


def run_logprob_parity(model_path: str, contexts=CPU_CONTEXTS + CUDA_CONTEXTS, seed: int = 0, num_prompts: int = 4,
                       num_generations: int = 2, max_new_tokens: int = 16, dropout: float = 0.1,
                       tolerance: float = 1e-5, first_k: int = 5, threads: int = 1,
                       prompts: list[str] | None = None) -> LogprobParityResult:
    """Score one sampled rollout in each context and compare it with the base context."""
    import torch

    set_threads(threads)
    t0 = time.perf_counter()
    unknown = [c for c in contexts if c not in ALL_CONTEXTS]
    if unknown:
        raise ValueError(f"unknown logprob contexts {unknown}; known: {ALL_CONTEXTS}")
    tok = load_tokenizer(model_path)
    model = load_model(model_path)
    prompts = (prompts or default_prompts(model_path, num_prompts, seed))[:num_prompts]
    p_ids, p_mask, c_ids, c_mask, gen = sample_rollout(model, tok, prompts, num_generations, max_new_tokens, seed)
    input_ids = torch.cat([p_ids, c_ids], 1)
    attn = torch.cat([p_mask, c_mask], 1)
    B, T = c_ids.shape
    with torch.no_grad():
        base = _score(model, input_ids, attn, c_ids)

    out: list[ContextResult] = []
    for name in contexts:
        ts = time.perf_counter()
        dtype, device = "fp32", "cpu"
        try:
            if name == "sampling":
                from hypotrack.grpo_math import token_logps

                other = token_logps(torch.stack(gen.logits, 1)[:, :T], c_ids)  # raw logits before sampling
            elif name == "grad_enabled":
                with torch.enable_grad():
                    other = _score(model, input_ids, attn, c_ids).detach()
            elif name == "train_mode":
                model.train()
                torch.manual_seed(seed)
                with torch.no_grad():
                    other = _score(model, input_ids, attn, c_ids)
                model.eval()
            elif name == "train_mode_dropout":
                m2 = load_model(model_path, attention_dropout=dropout).train()
                torch.manual_seed(seed)
                with torch.no_grad():
                    other = _score(m2, input_ids, attn, c_ids)
                del m2
            elif name == "batch_of_one":
                other = torch.zeros_like(base)
                with torch.no_grad():
                    for i in range(B):
                        keep_p = p_mask[i].bool()
                        L = int(c_mask[i].sum())
                        ids = torch.cat([p_ids[i][keep_p], c_ids[i, :L]]).unsqueeze(0)
                        lp = _score(model, ids, torch.ones_like(ids), c_ids[i : i + 1, :L])
                        other[i, :L] = lp[0]
            elif name == "right_padding":
                rows = [input_ids[i][attn[i].bool()] for i in range(B)]
                W = max(len(r) for r in rows)
                ids = torch.full((B, W), tok.pad_token_id, dtype=input_ids.dtype)
                am = torch.zeros((B, W), dtype=attn.dtype)
                other = torch.zeros_like(base)
                plen = p_mask.sum(1)
                for i, r in enumerate(rows):
                    ids[i, : len(r)] = r
                    am[i, : len(r)] = 1
                with torch.no_grad():
                    logits = model(input_ids=ids, attention_mask=am).logits.float()
                lsm = torch.log_softmax(logits, -1)
                for i in range(B):
                    L = int(c_mask[i].sum())
                    s = int(plen[i])
                    other[i, :L] = lsm[i, s - 1 : s - 1 + L].gather(-1, c_ids[i, :L].unsqueeze(-1)).squeeze(-1)
            elif name == "trl_fused":
                from trl.trainer.utils import add_fused_lm_head

                m2 = copy.deepcopy(model).eval()
                add_fused_lm_head(m2, temperature=1.0, outputs=("log_probs", "entropy"))
                labels = input_ids.masked_fill(attn == 0, -100)
                labels[:, :-T] = -100
                with torch.enable_grad():
                    other = m2(input_ids=input_ids, attention_mask=attn, labels=labels,
                               fused_lm_head=True).log_probs[:, -T:].detach()
                del m2
            elif name == "bf16":
                dtype = "bf16"
                m2 = _to_device(model, "cpu", torch.bfloat16)
                with torch.no_grad():
                    other = _score(m2, input_ids, attn, c_ids)
                del m2
            elif name in CUDA_CONTEXTS:
                device = "cuda"
                dtype = "fp32" if name == "cuda_fp32" else "bf16"
                if not torch.cuda.is_available():
                    out.append(ContextResult(name, dtype, device, 0, float("nan"), float("nan"), float("nan"),
                                             EXPECTED[name], skipped="no CUDA device"))
                    continue
                m2 = _to_device(model, "cuda", torch.float32 if dtype == "fp32" else torch.bfloat16)
                with torch.no_grad():
                    other = _score(m2, input_ids.cuda(), attn.cuda(), c_ids.cuda()).cpu()
                del m2
            else:  # pragma: no cover
                raise AssertionError(name)
        except Exception as e:  # noqa: BLE001 - a context that cannot run on this model is reported, not fatal
            out.append(ContextResult(name, dtype, device, 0, float("nan"), float("nan"), float("nan"),
                                     EXPECTED.get(name, ""), skipped=f"{type(e).__name__}: {e}"[:200]))
            continue
        out.append(_compare(name, base, other, c_mask, c_ids, tok, first_k, dtype, device,
                            time.perf_counter() - ts))
    batch = {"sequences": B, "completion_width": T, "tokens": int(c_mask.sum()), "prompt_width": p_ids.size(1),
             "model_dropout": getattr(model.config, "attention_dropout", None), "forced_dropout": dropout,
             "torch": torch.__version__}
    return LogprobParityResult(out, tolerance, batch, time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------------------------------
def render_table(result: LogprobParityResult):
    from rich.table import Table

    t = Table(title=f"Logprob parity vs base (eval, no-grad, fp32, CPU, full batch, left-padded) "
                    f"- {result.batch.get('tokens')} tokens, {result.seconds:.1f}s")
    for c in ("context", "dtype", "device", "expected", "max |Δ|", "mean |Δ|", "bitwise =", "first differing token "
              "(base -> other, hex)"):
        t.add_column(c)
    for c in result.contexts:
        if c.skipped:
            t.add_row(c.context, c.dtype, c.device, c.expected, "-", "-", "-", f"[dim]skipped: {c.skipped}[/]")
            continue
        fd = c.first_diffs[0] if c.first_diffs else None
        first = (f"[{fd.row},{fd.pos}] {fd.token!r}: {fd.base:.10f} [{fd.base_hex}] -> {fd.other:.10f} "
                 f"[{fd.other_hex}]") if fd else "[green]all bitwise identical[/]"
        t.add_row(c.context, c.dtype, c.device, c.expected, f"{c.max_abs_diff:.3e}", f"{c.mean_abs_diff:.3e}",
                  f"{100 * c.bitwise_identical_frac:.1f}%", first)
    return t


def render_token_details(result: LogprobParityResult) -> str:
    """Seed-002 style per-token listing of the first differing tokens of each context."""
    lines = []
    for c in result.contexts:
        if c.skipped:
            continue
        lines.append(f"== {c.context} ({c.dtype}, {c.device}): {c.n_tokens} tokens, "
                     f"bitwise identical {100 * c.bitwise_identical_frac:.1f}%, max |Δ| {c.max_abs_diff:.3e}")
        for d in c.first_diffs:
            lines.append(f"  token [{d.row},{d.pos}] id={d.token_id} {d.token!r} [✗]")
            lines.append(f"    base : {d.base: .10f}  [hex: {d.base_hex}]")
            lines.append(f"    {c.context:5s}: {d.other: .10f}  [hex: {d.other_hex}]")
            lines.append(f"    Δ    : {d.delta: .3e}")
    return "\n".join(lines)


def to_markdown(result: LogprobParityResult) -> str:
    lines = ["| context | dtype | device | expected | tokens | max_abs_diff | mean_abs_diff | bitwise_identical |",
             "|---|---|---|---|---|---|---|---|"]
    for c in result.contexts:
        if c.skipped:
            lines.append(f"| {c.context} | {c.dtype} | {c.device} | {c.expected} | - | - | - | skipped: {c.skipped} |")
        else:
            lines.append(f"| {c.context} | {c.dtype} | {c.device} | {c.expected} | {c.n_tokens} | "
                         f"{c.max_abs_diff:.3e} | {c.mean_abs_diff:.3e} | {100 * c.bitwise_identical_frac:.1f}% |")
    lines += ["", "```", render_token_details(result), "```"]
    return "\n".join(lines)


def to_json(result: LogprobParityResult) -> dict:
    return {"contexts": [asdict(c) for c in result.contexts], "tolerance": result.tolerance, "batch": result.batch,
            "seconds": result.seconds, "passed": result.passed, "metrics": result.metrics()}
