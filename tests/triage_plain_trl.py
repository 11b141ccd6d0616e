"""Plain TRL GRPO runs on the toy lab, with no hypotrack code in the training loop: what a user's logs look like.

Each run is TRL's own GRPOTrainer on the toy arithmetic model, its dataset and reward functions, with a
planted fault expressed the way a user's setup would carry it (a reward function, a GRPOConfig value),
never through hypotrack's trainer or hooks. Logs go where TRL puts them: `output_dir/checkpoint-N/
trainer_state.json`, and with report_to="mlflow" an MLflow run written by transformers' MLflow callback.

    python tests/triage_plain_trl.py OUT_DIR clean tiny_std_rewards [--steps 12] [--report-to mlflow]
    (--report-to takes transformers' integrations, comma-separated: tensorboard,wandb)

prints one line per run: MARKER + JSON {"fault", "output_dir", "mlflow_run_id"} (TRL prints its logs as dicts).
"""

from __future__ import annotations

import argparse
import json
import random
import zlib
from pathlib import Path

# How each fault changes a plain run: GRPOConfig fields, and the reward functions (task first).
CONFIG = {
    "kl_wrong_sign": {"beta": -0.04},
    "completion_budget_too_short": {"max_completion_length": 1},
    "sampling_temperature_not_scored": {"generation_kwargs": {"temperature": 0.7}},
    "entropy_bonus_wrong_sign": {"entropy_coef": -1.0},
}
EQUAL_WEIGHTS = {"noisy_reward_component", "round_number_bonus"}
MARKER = "@@plain-trl-run@@"


def jittered_correct(completions, answer, **kwargs):  # TRL's reward signature
    """arith_correct scored by a 'bf16 reward model': +-1e-3 noise on every score."""
    from hypotrack.toy.rewards import arith_correct

    rng = random.Random(len(completions) * 7919 + sum(len(str(c)) for c in completions))
    return [r + rng.uniform(-1e-3, 1e-3) for r in arith_correct(completions, answer)]


def coin_flip_judge(completions, **kwargs):
    """An auxiliary judge that answers at random."""
    rng = random.Random(sum(zlib.crc32(str(c).encode()) for c in completions))
    return [float(rng.random() < 0.5) for _ in completions]


def never_matches(completions, **kwargs):
    """A task reward whose parser expects a format the model never writes."""
    return [0.0 for _ in completions]


def all_or_nothing(completions, answer, prompts, **kwargs):
    """90% of prompts are all-or-nothing: every completion of them scores the same, whatever it says."""
    from hypotrack.toy.rewards import arith_correct

    scores = arith_correct(completions, answer)
    out = []
    for prompt, score in zip(prompts, scores):
        code = zlib.crc32(str(prompt).encode())
        out.append(float(code % 2) if code % 10 else score)
    return out


def rewards_for(fault: str) -> list:
    from hypotrack.toy.rewards import arith_correct, arith_format

    task = {"tiny_std_rewards": jittered_correct, "reward_never_matches": never_matches,
            "bimodal_difficulty": all_or_nothing}.get(fault, arith_correct)
    aux = coin_flip_judge if fault == "noisy_reward_component" else arith_format
    return [task, aux]


def train(out: Path, fault: str, steps: int, report_to: str, seed: int = 0) -> dict:
    import torch
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from hypotrack.toy.lab import ensure_model, load_dataset

    model = str(ensure_model("arith"))
    settings = dict(
        output_dir=str(out), use_cpu=True, report_to=report_to.split(","), seed=seed, data_seed=seed, max_steps=steps,
        logging_steps=1, save_strategy="steps", save_steps=steps, per_device_train_batch_size=16,
        num_generations=4, max_completion_length=6, learning_rate=5e-3, loss_type="dapo", beta=0.0,
        temperature=1.0, scale_rewards="group", lr_scheduler_type="constant", bf16=False, fp16=False,
        dataloader_num_workers=0, disable_tqdm=True, model_init_kwargs={"dtype": torch.float32},
        reward_weights=[1.0, 1.0] if fault in EQUAL_WEIGHTS else [1.0, 0.1],
    )
    settings.update(CONFIG.get(fault, {}))
    if fault == "learning_rate_too_high":
        settings["learning_rate"] *= 20
    trainer = GRPOTrainer(model=model, reward_funcs=rewards_for(fault), args=GRPOConfig(**settings),
                          train_dataset=load_dataset("arith", 128, seed),
                          peft_config=LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                                                 task_type="CAUSAL_LM"))
    trainer.train()
    run_id = None
    if report_to == "mlflow":
        import mlflow

        last = mlflow.last_active_run()
        run_id = last.info.run_id if last else None
    return {"fault": fault, "output_dir": str(out), "mlflow_run_id": run_id}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("faults", nargs="+")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--report-to", default="none", help="transformers' report_to, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for fault in args.faults:
        print(MARKER + json.dumps(train(args.out / fault, fault, args.steps, args.report_to, args.seed)), flush=True)


if __name__ == "__main__":
    main()
