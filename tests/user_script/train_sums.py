"""A user's own GRPO training script, as they run it: `python train_sums.py --lr 5e-3 --beta 0.04`.

Its own argparse flags, its own GRPOTrainer subclass, loader and reward names, and no hypotrack import.
The model is a local folder (--model, or MY_MODEL_DIR); the tests point it at the toy arithmetic model
hypotrack builds locally, standing in for the user's model. `--no-trainer` exits before any trainer is
built and `--crash-at-step N` raises inside training, as scripts with those bugs do. `--spread-prompts`
turns on the subclass's own sampler, which spreads each prompt's repeats over the batch "for variety":
the bug of a script whose groups are not one prompt's. Three more of its options carry bugs users write:

- `--resume-adapter DIR` loads an adapter trained before (SFT) into the policy after the trainer is built,
  so TRL's reference is still the base model with the adapters off (h18's cause).
- `--warmup-sft N` (with --no-peft): N steps of supervised warm-up on the sums, in memory, before the trainer is
  built; TRL loads the full-fine-tuning reference from the model's path, the weights before the warm-up (h18's).
- `--lr-scheduler linear --accumulation 4`: the subclass builds its own linear schedule over
  max_steps / accumulation updates, where TRL's max_steps already counts optimizer updates (h22's).
- `--vllm-server`: completions from a vLLM server (TRL's server mode), with no server named: hypotrack starts
  one when it runs the script.
- `--freeze-embeddings --checkpoint-layers reentrant` (with --no-peft): the script checkpoints each layer
  itself with torch's reentrant checkpoint and turns TRL's own off, and no layer input requires grad
  (h19's).
"""

from __future__ import annotations

import argparse
import os
import random
import re


def load_sums(n: int, seed: int):
    from datasets import Dataset

    rng = random.Random(f"sums-{seed}")
    rows = []
    for _ in range(n):
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        rows.append({"prompt": f"{a}+{b}=", "answer": str(a + b)})
    return Dataset.from_list(rows)


def sum_correct(completions, answer, **kwargs):  # TRL's reward signature
    return [1.0 if re.match(rf"^\s*{a}\b", c) else 0.0 for c, a in zip(completions, answer)]


def terse(completions, **kwargs):
    return [1.0 if re.fullmatch(r"\s*-?\d+\s*", c) else 0.0 for c in completions]


def load_model(args):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    if args.freeze_embeddings:  # the largest matrix; the layers are what we train
        model.get_input_embeddings().requires_grad_(False)
    if args.checkpoint_layers == "reentrant":  # activation memory: recompute each layer in the backward pass
        from torch.utils.checkpoint import checkpoint

        for layer in model.model.layers:
            layer.forward = checkpointed(layer.forward, checkpoint)
    return model


