"""Calibration run: GRPO on the warm-started toy model, per seed: baseline, final, delta, step time.

    python -m hypotrack.toy.calibrate --task arith --seeds 0 1 2 --steps 100 [--full] [--lr 1e-3] [--set k=v]

Uses exactly what the experiment uses (presets.py mirrors experiments/toy_arith.yaml and
experiments/musique_mini.yaml): its GRPO settings, its LoRA adapters (--full for full fine-tuning),
its reward functions and reward_weights, and its dataset size; `reward` is their weighted sum.
baseline = mean `reward` of the first 5 logged steps; final = mean of the last 10.
"""
from __future__ import annotations

import argparse
import ast
import tempfile
import time


def run_once(task: str, seed: int, steps: int, lora: bool, lr: float | None, overrides: dict | None = None) -> dict:
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback, set_seed
    from trl import GRPOConfig, GRPOTrainer

    from . import lab, presets, rewards

    torch.set_num_threads(1)  # the target is one CPU core; also keeps CI neighbours happy
    path = lab.ensure_model(task)
    settings = dict(presets.GRPO_SETTINGS[task])
    settings.update(max_steps=steps, seed=seed, data_seed=seed, reward_weights=list(presets.REWARD_WEIGHTS[task]))
    if lr is not None:
        settings["learning_rate"] = lr
    elif not lora:
        settings["learning_rate"] = presets.FULL_FT_LEARNING_RATE
    settings.update(overrides or {})
    funcs = [getattr(rewards, p.split(":")[1]) for p in presets.REWARDS[task]]
    rewards_log: list[float] = []

    class Grab(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                rewards_log.append(logs["reward"])

    set_seed(seed)  # as hypotrack's worker does before building the trainer
    with tempfile.TemporaryDirectory() as out:
        trainer = GRPOTrainer(
            model=AutoModelForCausalLM.from_pretrained(str(path)),
            processing_class=AutoTokenizer.from_pretrained(str(path)),
            reward_funcs=funcs,
            args=GRPOConfig(output_dir=out, **settings),
            train_dataset=lab.load_dataset(task, presets.DATASET_SIZES[task], seed),
            peft_config=LoraConfig(task_type="CAUSAL_LM", **presets.LORA_CONFIG) if lora else None,
            callbacks=[Grab()],
        )
        t0 = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - t0
    base = sum(rewards_log[:5]) / 5
    final = sum(rewards_log[-10:]) / 10
    return dict(seed=seed, baseline=base, final=final, delta=final - base, step_s=wall / steps, wall_s=wall,
                curve=rewards_log)


def _parse_set(items: list[str]) -> dict:
    out = {}
    for item in items or []:
        key, _, value = item.partition("=")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=100)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--lora", dest="lora", action="store_true", default=True,
                      help="train LoRA adapters, presets.LORA_CONFIG (the default, as in the experiment YAMLs)")
    mode.add_argument("--full", dest="lora", action="store_false",
                      help="full fine-tuning at presets.FULL_FT_LEARNING_RATE (h06's treatment arm)")
    ap.add_argument("--lr", type=float, default=None, help="override the learning rate")
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="override GRPOConfig fields")
    ap.add_argument("--curve", action="store_true", help="also print the per-step reward curve")
    a = ap.parse_args(argv)
    from . import lab

    t0 = time.perf_counter()
    print(f"model: {lab.ensure_model(a.task)} (ready in {time.perf_counter() - t0:.1f}s)", flush=True)
    ok = True
    for seed in a.seeds:
        r = run_once(a.task, seed, a.steps, a.lora, a.lr, _parse_set(a.set))
        good = 0.25 <= r["baseline"] <= 0.75 and r["delta"] >= 0.10
        ok &= good
        if a.curve:
            print("curve " + " ".join(f"{x:.2f}" for x in r["curve"]), flush=True)
        print(f"task={a.task} lora={a.lora} seed={seed} baseline={r['baseline']:.3f} final={r['final']:.3f} "
              f"delta={r['delta']:+.3f} step={r['step_s']:.3f}s run={r['wall_s']:.1f}s {'OK' if good else 'MISS'}",
              flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
