"""Determinism: run the same training config twice, compare per-step metrics and final weights bitwise.

`run_determinism(train_fn, seed)` calls `train_fn(seed)` twice (each after `enable_determinism(seed)`),
where `train_fn(seed) -> (metrics_per_step: list[dict[str, float]], state_dict)`. It reports where
the two runs first differ: the first step and metric, else the first parameter tensor (in state-dict
order). `default_train_fn(model_path, steps)` is a short real TRL GRPOTrainer run on CPU.

Wall-clock metrics (step_time, *_runtime, *_per_second) are excluded from the comparison: they are
never reproducible and say nothing about the numerics.
"""
from __future__ import annotations

import math
import os
import random
import struct
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from .common import default_prompts, load_tokenizer, set_threads

TIME_KEYS = ("time", "runtime", "per_second", "epoch")


def enable_determinism(seed: int, warn_only: bool = False) -> dict:
    """Seed python/numpy/torch, turn on deterministic algorithms and cuDNN/cuBLAS settings.

    Returns what was set (to be recorded as run params). `warn_only=False` makes a nondeterministic op
    raise instead of silently running; pass True where a model needs such an op.
    """
    import numpy as np
    import torch

    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # required for deterministic cuBLAS (CUDA >= 10.2)
    os.environ["PYTHONHASHSEED"] = str(seed)  # affects subprocesses only; recorded for completeness
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    try:
        from transformers import set_seed

        set_seed(seed, deterministic=True)  # enable_full_determinism: also sets the flags below
    except Exception:  # noqa: BLE001 - older transformers  # pragma: no cover
        pass
    torch.use_deterministic_algorithms(True, warn_only=warn_only)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    if hasattr(torch.backends, "cuda") and hasattr(torch.backends.cuda, "matmul"):
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return {
        "determinism/seed": seed,
        "determinism/use_deterministic_algorithms": True,
        "determinism/warn_only": warn_only,
        "determinism/CUBLAS_WORKSPACE_CONFIG": os.environ["CUBLAS_WORKSPACE_CONFIG"],
        "determinism/cudnn_deterministic": True,
        "determinism/cudnn_benchmark": False,
        "determinism/allow_tf32": False,
        "determinism/transformers_full_determinism": True,
        "determinism/torch_num_threads": torch.get_num_threads(),
    }


def _determinism_state() -> dict:
    import torch

    return {
        "det": torch.are_deterministic_algorithms_enabled(),
        "warn": torch.is_deterministic_algorithms_warn_only_enabled(),
        "cudnn_det": torch.backends.cudnn.deterministic,
        "cudnn_bench": torch.backends.cudnn.benchmark,
    }


def _restore(state: dict) -> None:
    import torch

    torch.use_deterministic_algorithms(state["det"], warn_only=state["warn"])
    torch.backends.cudnn.deterministic = state["cudnn_det"]
    torch.backends.cudnn.benchmark = state["cudnn_bench"]


# --------------------------------------------------------------------------------------------------
# default training function: a short real TRL GRPO run
# --------------------------------------------------------------------------------------------------
def _text(c) -> str:
    return c if isinstance(c, str) else str(c[-1].get("content", "")) if isinstance(c, list) else str(c)


def dense_reward(completions, **kwargs) -> list[float]:
    """A deterministic reward that separates any two different completions (character-code hash in [0, 1]).

    Only there to give GRPO non-zero advantages on any model, so that weights actually move.
    """
    return [(sum((i + 1) * ord(ch) for i, ch in enumerate(_text(c))) % 97) / 96.0 for c in completions]


def _train_dataset(model_path: str, n: int, seed: int):
    """(dataset, reward_funcs): the toy arith task + its verifier when the toy lab is importable."""
    from datasets import Dataset

    try:
        from hypotrack.toy.lab import load_dataset
        from hypotrack.toy.rewards import arith_correct

        ds = load_dataset("arith", n, seed)
        return ds, [arith_correct, dense_reward]
    except Exception:  # noqa: BLE001 - a model the toy's data does not fit gets fixed prompts
        return Dataset.from_dict({"prompt": default_prompts(model_path, n, seed)}), [dense_reward]


