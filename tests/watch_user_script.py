"""A user's own GRPO training script with one `hypotrack.watch(trainer)` line.

Its own GRPOTrainer subclass, its own data loader and reward function names, report_to="mlflow" when
MLFLOW_TRACKING_URI is set; the toy arithmetic model stands in for the user's model (built locally).
A planted fault is set up the way a user's script would carry it:

    python tests/watch_user_script.py OUT [--fault NAME] [--steps N] [--stop-on gates] [--hypotheses all]
                                          [--hooks all] [--no-watch]

faults: wrong_reference (h03: the reference is another checkpoint), dropout_in_old_logps (h08: dropout
left on with num_iterations 2), frozen_lora_b (h06: adapters that cannot train), own_checkpointing (h19: full
fine-tuning with frozen embeddings, each layer checkpointed by the script with torch's reentrant checkpoint;
own_checkpointing_lora: the same under LoRA, where nothing trainable is left in reach and backward raises),
lora_not_synced (h06), own_optimizer_before_peft (h25: the script's AdamW over model.parameters(), passed with a
peft_config, so it holds none of the adapters), sampling_temperature_not_scored (h14), kl_wrong_sign (h03); crash (the task reward raises on the second
batch); two_iterations (healthy, with the old logprobs recomputed). Prints one line: MARKER + JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from pathlib import Path

MARKER = "@@watched-run@@"


def load_questions(n: int, seed: int):
    from datasets import Dataset

    rng = random.Random(f"questions-{seed}")
    rows = []
    for _ in range(n):
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        rows.append({"prompt": f"{a}+{b}=", "gold": str(a + b)})
    return Dataset.from_list(rows)


def exact_answer(completions, gold, **kwargs):  # TRL's reward signature
    return [1.0 if re.match(rf"^\s*{g}\b", c) else 0.0 for c, g in zip(completions, gold)]


def crashes_on_second_batch(completions, gold, **kwargs):
    crashes_on_second_batch.calls += 1
    if crashes_on_second_batch.calls == 2:
        raise RuntimeError("the grading service went away")
    return exact_answer(completions, gold)


crashes_on_second_batch.calls = 0


def short_answer(completions, **kwargs):
    return [1.0 if re.fullmatch(r"\s*-?\d+\s*", c) else 0.0 for c in completions]


def make_trainer_class():
    from trl import GRPOTrainer

    class MyGRPOTrainer(GRPOTrainer):
        """The user's subclass: it overrides a seam hypotrack wraps, and counts its own rollouts."""

        rollouts = 0

        def _generate_and_score_completions(self, inputs):
            self.rollouts += 1
            return super()._generate_and_score_completions(inputs)

    return MyGRPOTrainer


def build(out: Path, fault: str, steps: int, seed: int = 0, callbacks: list | None = None):
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig

    from hypotrack.toy.lab import ensure_model

    torch.manual_seed(seed)
    path = str(ensure_model("arith"))
    report_to = "mlflow" if os.environ.get("MLFLOW_TRACKING_URI") else "none"
    settings = dict(
        output_dir=str(out), use_cpu=True, report_to=report_to, seed=seed, data_seed=seed, max_steps=steps,
        logging_steps=1, save_strategy="no", per_device_train_batch_size=16, num_generations=4,
        max_completion_length=6, learning_rate=5e-3, loss_type="dapo", beta=0.0, temperature=1.0,
        lr_scheduler_type="constant", bf16=False, dataloader_num_workers=0, disable_tqdm=True,
        reward_weights=[1.0, 0.1], run_name=f"user-{fault}",
    )
    peft = True
    model_kwargs = {"dtype": torch.float32}
    if fault == "wrong_reference":
        settings["beta"], peft = 0.04, False
        settings["learning_rate"] = 3e-4
    if fault == "kl_wrong_sign":
        settings["beta"] = 0.04
    if fault == "sampling_temperature_not_scored":
        settings["generation_kwargs"] = {"temperature": 0.7}
    if fault in ("dropout_in_old_logps", "two_iterations"):  # two_iterations: healthy, old logprobs recomputed
        settings["num_iterations"] = 2
    if fault == "dropout_in_old_logps":
        model_kwargs["attention_dropout"] = 0.1
    if fault.startswith("own_checkpointing"):  # the script checkpoints its layers itself, TRL's own off
        settings.update(gradient_checkpointing=False)
    if fault == "own_checkpointing":
        settings.update(learning_rate=3e-4)
        peft = False
    model = AutoModelForCausalLM.from_pretrained(path, **model_kwargs)
    if fault.startswith("own_checkpointing"):
        checkpoint_layers_over_frozen_embeddings(model)
    lora = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                      task_type="CAUSAL_LM") if peft else None
    rewards = [exact_answer, short_answer] if fault != "crash" else [crashes_on_second_batch, short_answer]
    optimizers = (None, None)
    if fault == "own_optimizer_before_peft":  # the script's own AdamW, built before TRL adds the adapters
        import torch

        optimizers = (torch.optim.AdamW(model.parameters(), lr=settings["learning_rate"]), None)
    trainer = make_trainer_class()(model=model, reward_funcs=rewards, args=GRPOConfig(**settings),
                                   train_dataset=load_questions(256, seed), peft_config=lora, callbacks=callbacks,
                                   optimizers=optimizers)
    plant(trainer, fault)
    return trainer


