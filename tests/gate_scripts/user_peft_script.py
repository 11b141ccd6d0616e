"""A user's GRPO script that builds its own model, the way users write them, with `hypotrack.watch(trainer)`.

The model the trainer gets is what the user built (the toy arithmetic model stands in for theirs):

    --setup peft_model        a PeftModel made with get_peft_model and passed in (TRL trains that adapter)
    --setup peft_model_sft    the same after a short supervised stage on the adapter (a trained adapter)
    --setup peft_config       LoRA through the trainer's peft_config
    --setup full              full fine-tuning
    --freeze lora_a_only      the user's freezing helper leaves only lora_A trainable (lora_B stays zero)
    --freeze lower_layers     the user freezes the lower half of the layers (healthy: the rest still learns)
    --beta B --num-iterations N --grad-accum K
    --fault NAME              a planted fault, as a script would carry it (see FAULTS)
    --twice                   a second trainer (a second stage) watched in the same process

Prints one line per trainer: MARKER + JSON (the gate failures, TRL's kl, the recorded triage's ranking).
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

MARKER = "@@gate-script@@"
# fault -> what the script does wrong
FAULTS = {
    "none": "nothing: a healthy script",
    "dropout_in_old_logps": "attention dropout left on with num_iterations 2 (h08's ratio gate)",
    "wrong_reference": "the KL reference is not the starting policy (h18's ref_kl gate)",
    "no_gradient": "nothing trainable is reached by the loss (h19's grad gate)",
    "sampling_temperature_not_scored": "sampled at temperature 0.7, scored at 1.0 (h14's parity gate)",
    "lora_not_synced": "the generator samples without the trained adapters (h06's lora gate)",
    "own_optimizer_before_peft": "the script's own AdamW over model.parameters(), passed with a peft_config: it holds "
                                 "none of the adapters TRL adds (h25's moved gate)",
}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]
SETUPS = ["peft_model", "peft_model_sft", "peft_config", "full"]
# What each gate logs at a step (the reading a failure reports).
READINGS = ("diag/gates/ratio_logp_max_diff", "diag/gates/ref_logp_max_diff", "diag/gates/grad_norm",
            "diag/gates/unmoved_share",
            "diag/gates/sampling_gap_mean", "diag/gates/lora_gen_adapter_active_share",
            "diag/gates/lora_gen_checksum_rel_diff")


def questions(n: int, seed: int) -> Any:
    from datasets import Dataset

    rng = random.Random(f"questions-{seed}")
    rows = []
    for _ in range(n):
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        rows.append({"prompt": f"{a}+{b}=", "gold": str(a + b)})
    return Dataset.from_list(rows)


def correct(completions: list[str], gold: list[str], **kwargs: Any) -> list[float]:
    return [1.0 if re.match(rf"^\s*{g}\b", c) else 0.0 for c, g in zip(completions, gold)]


def short(completions: list[str], **kwargs: Any) -> list[float]:
    return [1.0 if re.fullmatch(r"\s*-?\d+\s*", c) else 0.0 for c in completions]


def supervised_stage(model: Any, tokenizer: Any, steps: int = 30) -> None:
    """The user's SFT stage before GRPO: a few steps on worked examples, which move the adapter off zero."""
    import torch

    rng = random.Random("sft")
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    model.train()
    for _ in range(steps):
        texts = []
        for _ in range(16):
            a, b = rng.randint(0, 49), rng.randint(0, 49)
            texts.append(f"{a}+{b}={a + b}{tokenizer.eos_token or ''}")  # the answer, then the end of the text
        batch = tokenizer(texts, return_tensors="pt", padding=True)
        labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def freeze(model: Any, how: str) -> None:
    """The user's own freezing helper."""
    if how == "lora_a_only":  # meant to train "the adapters", matches only lora_A
        for name, param in model.named_parameters():
            param.requires_grad_("lora_A" in name)
    elif how == "lower_layers":
        layers = [n for n, _ in model.named_modules() if re.search(r"layers\.\d+$", n)]
        lower = set(layers[: len(layers) // 2])
        for name, param in model.named_parameters():
            if any(name.startswith(layer + ".") for layer in lower):
                param.requires_grad_(False)


def build(out: Path, args: argparse.Namespace, stage: int = 0) -> Any:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from hypotrack.toy.lab import ensure_model

    torch.manual_seed(args.seed)
    path = str(ensure_model("arith"))
    fault = args.fault
    settings: dict[str, Any] = dict(
        output_dir=str(out / f"stage{stage}"), use_cpu=True, report_to="none", seed=args.seed, max_steps=args.steps,
        logging_steps=1, save_strategy="no", per_device_train_batch_size=16 // args.grad_accum,
        gradient_accumulation_steps=args.grad_accum, num_generations=4, max_completion_length=6,
        learning_rate=args.lr, loss_type="dapo", beta=args.beta, temperature=1.0, lr_scheduler_type="constant",
        bf16=False, dataloader_num_workers=0, disable_tqdm=True, reward_weights=[1.0, 0.1],
        num_iterations=args.num_iterations, generation_batch_size=16,
    )
    model_kwargs: dict[str, Any] = {"dtype": torch.float32}
    if fault == "dropout_in_old_logps":
        model_kwargs["attention_dropout"] = 0.1
    if fault == "no_gradient" and args.setup == "full":  # the script checkpoints its layers itself, TRL's own off
        settings["gradient_checkpointing"] = False
    if fault == "sampling_temperature_not_scored":
        settings["generation_kwargs"] = {"temperature": 0.7}
    model = AutoModelForCausalLM.from_pretrained(path, **model_kwargs)
    tokenizer = AutoTokenizer.from_pretrained(path)
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=args.lora_dropout, target_modules=TARGETS, task_type="CAUSAL_LM")
    peft_config = None
    if args.setup.startswith("peft_model"):
        model = get_peft_model(model, lora)
        if args.setup == "peft_model_sft":
            supervised_stage(model, tokenizer)
    elif args.setup == "peft_config":
        peft_config = lora
    if args.freeze != "none":
        freeze(model, args.freeze)
    if fault == "no_gradient" and args.setup == "full":  # its own reentrant checkpointing over frozen embeddings
        checkpoint_layers_over_frozen_embeddings(model)
    optimizers = (None, None)
    if fault == "own_optimizer_before_peft":  # built before TRL wraps the model with the adapters
        optimizers = (torch.optim.AdamW(model.parameters(), lr=args.lr), None)
    trainer = GRPOTrainer(model=model, reward_funcs=[correct, short], args=GRPOConfig(**settings),
                          train_dataset=questions(256, args.seed + stage), processing_class=tokenizer,
                          peft_config=peft_config, optimizers=optimizers)
    if fault == "no_gradient" and args.setup != "full":  # lora_B frozen at zero: lora_A gets no gradient either
        for name, param in trainer.model.named_parameters():
            if "lora_B" in name:
                param.requires_grad_(False)
    if fault == "wrong_reference":
        plant_wrong_reference(trainer)
    if fault == "lora_not_synced":
        from hypotrack.faults.manifest import build_faults

        for planted in build_faults(["lora_not_synced"]):
            planted.attach(trainer)
    return trainer


def checkpoint_layers_over_frozen_embeddings(model: Any) -> None:
    """Activation memory, the script's way: each layer recomputed in the backward pass by torch's reentrant checkpoint,
    the embeddings frozen, so no layer input requires grad and only what comes after the layers trains."""
    from torch.utils.checkpoint import checkpoint

    model.get_input_embeddings().requires_grad_(False)
    for layer in model.model.layers:
        forward = layer.forward

        def checkpointed(hidden_states: Any, *rest: Any, forward: Any = forward, **kwargs: Any) -> Any:
            return checkpoint(lambda h: forward(h, *rest, **kwargs), hidden_states, use_reentrant=True)

        layer.forward = checkpointed


def plant_wrong_reference(trainer: Any) -> None:
    """The reference is not the starting policy: another checkpoint under full fine-tuning; under a trained adapter,
    the base model with the adapter off (TRL's reference before PR #6591, and with PEFT 0.17-0.19 target_parameters)."""
    import torch

    model = trainer.accelerator.unwrap_model(trainer.model)
    if trainer.ref_model is not None:
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for param in trainer.ref_model.parameters():
                param.add_(torch.randn(param.shape, generator=generator) * 0.05)
    elif hasattr(model, "peft_config") and "ref" in model.peft_config:
        model.delete_adapter("ref")
        model.set_adapter("default")
    else:
        raise SystemExit("wrong_reference needs beta > 0 and full fine-tuning or a trained adapter (peft_model_sft)")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--setup", default="peft_config", choices=SETUPS)
    parser.add_argument("--freeze", default="none", choices=["none", "lora_a_only", "lower_layers"])
    parser.add_argument("--fault", default="none", choices=sorted(FAULTS))
    parser.add_argument("--beta", type=float, default=0.0)
    parser.add_argument("--num-iterations", type=int, default=1)
    parser.add_argument("--grad-accum", type=int, default=1)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--lora-dropout", type=float, default=0.0)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--twice", action="store_true")
    parser.add_argument("--stop-on", action="append")
    return parser.parse_args(argv)


