"""One GRPO arm: config, model, prompts and rewards, TRL's own GRPOTrainer with the arm's session, then train.

The loop is TRL's; this module assembles its inputs from the ArmSpec, and the session (hypotrack/session/)
attaches the faults, treatments, hooks, guards and the metrics stream to the runner, exactly as it does to a
user's script in a command experiment. The held-out evaluation before and after training is the worker's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypotrack.errors import HypotrackError
from hypotrack.imports import import_object
from hypotrack.protocol import ArmSpec, Event, EventWriter
from hypotrack.worker.data import load_rows, prepare_prompts, split_heldout
from hypotrack.worker.evaluation import EvalSetup, evaluate, gains
from hypotrack.worker.model import build_model, build_peft_config

# Settings hypotrack chooses unless the experiment says otherwise: per-step curves, no
# checkpoints (short diagnostic runs), no progress bars (the runner draws its own).
DEFAULTS: dict[str, Any] = {"logging_steps": 1, "save_strategy": "no", "disable_tqdm": True,
                            "dataloader_num_workers": 0}


def build_config(spec: ArmSpec, out_dir: Path):
    import torch
    from trl import GRPOConfig

    fields = {**DEFAULTS, **spec.grpo}
    if spec.reward_weights is not None:
        fields["reward_weights"] = spec.reward_weights
    if not torch.cuda.is_available():
        fields.setdefault("use_cpu", True)
        fields["bf16"] = False
        fields["fp16"] = False
        if fields.get("use_vllm"):
            from hypotrack.vllm_cpu import CPU_MEMORY_UTILIZATION

            # vLLM reads this share of the machine's RAM on a CPU, where TRL's 0.9 is refused
            fields.setdefault("vllm_gpu_memory_utilization", CPU_MEMORY_UTILIZATION)
    if spec.deterministic:
        fields["full_determinism"] = True
    try:
        return GRPOConfig(output_dir=str(out_dir / "trainer"), max_steps=spec.max_steps, seed=spec.seed,
                          data_seed=spec.seed, report_to="none", run_name=f"{spec.hypothesis_id}-{spec.key}",
                          **fields)
    except (TypeError, ValueError) as exc:
        raise HypotrackError(f"GRPOConfig rejected the settings of the {spec.arm} arm: {exc}") from None


def train(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    import torch
    from transformers import set_seed
    from trl import GRPOTrainer

    from hypotrack.session import ArmSession, generator

    torch.set_num_threads(max(1, spec.threads))
    if spec.deterministic:
        from hypotrack.parity.determinism import enable_determinism

        events.emit(Event.PARAMS, params=enable_determinism(spec.seed))  # keys are already "determinism/..."
    set_seed(spec.seed)
    model, tokenizer = build_model(spec, events)
    rows, heldout = split_heldout(load_rows(spec.data, spec.seed, spec.experiment_dir), spec.data)
    dataset = prepare_prompts(rows, tokenizer, spec.data)
    session = ArmSession.for_arm(spec, events)
    # the functions as this arm trains with them, and as the held-out evaluation scores with them
    rewards = session.reward_functions([import_object(path, spec.experiment_dir, "reward function")
                                        for path in spec.rewards], spec.task_reward_index)
    if spec.grpo.get("use_vllm"):  # before accelerate fills in its default port, which two arms would share
        generator.own_rendezvous_port()
    args = build_config(spec, out_dir)
    model, peft_config = session.trainer_inputs(model, build_peft_config(spec), args)
    try:  # from here a vLLM server may be running for the arm: close() stops it, whatever fails
        evaluation = _evaluation(spec, args, heldout, tokenizer, rewards)
        before = evaluate(model, tokenizer, evaluation) if evaluation else {}
        if before:
            events.emit(Event.METRICS, step=0, max_steps=spec.max_steps, metrics=before)
        trainer = GRPOTrainer(model=model, reward_funcs=rewards, args=args, train_dataset=dataset,
                              processing_class=tokenizer, peft_config=peft_config)
        _quiet(trainer)
        session.attach(trainer, heldout_rows=len(heldout) if heldout is not None else 0,
                       dataset_digest=rows._fingerprint, dataset_columns=rows.column_names,
                       model_source=model.name_or_path)
        trainer.train()
    finally:
        session.close()
    if evaluation:
        after = evaluate(trainer.model, tokenizer, evaluation)
        final = {**after, **gains(before, after)}
        events.emit(Event.METRICS, step=trainer.state.global_step, max_steps=spec.max_steps, metrics=final)
        session.last_metrics.update(final)
    session.finish(out_dir / "artifacts")
    return session.last_metrics


def _evaluation(spec: ArmSpec, args, heldout, tokenizer, rewards) -> "EvalSetup | None":
    """The held-out evaluation of this arm, or None when the experiment has no held-out rows."""
    if heldout is None or len(heldout) == 0:
        return None
    weights = spec.reward_weights or [1.0] * len(rewards)
    return EvalSetup(rows=prepare_prompts(heldout, tokenizer, spec.data), rewards=rewards, weights=list(weights),
                     task_index=spec.task_reward_index, max_new_tokens=int(args.max_completion_length or 256),
                     temperature=float(args.temperature), seed=spec.seed)


def _quiet(trainer) -> None:
    """Drop transformers' PrinterCallback: with tqdm off it prints every log dict (100+ keys with
    hooks on) to the worker's log each step; the metrics already stream to the runner."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
