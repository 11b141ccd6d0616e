"""A plain TRL script that trains one user-side experiment (tests/user_side/experiments/NAME.yaml).

It stands in for a user's script written around their own config file: its own flags change the run
(`--set key=value` for a GRPOConfig field, `--no-peft`, `--task-reward-only`, `--generations-factor F`,
`--no-truncation`), and it imports nothing from hypotrack but the toy model's local folder. hypotrack's
command-experiment twins of the user-side suite (tests/tools/command_twins.py) run it.

    python train_user_side.py --experiment flaky_judge --seed 0 --max-steps 30 --output-dir out
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[1] / "user_side" / "experiments"


def _function(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--output-dir", default="outputs")
    parser.add_argument("--set", action="append", default=[], help="key=value (a JSON value) for GRPOConfig")
    parser.add_argument("--no-peft", action="store_true")
    parser.add_argument("--task-reward-only", action="store_true")
    parser.add_argument("--generations-factor", type=int, default=1, help="more completions per prompt, same prompts")
    parser.add_argument("--no-truncation", action="store_true")
    args = parser.parse_args()

    import torch
    import yaml
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from hypotrack.toy.lab import ensure_model

    spec = yaml.safe_load((EXPERIMENTS / f"{args.experiment}.yaml").read_text())
    sys.path.insert(0, str(EXPERIMENTS))
    data = spec["data"]
    dataset = _function(data["loader"])(data["size"], args.seed).rename_column(data["prompt_column"], "prompt")
    model = str(ensure_model(spec["model"].split(":", 1)[1]))
    if data.get("max_prompt_length") and not args.no_truncation:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
        tokenizer.truncation_side = data.get("truncation_side", "left")
        budget = data["max_prompt_length"]
        dataset = dataset.map(lambda row: {"prompt": tokenizer.decode(
            tokenizer(row["prompt"], truncation=True, max_length=budget)["input_ids"], skip_special_tokens=True)})
    paths = list(spec["rewards"])
    weights = spec.get("reward_weights")
    if args.task_reward_only:
        task = spec.get("task_reward") or paths[0]
        index = next(i for i, p in enumerate(paths) if task in (p, p.split(":")[-1]))
        paths, weights = [paths[index]], [weights[index]] if weights else None
    settings = dict(spec.get("settings", {}))
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            settings[key] = json.loads(value)
        except json.JSONDecodeError:  # a bare word: a string value
            settings[key] = value
    if args.generations_factor > 1:  # more completions for the same prompts: the batch grows with the groups
        settings["num_generations"] = settings.get("num_generations", 8) * args.generations_factor
        settings["per_device_train_batch_size"] = settings.get("per_device_train_batch_size", 8) * args.generations_factor
    config = GRPOConfig(
        output_dir=args.output_dir, use_cpu=True, report_to="none", seed=args.seed, data_seed=args.seed,
        max_steps=args.max_steps, logging_steps=1, save_strategy="no", bf16=False, fp16=False,
        dataloader_num_workers=0, disable_tqdm=True, model_init_kwargs={"dtype": torch.float32},
        reward_weights=weights, **settings)
    lora = spec.get("lora", {})
    peft_config = None if args.no_peft or lora.get("enabled", True) is False else LoraConfig(
        r=lora.get("r", 8), lora_alpha=lora.get("lora_alpha", 16),
        target_modules=lora.get("target_modules", ["q_proj", "k_proj", "v_proj", "o_proj"]), task_type="CAUSAL_LM")
    trainer = GRPOTrainer(model=model, reward_funcs=[_function(p) for p in paths], args=config,
                          train_dataset=dataset, peft_config=peft_config)
    trainer.train()


if __name__ == "__main__":
    main()
