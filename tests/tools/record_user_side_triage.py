"""Train each user-side run with plain TRL (no hypotrack code in the training process) and keep its logs.

The runs are the user-written experiments of tests/user_side/experiments (their loaders, reward functions,
weights and GRPOConfig settings), trained by TRL's own GRPOTrainer the way the user's script would; what
triage reads is what TRL wrote: `trainer_state.json`'s log_history. Each run's logs are kept in
tests/fixtures/triage/user_side_plain_trl.json with the hypothesis its bug should rank first and its half:
`fit` runs are the ones the triage signatures may be tuned on, `holdout` runs are only ever reported.

    python tests/tools/record_user_side_triage.py            # re-record every run (about 10 minutes)
    python tests/tools/record_user_side_triage.py --only overweighted_kl,out_of_reach
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parents[1] / "user_side"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "triage" / "user_side_plain_trl.json"
# run -> (the hypothesis its bug should rank first, or None for a healthy run; its half). Signatures may be
# tuned on `fit` runs only; `holdout` runs are only ever reported. Each round of new faults was written and
# recorded before the signatures were tuned on the rounds before it, reported as first read, and then joined
# the fit half: the first sixteen runs (scoring.py, grading.py), then the runs of team_rewards.py, then
# those of lab_rewards.py, then those of ops_rewards.py; the runs of grpo_rewards.py are the holdout now.
RUNS: dict[str, tuple[str | None, str]] = {
    "healthy_sums": (None, "fit"), "healthy_capitals": (None, "fit"), "constant_format": (None, "fit"),
    "bf16_reward_model": ("h01", "fit"), "tiebreak_grader": ("h01", "fit"),
    "overweighted_kl": ("h03", "fit"),
    "cut_evidence": ("h04", "fit"), "cut_span": ("h04", "fit"),
    "flaky_judge": ("h05", "fit"), "noise_style": ("h05", "fit"), "penalty_sign": ("h05", "fit"),
    "out_of_reach": ("h11", "fit"), "wrong_sign_grade": ("h13", "fit"),
    "repetition_penalty": ("h14", "fit"), "near_greedy": ("h15", "fit"),
    "hot_learning_rate": ("h16", "fit"), "judge_hacked": ("h17", "fit"),
    "healthy_plus_minus": (None, "fit"), "healthy_partial_credit": (None, "fit"),
    "rm_logit_noise": ("h01", "fit"), "beta_two": ("h03", "fit"), "short_context": ("h04", "fit"),
    "random_helpfulness": ("h05", "fit"), "six_digit_sums": ("h11", "fit"),
    "one_token_answers": ("h12", "fit"), "negated_cost": ("h13", "fit"),
    "eval_temperature": ("h15", "fit"), "lora_lr_typo": ("h16", "fit"), "even_style": ("h17", "fit"),
    "healthy_format_bonus": (None, "fit"),
    "jitter_grade": ("h01", "fit"), "kl_half": ("h03", "fit"), "cut_right": ("h04", "fit"),
    "swinging_judge": ("h05", "fit"), "chained_arithmetic": ("h11", "fit"),
    "two_token_budget": ("h12", "fit"), "inverted_score": ("h13", "fit"),
    "cold_sampling": ("h15", "fit"), "full_ft_hot": ("h16", "fit"),
    "parity_judge_gentle": ("h17", "fit"),
    "healthy_capitals_g8": (None, "fit"), "healthy_pairs": (None, "fit"),
    "similarity_jitter": ("h01", "fit"), "beta_one_lora": ("h03", "fit"), "budget_48": ("h04", "fit"),
    "two_coin_judges": ("h05", "fit"), "long_division": ("h11", "fit"),
    "pairs_one_token": ("h12", "fit"), "minus_grade_full": ("h13", "fit"),
    "capitals_cold": ("h15", "fit"), "lora_lr_hot_small_batch": ("h16", "fit"),
    "concise_bonus": ("h17", "fit"),
    "healthy_full_beta0": (None, "holdout"), "healthy_three_rewards": (None, "holdout"),
    "value_head_noise": ("h01", "holdout"), "beta_point_eight": ("h03", "holdout"), "budget_112": ("h04", "holdout"),
    "tone_noise": ("h05", "holdout"), "hex_sums": ("h11", "holdout"), "twelve_cut_short": ("h12", "holdout"),
    "minus_ten_grade": ("h13", "holdout"), "greedy_full": ("h15", "holdout"), "full_lr_5e2": ("h16", "holdout"),
    "leading_one": ("h17", "holdout"),
}


def _function(path: str):  # the user's function, imported the way their script imports it
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def train(name: str, out: Path, seed: int = 0) -> dict:
    """One plain TRL run of the user-side experiment ``name``; returns what triage needs of it."""
    import torch
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from hypotrack.toy.lab import ensure_model

    spec = yaml.safe_load((PROJECT / "experiments" / f"{name}.yaml").read_text())
    sys.path.insert(0, str(PROJECT / "experiments"))
    data = spec["data"]
    dataset = _function(data["loader"])(data["size"], seed).rename_column(data["prompt_column"], "prompt")
    model = str(ensure_model(spec["model"].split(":", 1)[1]))
    if data.get("max_prompt_length"):  # the user's script cuts its prompts to a token budget itself
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
        tokenizer.truncation_side = data.get("truncation_side", "left")
        budget = data["max_prompt_length"]
        dataset = dataset.map(lambda row: {"prompt": tokenizer.decode(
            tokenizer(row["prompt"], truncation=True, max_length=budget)["input_ids"], skip_special_tokens=True)})
    rewards = [_function(path) for path in spec["rewards"]]
    settings = dict(spec.get("settings", {}))
    config = GRPOConfig(
        output_dir=str(out), use_cpu=True, report_to="none", seed=seed, data_seed=seed,
        max_steps=spec["max_steps"], logging_steps=1, save_strategy="no", bf16=False, fp16=False,
        dataloader_num_workers=0, disable_tqdm=True, model_init_kwargs={"dtype": torch.float32},
        reward_weights=spec.get("reward_weights"), **settings)
    lora = spec.get("lora", {})
    peft_config = None if lora.get("enabled", True) is False else LoraConfig(
        r=lora.get("r", 8), lora_alpha=lora.get("lora_alpha", 16),
        target_modules=lora.get("target_modules", ["q_proj", "k_proj", "v_proj", "o_proj"]), task_type="CAUSAL_LM")
    trainer = GRPOTrainer(model=model, reward_funcs=rewards, args=config, train_dataset=dataset,
                          peft_config=peft_config)
    trainer.train()
    task = spec.get("task_reward") or spec["rewards"][0]
    return {"log_history": trainer.state.log_history, "task_reward": task.split(":")[-1],
            "reward_functions": [path.split(":")[-1] for path in spec["rewards"]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated runs to re-record [all]")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(RUNS)
    recorded = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
    for name, (expected, half) in RUNS.items():  # a run's half may change without re-recording it
        if name in recorded:
            recorded[name].update(expected=expected, half=half)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            expected, half = RUNS[name]
            recorded[name] = {"expected": expected, "half": half, **train(name, Path(tmp) / name)}
            FIXTURE.write_text(json.dumps(recorded, indent=0, sort_keys=True))
            print(f"recorded {name} ({len(recorded[name]['log_history'])} log entries)", flush=True)


if __name__ == "__main__":
    main()