def checkpoint_layers_over_frozen_embeddings(model) -> None:
    from torch.utils.checkpoint import checkpoint

    model.get_input_embeddings().requires_grad_(False)
    for layer in model.model.layers:
        forward = layer.forward

        def run(hidden_states, *rest, forward=forward, **kwargs):
            return checkpoint(lambda h: forward(h, *rest, **kwargs), hidden_states, use_reentrant=True)

        layer.forward = run


def plant(trainer, fault: str) -> None:
    import torch

    if fault == "wrong_reference":  # the reference came from another checkpoint than the policy
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for param in trainer.ref_model.parameters():
                param.add_(torch.randn(param.shape, generator=generator) * 0.05)
    if fault == "frozen_lora_b":  # the B matrices were frozen: A gets no gradient either while B is 0
        for name, param in trainer.model.named_parameters():
            if "lora_B" in name:
                param.requires_grad_(False)
    if fault in ("lora_not_synced", "kl_wrong_sign"):
        from hypotrack.faults.manifest import build_faults

        for planted in build_faults([fault]):
            planted.attach(trainer)


def report_line(result: dict) -> None:
    """One write for the marker, the JSON and its newline: ranks under one launcher share an unbuffered pipe,
    and a print's separate newline would let another rank's output land on the result's line."""
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--fault", default="none")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--stop-on", action="append")
    parser.add_argument("--hypotheses")
    parser.add_argument("--hooks")
    parser.add_argument("--no-watch", action="store_true")
    parser.add_argument("--callback", action="store_true", help="HypotrackCallback in callbacks=[...] instead")
    args = parser.parse_args()
    import hypotrack

    options = dict(hypotheses=args.hypotheses, hooks=args.hooks, stop_on=args.stop_on)
    callbacks = [hypotrack.HypotrackCallback(**options)] if args.callback else []
    trainer = build(args.out, args.fault, args.steps, callbacks=callbacks)
    session = callbacks[0] if callbacks else None
    if not args.no_watch and not args.callback:
        session = hypotrack.watch(trainer, **options)
    try:
        trainer.train()
    except RuntimeError as exc:  # the planted crash; the session recorded the run before this
        report_line({"crashed": str(exc), "outcome": session.outcome, "triage_id": session.triage_id})
        raise SystemExit(3) from None
    if session is None:
        trainer.save_state()  # the plain run's log, for `hypotrack triage OUT` to compare with
    result = {"fault": args.fault, "global_step": trainer.state.global_step, "rollouts": trainer.rollouts,
              "output_dir": str(args.out), "process": trainer.accelerator.process_index}
    if os.environ.get("MLFLOW_TRACKING_URI") and trainer.is_world_process_zero():
        import mlflow

        last = mlflow.last_active_run()
        result["mlflow_run_id"] = last.info.run_id if last else None
    if session is not None:
        result.update(outcome=session.outcome, triage_id=session.triage_id,
                      stopped_by=str(session.stopped_by) if session.stopped_by else None,
                      failures=[{"gate": f.gate, "hypothesis": f.hypothesis, "step": f.step}
                                for f in session.failures()],
                      ranks={e.id: e.rank for e in session.report.ranking} if session.report else {})
    report_line(result)


if __name__ == "__main__":
    main()