def main() -> None:
    """One script run; or, with --batch FILE (a JSON list of argument lists), each run in turn in this process (the
    gate matrix pays Python's and torch's start-up once)."""
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--batch":
        for argv in json.loads(Path(sys.argv[2]).read_text()):
            run(parse(argv))
        return
    run(parse())


def run(args: argparse.Namespace) -> None:
    import hypotrack

    for stage in range(2 if args.twice else 1):
        trainer = build(args.out, args, stage)
        session = hypotrack.watch(trainer, stop_on=args.stop_on)  # the same line for the second trainer
        trainer.train()
        history = trainer.state.log_history
        print(MARKER + json.dumps({
            "run": args.out.name, "stage": stage, "global_step": trainer.state.global_step, "outcome": session.outcome,
            "failures": [{"gate": f.gate, "hypothesis": f.hypothesis, "step": f.step, "message": f.message}
                         for f in session.failures()],
            "kl": [row.get("kl") for row in history if "loss" in row],
            "readings": {key: [row.get(key) for row in history if "loss" in row] for key in READINGS},
            "ranking": [e.id for e in session.report.ranking] if session.report else [],
            "suspects": [e.id for e in session.report.ranking if e.suspect] if session.report else [],
            "triage_id": session.triage_id,
        }), flush=True)


if __name__ == "__main__":
    main()
