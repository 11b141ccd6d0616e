"""experiments/toy_arith.yaml written as a user's own script: `python train_toy_arith.py --seed 0`.

The same model (a local folder: --model, or MY_MODEL_DIR), rows, reward functions and GRPOConfig settings that
hypotrack's worker trains for toy_arith, built by hand with TRL as a user would. A command experiment on it
(toy_arith_script.yaml) and hypotrack's own arm of toy_arith therefore train the same run, and
tests/test_arm_session.py compares what the two record. `--broken-task-reward` makes the task reward raise on
every call, as a reward function with a bug does.
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    parser = argparse.ArgumentParser(description="GRPO on toy arithmetic")
    parser.add_argument("--model", default=os.environ.get("MY_MODEL_DIR"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--output-dir", default="outputs/toy_arith")
    parser.add_argument("--broken-task-reward", action="store_true")
    args = parser.parse_args()

    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from hypotrack.toy.arith import arith_correct, arith_format, build_dataset

    task_reward = arith_correct
    if args.broken_task_reward:
        def arith_correct_broken(completions, answer, **kwargs):
            raise KeyError("expected_answer")  # reads a column the dataset does not have

        arith_correct_broken.__name__ = "arith_correct"
        task_reward = arith_correct_broken

    config = GRPOConfig(
        output_dir=args.output_dir, max_steps=args.max_steps, seed=args.seed, data_seed=args.seed, report_to="none",
        learning_rate=5e-3, per_device_train_batch_size=64, num_generations=4, max_completion_length=6,
        temperature=1.0, beta=0.0, loss_type="dapo", scale_rewards="group", lr_scheduler_type="constant",
        logging_steps=1, reward_weights=[1.0, 0.1], use_cpu=True, save_strategy="no", disable_tqdm=True,
        dataloader_num_workers=0, bf16=False)  # as the worker builds toy_arith: TRL defaults to bf16
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32),
        processing_class=AutoTokenizer.from_pretrained(args.model),
        reward_funcs=[task_reward, arith_format], args=config, train_dataset=build_dataset(512, args.seed),
        peft_config=LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                               task_type="CAUSAL_LM"))
    trainer.train()


if __name__ == "__main__":
    main()