def warm_up(model, tokenizer, steps: int, seed: int) -> None:
    """A short SFT before RL, as recipes do: the questions with their answers, next-token loss, in memory."""
    import torch

    rows = load_sums(64, seed + 1000)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    for step in range(steps):
        batch = rows.select(range((step * 8) % 64, (step * 8) % 64 + 8))
        encoded = tokenizer([f"{p}{a}" for p, a in zip(batch["prompt"], batch["answer"])], return_tensors="pt",
                            padding=True)
        labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
        model(**encoded, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def checkpointed(forward, checkpoint):
    def run(hidden_states, *rest, **kwargs):
        return checkpoint(lambda h: forward(h, *rest, **kwargs), hidden_states, use_reentrant=True)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description="GRPO on sums")
    parser.add_argument("--model", default=os.environ.get("MY_MODEL_DIR"))
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--beta", type=float, default=0.0)
    # as the seed framework's scripts spell it: true (group scaling) or false (none); TRL's names work too
    parser.add_argument("--scale-rewards", default="true",
                        type=lambda v: {"true": "group", "false": "none"}.get(v.lower(), v))
    parser.add_argument("--no-peft", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--output-dir", default="outputs/sums")
    parser.add_argument("--no-trainer", action="store_true")
    parser.add_argument("--crash-at-step", type=int, default=0)
    parser.add_argument("--spread-prompts", action="store_true")
    parser.add_argument("--resume-adapter", default="")
    parser.add_argument("--warmup-sft", type=int, default=0)
    parser.add_argument("--lr-scheduler", choices=["constant", "linear"], default="constant")
    parser.add_argument("--accumulation", type=int, default=1)
    parser.add_argument("--freeze-embeddings", action="store_true")
    parser.add_argument("--checkpoint-layers", choices=["off", "reentrant"], default="off")
    parser.add_argument("--vllm-server", action="store_true")
    args = parser.parse_args()
    if args.no_trainer:
        print("nothing to train: --no-trainer")
        return

    import torch
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    class SumsTrainer(GRPOTrainer):
        """The user's subclass: counts its rollouts (a seam hypotrack also wraps)."""

        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.rollouts = 0

        def _generate_and_score_completions(self, inputs):
            self.rollouts += 1
            return super()._generate_and_score_completions(inputs)

        def _get_train_sampler(self, dataset=None):
            sampler = super()._get_train_sampler(dataset)
            if not args.spread_prompts:
                return sampler
            size = self.args.generation_batch_size

            class Spread:  # each batch's indices, a prompt's repeats dealt out across it
                def __len__(self) -> int:
                    return len(sampler)

                def __iter__(self):
                    batch = []
                    for index in sampler:
                        batch.append(index)
                        if len(batch) == size:
                            yield from batch[0::4] + batch[1::4] + batch[2::4] + batch[3::4]
                            batch = []
                    yield from batch

            return Spread()

        def create_scheduler(self, num_training_steps, optimizer=None):
            if args.lr_scheduler == "constant":
                return super().create_scheduler(num_training_steps, optimizer)
            updates = max(1, args.max_steps // args.accumulation)  # one update per `accumulation` batches
            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer or self.optimizer,
                                                                  lambda step: max(0.0, 1 - step / updates))
            return self.lr_scheduler

    class CrashAt(TrainerCallback):
        def on_step_end(self, a, state, control, **k):
            if args.crash_at_step and state.global_step >= args.crash_at_step:
                raise RuntimeError(f"the grading service went away at step {state.global_step}")

    config = GRPOConfig(
        output_dir=args.output_dir, use_cpu=True, report_to="none", seed=args.seed, data_seed=args.seed,
        max_steps=args.max_steps, learning_rate=args.lr, beta=args.beta, scale_rewards=args.scale_rewards,
        per_device_train_batch_size=args.batch_size, num_generations=args.num_generations, max_completion_length=6,
        gradient_accumulation_steps=args.accumulation,
        gradient_checkpointing=args.checkpoint_layers == "off",  # TRL's own, unless the script checkpoints itself
        loss_type="dapo", temperature=1.0, lr_scheduler_type="constant", logging_steps=1, save_strategy="no",
        bf16=False, dataloader_num_workers=0, disable_tqdm=True, reward_weights=[1.0, 0.1],
        **(dict(use_vllm=True, vllm_mode="server", vllm_gpu_memory_utilization=0.1, vllm_max_model_length=256)
           if args.vllm_server else {}))
    lora = None if args.no_peft else LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj",
                                                                                    "o_proj"], task_type="CAUSAL_LM")
    model = load_model(args)
    if args.warmup_sft:
        from transformers import AutoTokenizer

        warm_up(model, AutoTokenizer.from_pretrained(args.model), args.warmup_sft, args.seed)
    trainer = SumsTrainer(model=model, reward_funcs=[sum_correct, terse], args=config,
                          train_dataset=load_sums(256, args.seed), peft_config=lora, callbacks=[CrashAt()])
    if args.resume_adapter:  # continue from the SFT adapter
        from peft import load_peft_weights, set_peft_model_state_dict

        set_peft_model_state_dict(trainer.model, load_peft_weights(args.resume_adapter))
    trainer.train()
    print(f"trained {trainer.state.global_step} steps, {trainer.rollouts} rollouts")


if __name__ == "__main__":
    main()
