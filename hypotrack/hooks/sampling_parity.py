"""h14 sampling and scoring disagree: the tokens are sampled from one distribution and trained as if
from another.

TRL samples completions with its generation settings (temperature, top_k, top_p, min_p,
repetition_penalty, and whatever `generation_kwargs` overrides) and scores them, for the loss and the
importance ratio, as log_softmax(logits / temperature) with none of the other transforms. When the two
differ, every ratio and every KL estimate is off (trl#4159: temperature not applied when scoring;
trl PR #3029; OpenPipe/ART PR #140: generation_config penalties).

On the transformers generation path the hook taps the decoding forwards of one rollout in `every`
(forward hooks on the language model, as hooks/lora_sync.py does) and keeps, for each sampled token,
its raw logits. From the same logits it computes the token's logprob under the sampling transforms the
generator used (read from the trainer's generation config) and under the scoring transform (the
trainer's temperature alone), with transformers' own logits processors:

- `transform_gap_mean`, `transform_gap_max`: |sampling - scoring| logprob per sampled token: the part of
  a sampling/scoring mismatch that comes from the transforms (0 when they agree, whatever the weights).
- `gap_without_temperature`, `gap_without_repetition_penalty`, `gap_without_top_k_top_p`: the mean gap
  left when that transform is dropped from the sampling side; the one that brings it to ~0 is the
  transform scoring does not apply. `closing_transform` names it: 1 temperature, 2 repetition penalty,
  3 top-k/top-p/min-p, 4 none of them alone (0 when there is no gap).
- `sampling_temperature`, `scoring_temperature`: what each side used.
A generator that is a separate engine (vLLM, colocate mode) is not tapped: its transforms are its own. The
hook reads what it served instead (hooks/_generator.py), on every rollout:
- `generator_dtype_differs`: 1 when vLLM serves the model in another dtype than the trainer computes in (TRL
  builds its engine without a dtype, and vLLM serves a float32 checkpoint in bfloat16), else 0;
- `generator_hidden_settings`: how many sampling settings the generator applies that the run never declared: a
  vLLM server fills a request's unset settings from the served model's generation_config.json, and TRL's requests
  leave presence_penalty and frequency_penalty unset (NeMo-RL#3497); they are applied with the transforms below;
- `generator_gap_mean`, `generator_gap_max`: |vLLM's sampling logprobs - the trainer's| per completion token
  (TRL's `sampling_per_token_logps` against `old_per_token_logps`), the gap every importance ratio carries;
- `generator_transform_gap_mean`, `generator_transform_gap_max`, `generator_closing_transform`: the part of that
  gap the sampling transforms explain, every `every` rollouts. vLLM returns its logprobs after its transforms
  (TRL asks for processed logprobs): a top-k, top-p or min-p cut renormalises them over the tokens it keeps, so each
  carries log(kept mass) that the trainer's full-vocabulary scoring does not (trl#6789). A fresh forward of the
  trainer's model over `sample_rows` rows (their first `sample_tokens` completion tokens) gives the logits vLLM's
  tokens were sampled from; the transforms are applied to them as on the transformers path above, with the
  generator's settings (TRL's vLLM generation: temperature, top_k, top_p, min_p, repetition_penalty and its
  generation_kwargs). `generator_transform_residual_mean` is what is left of vLLM's own logprobs against the
  trainer's after those transforms: near 0 when they explain vLLM's whole gap, large when the weights differ (h06).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.definitions.vocabulary import SAMPLING_LEFT_TO_THE_SERVER
from hypotrack.hooks.base import DiagnosticHook, RolloutBatch, StepContext

TRANSFORMS = ("temperature", "repetition_penalty", "top_k_top_p")  # repetition_penalty: every penalty
CLOSES = 0.1  # dropping a transform closes the gap when what is left is under a tenth of it


class SamplingParityHook(DiagnosticHook):
    name = "sampling_parity"
    description = (
        "h14: logprob gap between the sampling transforms and the scoring one, and which transform "
        "closes it"
    )
    metrics = (
        "transform_gap_mean", "transform_gap_max", "gap_without_temperature", "gap_without_repetition_penalty",
        "gap_without_top_k_top_p", "closing_transform", "sampling_temperature", "scoring_temperature",
        "generator_dtype_differs", "generator_hidden_settings", "generator_gap_mean", "generator_gap_max",
        "generator_transform_gap_mean", "generator_transform_gap_max", "generator_closing_transform",
        "generator_transform_residual_mean",
    )

    @dataclass(frozen=True)
    class Settings:
        every: int = 10
        """Tap the generator's logits every this many rollouts."""
        sample_rows: int = 2
        """Under vLLM: rows of the batch whose completions the trainer's model scores afresh."""
        sample_tokens: int = 64
        """Under vLLM: the first completion tokens of each such row that are read (the full-vocabulary logits of
        each are kept for the transforms, so this bounds the memory)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.every = max(int(self.config.every), 1)
        self._handles: list[Any] = []
        self._trainer = None
        self._generator: Any = False  # a separate generator (hooks/_generator.py), None without one; False: not looked for
        self._n_rollouts = 0
        self._tap: dict[str, Any] | None = None  # the rollout being tapped: per-token gaps so far
        self._hidden: dict[str, float] | None = None  # the generator's own values for settings TRL leaves unset

    # -- settings of each side ------------------------------------------------------------------
    def _sampling(self) -> dict[str, Any]:
        # TRL's transformers generation keeps its settings in generation_config; its vLLM generation on the
        # VLLMGeneration object, with generation_kwargs over them.
        config = getattr(self._trainer, "generation_config", None)
        engine = getattr(self._trainer, "vllm_generation", None)
        overrides = dict(getattr(engine, "generation_kwargs", None) or {})

        def get(name: str, default: Any) -> Any:
            if engine is not None:
                value = overrides.get(name, getattr(engine, name, None))
            else:
                value = getattr(config, name, None) if config is not None else None
            return default if value is None else value

        hidden = self._hidden_settings()
        return {"temperature": float(get("temperature", 1.0)), "repetition_penalty": float(get("repetition_penalty", 1.0)),
                "top_k": int(get("top_k", 0) or 0), "top_p": float(get("top_p", 1.0)),
                "min_p": get("min_p", None),
                **{name: float(overrides.get(name, hidden.get(name, 0.0))) for name in SAMPLING_LEFT_TO_THE_SERVER}}

    def _hidden_settings(self) -> dict[str, float]:
        """The settings TRL's requests leave unset (SAMPLING_LEFT_TO_THE_SERVER) that the generator fills from the served model's
        generation config, read once; {} for a colocated engine, which TRL hands every setting, or without vLLM."""
        if self._hidden is None:
            defaults = self._generator.sampling_defaults() if self._generator not in (None, False) else {}
            engine = getattr(self._trainer, "vllm_generation", None)
            sent = dict(getattr(engine, "generation_kwargs", None) or {})  # TRL sends generation_kwargs as they are
            self._hidden = {name: float(defaults[name]) for name in SAMPLING_LEFT_TO_THE_SERVER
                            if defaults.get(name) and name not in sent}
        return self._hidden

    def _scoring_temperature(self) -> float:
        return float(getattr(self._trainer, "temperature", 1.0) or 1.0)

    def _logps(self, raw, ids, tokens, drop: str | None, generated=None):
        """log p(token) after the sampling transforms, without ``drop`` (None: all of them); ``generated``: the
        completion's tokens so far, which a presence or frequency penalty counts (vLLM's, on its own output)."""
        import torch
        from transformers.generation.logits_process import (
            MinPLogitsWarper,
            RepetitionPenaltyLogitsProcessor,
            TopKLogitsWarper,
            TopPLogitsWarper,
        )

        cfg = self._sampling()
        scores = raw.float()
        if cfg["repetition_penalty"] != 1.0 and drop != "repetition_penalty":
            scores = RepetitionPenaltyLogitsProcessor(cfg["repetition_penalty"])(ids, scores)
        if generated is not None and generated.size(1) and drop != "repetition_penalty" and (
                cfg["presence_penalty"] or cfg["frequency_penalty"]):
            counts = torch.zeros_like(scores).scatter_add_(1, generated, torch.ones_like(generated, dtype=scores.dtype))
            scores = scores - cfg["frequency_penalty"] * counts - cfg["presence_penalty"] * (counts > 0).to(scores.dtype)
        temperature = self._scoring_temperature() if drop == "temperature" else cfg["temperature"]
        scores = scores / temperature
        if drop != "top_k_top_p":
            if cfg["top_k"]:
                scores = TopKLogitsWarper(cfg["top_k"])(ids, scores)
            if cfg["top_p"] < 1.0:
                scores = TopPLogitsWarper(cfg["top_p"])(ids, scores)
            if cfg["min_p"]:
                scores = MinPLogitsWarper(float(cfg["min_p"]))(ids, scores)
        return torch.log_softmax(scores, dim=-1).gather(1, tokens.unsqueeze(1)).squeeze(1)

    # -- the tap --------------------------------------------------------------------------------
    def on_train_begin(self, ctx: StepContext) -> dict[str, float]:
        from hypotrack.hooks._util import unwrap

        self.close()
        self._trainer = ctx.trainer
        self._generator, self._hidden = False, None
        model = unwrap(ctx.model)
        lm = model.get_base_model() if hasattr(model, "get_base_model") else model
        self._handles = [lm.register_forward_pre_hook(self._pre, with_kwargs=True),
                         lm.register_forward_hook(self._post, with_kwargs=True)]
        self._arm()
        return {}

    def _arm(self) -> None:
        due = self._n_rollouts % self.every == 0
        self._tap = {"calls": 0, "prev": None, "ids": None, "gaps": {k: [] for k in (None, *TRANSFORMS)}} \
            if due else None

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _decoding(self, kwargs) -> bool:
        from hypotrack.hooks._util import is_generate_forward

        return self._tap is not None and is_generate_forward(kwargs)

    def _pre(self, module, args, kwargs):
        import torch

        if not self._decoding(kwargs):
            return None
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            return None
        from hypotrack.hooks._util import is_prefill

        tap = self._tap
        prefill = is_prefill(ids, kwargs, tap.get("width"))
        tap["width"] = ids.size(1)
        if prefill:
            tap["calls"] += 1
            tap["prev"], tap["ids"] = None, ids.detach()
            return None
        if tap["calls"] == 1 and tap["prev"] is not None:
            tokens = ids[:, -1].detach()
            scoring = self._scoring(tap["prev"], tokens)
            for drop in (None, *TRANSFORMS):
                tap["gaps"][drop].append((self._logps(tap["prev"], tap["ids"], tokens, drop) - scoring).abs())
            tap["ids"] = torch.cat([tap["ids"], tokens.unsqueeze(1)], dim=1)
        return None

    def _scoring(self, raw, tokens):
        import torch

        scores = raw.float() / self._scoring_temperature()
        return torch.log_softmax(scores, dim=-1).gather(1, tokens.unsqueeze(1)).squeeze(1)

    def _post(self, module, args, kwargs, output):
        if not self._decoding(kwargs) or self._tap["calls"] != 1:
            return None
        logits = getattr(output, "logits", None)
        if logits is not None:
            self._tap["prev"] = logits[:, -1, :].detach()
        return None

    # -- report ---------------------------------------------------------------------------------
    def _served_precision(self, batch: RolloutBatch) -> dict[str, float]:
        """vLLM's served dtype against the trainer's, and its logprob gap to the trainer's; {} without vLLM."""
        from hypotrack.hooks._generator import served_generator
        from hypotrack.hooks._util import f, sampling_gap, unwrap

        if self._generator is False:  # looked for once: TRL builds its generator with the trainer
            self._generator = served_generator(self._trainer)
        if self._generator is None:
            return {}
        trainer_dtype = next(unwrap(self._trainer.model).parameters()).dtype
        differs = self._generator.dtype != trainer_dtype
        out = {"generator_dtype_differs": float(differs),
               "generator_hidden_settings": float(len(self._hidden_settings()))}
        gap = sampling_gap(batch)
        if gap is not None and gap.numel():
            out.update(generator_gap_mean=f(gap.mean()), generator_gap_max=f(gap.max()))
        return out

    def _served_transforms(self, batch: RolloutBatch) -> tuple[dict[Any, list[Any]], list[Any]]:
        """Per-token gaps, as the tap collects them, for vLLM's sampled tokens from a fresh trainer forward, and
        vLLM's own logprobs against the trainer's under the generator's transforms."""
        import torch

        from hypotrack.hooks._util import eval_mode, unwrap

        rows, width = self.config.sample_rows, self.config.sample_tokens
        prompt, completion = batch.prompt_ids[:rows], batch.completion_ids[:rows, :width]
        mask = batch.completion_mask[:rows, :width].bool()
        ids = torch.cat([prompt, completion], dim=1)
        attention = torch.cat([batch.prompt_mask[:rows], torch.ones_like(completion)], dim=1)  # causal: padding after
        model, P = self._trainer.model, prompt.size(1)                                        # a completion is unread
        with torch.no_grad(), eval_mode(unwrap(model)):
            logits = model(input_ids=ids, attention_mask=attention).logits
        sampled = batch.sampling_per_token_logps
        gaps: dict[Any, list[Any]] = {drop: [] for drop in (None, *TRANSFORMS)}
        residual: list[Any] = []
        for t in range(completion.size(1)):
            keep = mask[:, t]
            if not keep.any():
                continue
            raw, tokens = logits[:, P + t - 1, :], completion[:, t]
            scoring = self._scoring(raw, tokens)
            for drop in gaps:
                transformed = self._logps(raw, ids[:, :P + t], tokens, drop, generated=ids[:, P:P + t])
                gaps[drop].append((transformed - scoring).abs()[keep])
                if drop is None and sampled is not None:
                    residual.append((sampled[:rows, t].float().to(transformed.device) - transformed).abs()[keep])
        return gaps, residual

    def _transform_report(self, collected: dict[Any, list[Any]], residual: list[Any] = ()) -> dict[str, float]:
        """transform_gap_*, gap_without_* and closing_transform from per-token gaps (and transform_residual_mean
        from vLLM's residual); {} without any."""
        import torch

        if not collected[None]:
            return {}
        gaps = {drop: torch.cat(values).float() for drop, values in collected.items()}
        finite = torch.isfinite(gaps[None])
        gap = gaps[None][finite]
        if not gap.numel():
            return {}
        cfg = self._sampling()
        out = {"transform_gap_mean": float(gap.mean()), "transform_gap_max": float(gap.max()),
               "sampling_temperature": cfg["temperature"], "scoring_temperature": self._scoring_temperature()}
        for drop in TRANSFORMS:
            left = gaps[drop][finite & torch.isfinite(gaps[drop])]
            out[f"gap_without_{drop}"] = float(left.mean()) if left.numel() else out["transform_gap_mean"]
        out["closing_transform"] = self._closing(out)
        if residual:
            out["transform_residual_mean"] = float(torch.cat(residual).float().mean())
        return out

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        tap, self._n_rollouts = self._tap, self._n_rollouts + 1
        try:
            served = self._served_precision(batch)
            if served:
                if tap is not None:  # this rollout is one of the `every`: the transforms' part of vLLM's gap
                    report = self._transform_report(*self._served_transforms(batch))
                    served.update({f"generator_{key}": report[key] for key in
                                   ("transform_gap_mean", "transform_gap_max", "closing_transform",
                                    "transform_residual_mean") if key in report})
                return served
            if tap is None:
                return {}
            return self._transform_report(tap["gaps"])
        finally:
            self._arm()

    @staticmethod
    def _closing(out: dict[str, float]) -> float:
        gap = out["transform_gap_mean"]
        if gap <= 1e-6:
            return 0.0
        left = {i: out[f"gap_without_{drop}"] for i, drop in enumerate(TRANSFORMS, start=1)}
        best = min(left, key=left.get)
        return float(best) if left[best] <= CLOSES * gap else 4.0