def default_train_fn(model_path: str, steps: int = 5, loss_type: str = "dapo", beta: float = 0.0,
                     learning_rate: float = 1e-3, num_generations: int = 4, max_completion_length: int = 8,
                     temperature: float = 1.2, perturb_at_step: int | None = None, perturb_scale: float = 1e-3,
                     output_dir: str | None = None) -> Callable[[int], tuple[list[dict], dict]]:
    """A train_fn(seed) running `steps` GRPO steps with TRL on CPU (report_to none, logging every step).

    `perturb_at_step=k` adds `perturb_scale` to the first trainable tensor at the end of step k: the
    run is then expected to differ from step k+1 on (used to test the reporting).
    """

    def train_fn(seed: int):
        import contextlib
        import tempfile

        # Nothing is saved (save_strategy "no"), but the Trainer still makes its output folder: a scratch one goes
        # with the run, so a determinism check leaves nothing behind in the temp folder.
        scratch = (contextlib.nullcontext(output_dir) if output_dir
                   else tempfile.TemporaryDirectory(prefix="hypotrack-det-"))
        with scratch as run_dir:
            return _train(seed, run_dir)

    def _train(seed: int, run_dir: str):
        import torch
        from transformers import TrainerCallback
        from transformers.trainer_callback import PrinterCallback, ProgressCallback
        from trl import GRPOConfig, GRPOTrainer

        tok = load_tokenizer(model_path)
        ds, reward_funcs = _train_dataset(model_path, 16, seed)
        args = GRPOConfig(
            output_dir=run_dir, use_cpu=True, report_to="none",
            seed=seed, data_seed=seed, max_steps=steps, logging_steps=1, save_strategy="no",
            per_device_train_batch_size=num_generations, num_generations=num_generations,
            max_completion_length=max_completion_length, learning_rate=learning_rate, loss_type=loss_type,
            beta=beta, temperature=temperature, bf16=False, fp16=False, dataloader_num_workers=0, disable_tqdm=True,
            model_init_kwargs={"dtype": torch.float32},
        )
        callbacks = []
        if perturb_at_step is not None:
            class _Perturb(TrainerCallback):
                def on_step_end(self, a, state, control, model=None, **kw):
                    if state.global_step == perturb_at_step:
                        with torch.no_grad():
                            next(p for p in model.parameters() if p.requires_grad).add_(perturb_scale)

            callbacks.append(_Perturb())
        trainer = GRPOTrainer(model=model_path, reward_funcs=reward_funcs, args=args, train_dataset=ds,
                              processing_class=tok, callbacks=callbacks)
        for cb in (PrinterCallback, ProgressCallback):
            trainer.remove_callback(cb)
        trainer.train()
        per_step = []
        for rec in trainer.state.log_history:
            if "loss" not in rec or "step" not in rec:
                continue
            per_step.append({k: float(v) for k, v in rec.items()
                             if isinstance(v, (int, float)) and not any(t in k for t in TIME_KEYS)})
        sd = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
        return per_step, sd

    return train_fn


# --------------------------------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------------------------------
@dataclass
class DeterminismResult:
    identical: bool
    metrics_identical: bool
    weights_identical: bool
    steps: int
    first_diff_step: int | None  # 1-based step of the first differing metric
    first_diff_metric: str | None
    first_diff_values: tuple[float, float] | None
    first_diff_hex: tuple[str, str] | None
    first_diff_param: str | None
    n_params_differ: int
    n_params: int
    weights_max_abs_diff: float
    metrics_max_abs_diff: float
    determinism_params: dict = field(default_factory=dict)
    seconds: float = 0.0
    notes: str = ""

    def metrics(self) -> dict[str, float]:
        return {
            "parity/determinism/identical": float(self.identical),
            "parity/determinism/metrics_identical": float(self.metrics_identical),
            "parity/determinism/weights_identical": float(self.weights_identical),
            "parity/determinism/first_diff_step": float(self.first_diff_step or 0),
            "parity/determinism/n_params_differ": float(self.n_params_differ),
            "parity/determinism/weights_max_abs_diff": self.weights_max_abs_diff,
            "parity/determinism/metrics_max_abs_diff": self.metrics_max_abs_diff,
            "parity/determinism/seconds": self.seconds,
        }


def _bits(x: float) -> str:
    return struct.pack(">d", float(x)).hex()


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return _bits(a) == _bits(b) or (math.isnan(a) and math.isnan(b))


