"""h02 token masking: which tokens actually carry loss.

Loss-bearing = completion_mask (x tool_mask when present): exactly the `mask` of TRL's loss.
Every loss-bearing token gets one category, first match wins:

- prompt: the token is prompt text inside the completion. Two sources: the lab's oracle
  `extra_masks["prompt_in_loss"] == 1`, and a detector that needs no oracle: the completion starts with a
  copy of the end of the prompt (a mask/concat bug, such as `return_full_text`, that hands the prompt
  back as completion tokens). To count, the echo must cover at least `echo_fraction` (0.5) of the
  prompt's text tokens and at least `min_prompt_echo` (8) of them, or the whole prompt when it is
  shorter than that (special tokens such as bos are not text). A policy that happens to begin with a few
  words of its question is not flagged; see `echo_length`.
- environment: `tool_mask == 0` or `extra_masks["environment_mask"] == 1` (tool/env output the policy
  did not write).
- padding: positions after the row's first eos, or tokens equal to pad_token_id (when pad != eos).
- completion: everything else (healthy: completion_share == 1.0).

pad/eos confusion: when pad_token_id == eos_token_id, code that masks `ids != pad_id` also masks the
real eos, so the model never learns to stop. `eos_masked_share` = share of eos-terminated completions
whose first eos does not carry loss (TRL keeps it: healthy 0.0).

`loss_padding_share` (from on_loss) checks the mask the loss really used (LossParts.mask) for
padding, independently of the rollout batch.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, LossParts, RolloutBatch

CATS = ("prompt", "environment", "padding", "completion")
_COLORS = {"prompt": "#f4a6a6", "environment": "#f7d78a", "padding": "#c9c9c9", "completion": "#a8e6a3"}


def special_ids(tokenizer: Any) -> set[int]:
    tok = getattr(tokenizer, "tokenizer", tokenizer)  # processors wrap the tokenizer
    return set(getattr(tok, "all_special_ids", None) or [])


def _tok_strings(tokenizer: Any, ids: list[int]) -> list[str]:
    tok = getattr(tokenizer, "tokenizer", tokenizer)  # processors wrap the tokenizer
    if tok is not None and hasattr(tok, "convert_ids_to_tokens"):
        try:
            return [str(t) for t in tok.convert_ids_to_tokens(ids)]
        except Exception:  # noqa: BLE001 - a sample is best effort
            pass
    return [f"<{i}>" for i in ids]


def echo_length(prompt: list[int], completion: list[int], min_echo: int = 8, fraction: float = 0.5) -> int:
    """Length of the prompt suffix the completion starts with, if long enough to be an echo, else 0.

    ``prompt`` holds the prompt's text tokens (no padding, no special tokens). Long enough: at least
    ``fraction`` of the prompt and ``min_echo`` tokens, or the whole prompt when it is shorter than
    ``min_echo`` tokens. A bug that hands the prompt back echoes all of it; the policy starting with a
    phrase of its question echoes a small part.
    """
    length = len(prompt)
    if not length or not completion:
        return 0
    needed = min(length, max(min_echo, math.ceil(fraction * length)))
    first = completion[0]
    # candidates: an echo of length k starts at prompt index length-k, so prompt[length-k] == completion[0]
    for k in range(min(length, len(completion)), needed - 1, -1):
        if prompt[length - k] == first and prompt[length - k:] == completion[:k]:
            return k
    return 0


def echoed_prompt_mask(prompt_ids, prompt_mask, completion_ids, special_ids: set[int], min_echo: int = 8,
                       fraction: float = 0.5):
    """(B, C) bool: the completion tokens that are an echo of the prompt (see `echo_length`)."""
    import torch

    lengths = []
    for p, m, c in zip(prompt_ids.tolist(), prompt_mask.tolist(), completion_ids.tolist()):
        text = [t for t, keep in zip(p, m) if keep and t not in special_ids]
        lengths.append(echo_length(text, c, min_echo, fraction))
    positions = torch.arange(completion_ids.size(1), device=completion_ids.device)
    return positions.unsqueeze(0) < torch.tensor(lengths, device=completion_ids.device).unsqueeze(1)


class TokenMaskingHook(DiagnosticHook):
    name = "token_masking"
    description = (
        "h02: share of loss-bearing tokens that are prompt / environment / padding / completion, eos "
        "masking, HTML samples"
    )
    metrics = (
        "prompt_share", "environment_share", "padding_share", "completion_share", "loss_tokens_per_row",
        "eos_masked_share", "pad_eos_same", "echo_row_share", "loss_padding_share",
    )

    @dataclass(frozen=True)
    class Settings:
        min_prompt_echo: int = 8
        """Shortest run of prompt tokens repeated in a completion that counts as an echo."""
        echo_fraction: float = 0.5
        """Share of the prompt an echo must repeat (whichever of the two is longer applies)."""
        n_samples: int = 3
        """Rows rendered per sampled rollout in the HTML artifact."""
        sample_every: int = 50
        """Render samples every this many rollouts."""
        max_samples: int = 12
        """Most rendered rows kept over the run."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        c = self.config
        self.min_prompt_echo = int(c.min_prompt_echo)
        self.echo_fraction = float(c.echo_fraction)
        self.n_samples, self.sample_every, self.max_samples = int(c.n_samples), int(c.sample_every), int(c.max_samples)
        self.samples: list[dict[str, Any]] = []  # small: token strings + categories, capped
        self._n_rollouts = 0
        self._pad_id: int | None = None
        self._echo_rows = 0.0
        self._eos_id: int | None = None

    # -- categories -------------------------------------------------------------------------------
    def categorize(self, batch: RolloutBatch):
        """(loss mask (B,C) bool, category codes (B,C) long: index into CATS)."""
        import torch

        ids = batch.completion_ids.detach().cpu()
        cmask = batch.completion_mask.detach().cpu().bool()
        loss = cmask & (batch.tool_mask.detach().cpu().bool() if batch.tool_mask is not None else True)
        B, C = ids.shape
        pos = torch.arange(C).expand(B, C)
        prompt = torch.zeros(B, C, dtype=torch.bool)
        if "prompt_in_loss" in batch.extra_masks:
            prompt |= batch.extra_masks["prompt_in_loss"].detach().cpu().bool()
        echoed = echoed_prompt_mask(batch.prompt_ids.detach().cpu(), batch.prompt_mask.detach().cpu(), ids,
                                    special_ids(batch.tokenizer), self.min_prompt_echo, self.echo_fraction)
        prompt |= echoed
        echo = echoed.sum(dim=1)
        self._echo_rows = float((echo > 0).float().mean()) if B else 0.0
        env = torch.zeros(B, C, dtype=torch.bool)
        if batch.tool_mask is not None:
            env |= ~batch.tool_mask.detach().cpu().bool()
        if "environment_mask" in batch.extra_masks:
            env |= batch.extra_masks["environment_mask"].detach().cpu().bool()
        pad = torch.zeros(B, C, dtype=torch.bool)
        eos_idx = torch.full((B,), C, dtype=torch.long)
        if batch.eos_token_id is not None:
            is_eos = ids == int(batch.eos_token_id)
            # the first eos after any echoed prompt prefix (the prompt may contain eos-free text only, but be safe)
            is_eos &= pos >= echo.unsqueeze(1)
            has = is_eos.any(dim=1)
            eos_idx[has] = is_eos.int().argmax(dim=1)[has]
            pad |= pos > eos_idx.unsqueeze(1)
        if batch.pad_token_id is not None and batch.pad_token_id != batch.eos_token_id:
            pad |= ids == int(batch.pad_token_id)
        cat = torch.full((B, C), 3, dtype=torch.long)
        cat[pad] = 2
        cat[env] = 1
        cat[prompt] = 0
        return loss, cat, eos_idx

    # -- events -----------------------------------------------------------------------------------
    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        import torch


        self._pad_id, self._eos_id = batch.pad_token_id, batch.eos_token_id
        loss, cat, eos_idx = self.categorize(batch)
        B, C = loss.shape
        # category counts among loss-bearing tokens, loss tokens per row, masked first eos: one read-back
        counts = torch.bincount(cat[loss], minlength=len(CATS))[: len(CATS)].float()
        has_eos = eos_idx < C
        eos_loss = loss.gather(1, eos_idx.clamp(max=max(C - 1, 0)).unsqueeze(1)).squeeze(1) if C else has_eos
        eos_masked = (has_eos & ~eos_loss).sum().float()
        stats = torch.cat([counts, torch.stack([
            loss.sum(dim=1).float().mean() if B else torch.tensor(float("nan")), has_eos.sum().float(), eos_masked,
        ])]).tolist()
        fin = lambda v: v if math.isfinite(v) else 0.0  # what f() does to one value
        n = max(sum(stats[: len(CATS)]), 1.0)
        out = {f"{c}_share": fin(stats[i] / n) for i, c in enumerate(CATS)}
        if stats[: len(CATS)] == [0.0] * len(CATS):
            out["completion_share"] = 0.0
        out["loss_tokens_per_row"] = fin(stats[len(CATS)])
        n_eos = stats[len(CATS) + 1]
        out["eos_masked_share"] = fin(stats[len(CATS) + 2] / n_eos) if n_eos else 0.0
        same = batch.pad_token_id is not None and batch.pad_token_id == batch.eos_token_id
        out["pad_eos_same"] = 1.0 if same else 0.0
        out["echo_row_share"] = self._echo_rows
        if self._n_rollouts % max(self.sample_every, 1) == 0 and len(self.samples) < self.max_samples:
            self._keep_samples(batch, loss, cat, step)
        self._n_rollouts += 1
        return out

    def on_loss(self, parts: LossParts, step: int) -> dict[str, float]:
        """Padding inside the mask the loss really used (a fault between rollout and loss shows up here)."""
        import torch

        from hypotrack.hooks._util import f

        if parts.completion_ids is None:
            return {}
        ids = parts.completion_ids.detach()
        mask = parts.mask.detach().bool()
        B, C = ids.shape
        pad = torch.zeros_like(mask)
        if self._eos_id is not None:
            is_eos = ids == int(self._eos_id)
            first = torch.where(is_eos.any(1), is_eos.int().argmax(1), torch.full((B,), C, device=ids.device))
            pad |= torch.arange(C, device=ids.device).expand(B, C) > first.unsqueeze(1)
        if self._pad_id is not None and self._pad_id != self._eos_id:
            pad |= ids == int(self._pad_id)
        return {"loss_padding_share": f((pad & mask).sum() / mask.sum().clamp(min=1))}

    # -- artifacts --------------------------------------------------------------------------------
    def _keep_samples(self, batch: RolloutBatch, loss, cat, step: int) -> None:
        for i in range(min(self.n_samples, loss.size(0), self.max_samples - len(self.samples))):
            pm = batch.prompt_mask[i].detach().cpu().bool()
            p_ids = batch.prompt_ids[i].detach().cpu()[pm].tolist()
            c_ids = batch.completion_ids[i].detach().cpu().tolist()
            self.samples.append(
                {
                    "step": int(step),
                    "row": i,
                    "prompt": _tok_strings(batch.tokenizer, p_ids),
                    "completion": _tok_strings(batch.tokenizer, c_ids),
                    "loss": loss[i].tolist(),
                    "cat": [CATS[j] for j in cat[i].tolist()],
                }
            )

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / "token_masking_samples.html"
        esc = lambda s: html.escape(s, quote=True).replace("\n", "&#8629;<br>")
        parts = [
            "<!doctype html><html><head><meta charset='utf-8'><title>token masking samples</title><style>",
            "body{font-family:sans-serif}.t{font-family:monospace;white-space:pre-wrap;border:1px solid #ddd;"
            "padding:6px;margin-bottom:14px;line-height:1.7}.p{color:#777}.nl{opacity:.45}"
            "span.k{border-bottom:2px solid #000}",
            "".join(f".{c}{{background:{col}}}" for c, col in _COLORS.items()),
            "</style></head><body><h1>Which tokens carry loss</h1>",
            "<p>Grey text: prompt (never trained). Completion tokens: <b>underlined and coloured</b> = loss-bearing, "
            "coloured by what the token is: "
            + " ".join(f"<span class='{c}'>{c}</span>" for c in CATS)
            + "; faded = masked out (no loss). Healthy: every loss-bearing token is green.</p>",
        ]
        if not self.samples:
            parts.append("<p>No samples recorded.</p>")
        for s in self.samples:
            parts.append(f"<h3>step {s['step']}, row {s['row']}</h3><div class='t'>")
            parts.append("<span class='p'>" + "".join(esc(t) for t in s["prompt"]) + "</span>")
            for t, in_loss, c in zip(s["completion"], s["loss"], s["cat"]):
                cls = f"k {c}" if in_loss else f"nl {c}"
                parts.append(f"<span class='{cls}' title='{c}{' (loss)' if in_loss else ''}'>{esc(t)}</span>")
            parts.append("</div>")
        parts.append("</body></html>")
        path.write_text("".join(parts), encoding="utf-8")
        return [path]
