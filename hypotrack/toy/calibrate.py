"""Calibration run: GRPO on the warm-started toy model, per seed: baseline, final, delta, step time.

    python -m hypotrack.toy.calibrate --task arith --seeds 0 1 2 --steps 100 [--lora] [--lr 1e-3]

baseline = mean `reward` of the first 5 logged steps; final = mean of the last 10.
"""
from __future__ import annotations

import argparse
import tempfile
import time


def run_once(task: str, seed: int, steps: int, lora: bool, lr: float | None) -> dict:
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from . import lab, presets, rewards

    torch.set_num_threads(1)  # the target is one CPU core; also keeps CI neighbours happy
    path = lab.ensure_model(task)
    settings = dict((presets.LORA_SETTINGS if lora else presets.GRPO_SETTINGS)[task])
    settings.update(max_steps=steps, seed=seed, data_seed=seed)
    if lr is not None:
        settings["learning_rate"] = lr
    funcs = [getattr(rewards, p.split(":")[1]) for p in lab.reward_functions(task)]
    rewards_log: list[float] = []

    class Grab(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                rewards_log.append(logs["reward"])

    with tempfile.TemporaryDirectory() as out:
        trainer = GRPOTrainer(
            model=AutoModelForCausalLM.from_pretrained(str(path)),
            processing_class=AutoTokenizer.from_pretrained(str(path)),
            reward_funcs=funcs,
            args=GRPOConfig(output_dir=out, **settings),
            train_dataset=lab.load_dataset(task, presets.DATASET_SIZES[task], seed),
            peft_config=LoraConfig(**presets.LORA_CONFIG) if lora else None,
            callbacks=[Grab()],
        )
        t0 = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - t0
    base = sum(rewards_log[:5]) / 5
    final = sum(rewards_log[-10:]) / 10
    return dict(seed=seed, baseline=base, final=final, delta=final - base, step_s=wall / steps, wall_s=wall)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--lora", action="store_true", help="train LoRA adapters (presets.LORA_SETTINGS)")
    ap.add_argument("--lr", type=float, default=None, help="override the preset learning rate")
    a = ap.parse_args(argv)
    from . import lab

    t0 = time.perf_counter()
    print(f"model: {lab.ensure_model(a.task)} (ready in {time.perf_counter() - t0:.1f}s)", flush=True)
    ok = True
    for seed in a.seeds:
        r = run_once(a.task, seed, a.steps, a.lora, a.lr)
        good = 0.25 <= r["baseline"] <= 0.75 and r["delta"] >= 0.10
        ok &= good
        print(f"task={a.task} lora={a.lora} seed={seed} baseline={r['baseline']:.3f} final={r['final']:.3f} "
              f"delta={r['delta']:+.3f} step={r['step_s']:.3f}s run={r['wall_s']:.1f}s {'OK' if good else 'MISS'}",
              flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