def compare_runs(run_a: tuple[list[dict], dict], run_b: tuple[list[dict], dict]) -> DeterminismResult:
    """Bitwise comparison of two (metrics_per_step, state_dict) results."""
    import torch

    ma, sa = run_a
    mb, sb = run_b
    first_step = first_metric = first_vals = first_hex = None
    mmax = 0.0
    for i in range(max(len(ma), len(mb))):
        da = ma[i] if i < len(ma) else {}
        db = mb[i] if i < len(mb) else {}
        for k in sorted(set(da) | set(db)):
            a, b = da.get(k), db.get(k)
            if not _same(a, b):
                if a is not None and b is not None and not (math.isnan(a) or math.isnan(b)):
                    mmax = max(mmax, abs(a - b))
                if first_step is None:
                    first_step, first_metric = i + 1, k
                    first_vals = (a, b)
                    first_hex = (_bits(a) if a is not None else "-", _bits(b) if b is not None else "-")
    first_param, n_diff, wmax = None, 0, 0.0
    keys = list(sa.keys())
    for k in keys + [k for k in sb if k not in sa]:
        ta, tb = sa.get(k), sb.get(k)
        if ta is None or tb is None or ta.shape != tb.shape or ta.dtype != tb.dtype:
            n_diff += 1
            first_param = first_param or k
            wmax = float("inf")
            continue
        if not torch.equal(ta.view(torch.uint8) if ta.dtype != torch.bool else ta,
                           tb.view(torch.uint8) if tb.dtype != torch.bool else tb):
            n_diff += 1
            first_param = first_param or k
            if ta.is_floating_point():
                wmax = max(wmax, float((ta.double() - tb.double()).abs().max()))
    metrics_identical = first_step is None and len(ma) == len(mb)
    weights_identical = n_diff == 0
    return DeterminismResult(
        identical=metrics_identical and weights_identical, metrics_identical=metrics_identical,
        weights_identical=weights_identical, steps=max(len(ma), len(mb)), first_diff_step=first_step,
        first_diff_metric=first_metric, first_diff_values=first_vals, first_diff_hex=first_hex,
        first_diff_param=first_param, n_params_differ=n_diff, n_params=len(set(sa) | set(sb)),
        weights_max_abs_diff=wmax, metrics_max_abs_diff=mmax,
    )


def run_determinism(train_fn: Callable[[int], tuple[list[dict], dict]], seed: int = 0,
                    train_fn_b: Callable[[int], tuple[list[dict], dict]] | None = None,
                    deterministic: bool = True, threads: int = 1) -> DeterminismResult:
    """Run train_fn(seed) twice (the second with train_fn_b if given) and compare bitwise."""
    set_threads(threads)
    t0 = time.perf_counter()
    before = _determinism_state()
    params: dict = {}
    notes = ""
    try:
        runs = []
        for fn in (train_fn, train_fn_b or train_fn):
            if deterministic:
                params = enable_determinism(seed, warn_only=False)
            try:
                runs.append(fn(seed))
            except RuntimeError as e:
                if not deterministic or "deterministic" not in str(e):
                    raise
                # a nondeterministic op without a deterministic implementation: record it and retry warn-only
                notes = f"warn_only fallback: {str(e).splitlines()[0][:160]}"
                params = enable_determinism(seed, warn_only=True)
                runs.append(fn(seed))
    finally:
        _restore(before)
    res = compare_runs(runs[0], runs[1])
    res.determinism_params = params
    res.seconds = time.perf_counter() - t0
    res.notes = notes
    return res


def render_table(res: DeterminismResult):
    from rich.table import Table

    t = Table(title=f"Determinism: two runs, bitwise ({res.steps} steps, {res.seconds:.1f}s)")
    t.add_column("check")
    t.add_column("result")
    ok = lambda b: "[green]identical[/]" if b else "[red]differs[/]"
    t.add_row("per-step metrics", ok(res.metrics_identical))
    if res.first_diff_step is not None:
        a, b = res.first_diff_values
        t.add_row("first difference", f"step {res.first_diff_step}, metric {res.first_diff_metric!r}: "
                                      f"{a!r} [{res.first_diff_hex[0]}] vs {b!r} [{res.first_diff_hex[1]}]")
        t.add_row("metrics max |Δ|", f"{res.metrics_max_abs_diff:.3e}")
    t.add_row("final weights", ok(res.weights_identical) + f" ({res.n_params - res.n_params_differ}/{res.n_params} "
              "tensors bitwise equal)")
    if res.first_diff_param:
        t.add_row("first differing tensor", res.first_diff_param)
        t.add_row("weights max |Δ|", f"{res.weights_max_abs_diff:.3e}")
    t.add_row("verdict", "[green]deterministic[/]" if res.identical else "[red]NOT deterministic[/]")
    if res.notes:
        t.add_row("notes", res.notes)
    return t


def to_markdown(res: DeterminismResult) -> str:
    d = asdict(res)
    return "| field | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in d.items())


def to_json(res: DeterminismResult) -> dict:
    return {**asdict(res), "metrics": res.metrics()}
