"""One GRPO arm: config, model, prompts, rewards, hooks and TRL's trainer, then train.

The loop is TRL's; this module assembles its inputs from the ArmSpec and a
callback streams what TRL logs (plus the hooks' diagnostics) to the runner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from hypotrack.errors import HypotrackError
from hypotrack.imports import import_object
from hypotrack.protocol import ArmSpec, Event, EventWriter, versions
from hypotrack.worker import repairs
from hypotrack.worker.data import load_rows, prepare_prompts, split_heldout
from hypotrack.worker.evaluation import EvalSetup, evaluate, gains
from hypotrack.worker.guards import check_task_signal, check_weights
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


def build_hooks(spec: ArmSpec) -> list:
    from hypotrack.hooks import build_hooks as build

    return build(spec.hooks, spec.hook_settings)


def train(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    import torch
    from transformers import set_seed

    torch.set_num_threads(max(1, spec.threads))
    if spec.deterministic:
        from hypotrack.parity.determinism import enable_determinism

        events.emit(Event.PARAMS, params=enable_determinism(spec.seed))  # keys are already "determinism/..."
    set_seed(spec.seed)
    model, tokenizer = build_model(spec, events)
    rows, heldout = split_heldout(load_rows(spec.data, spec.seed, spec.experiment_dir), spec.data)
    dataset = prepare_prompts(rows, tokenizer, spec.data)

    from hypotrack.worker.rewards import RewardErrorLog, wrap_reward
    from hypotrack.worker.trainer import HypotrackGRPOTrainer

    reward_log = RewardErrorLog()
    rewards = [wrap_reward(import_object(path, spec.experiment_dir, "reward function"), reward_log)
               for path in spec.rewards]
    faults = None
    if spec.plant:
        from hypotrack.toy.faults import build_faults

        faults = build_faults(spec.plant)
        # a fault in a reward function is in the user's function: the evaluation scores with it too
        rewards = faults.reward_functions(rewards, spec.task_reward_index)
    if spec.retry_failed_rewards:
        from hypotrack.worker.rewards import retry_failed

        rewards = [retry_failed(func) for func in rewards]
    peft_config = build_peft_config(spec)
    if faults is not None:  # a fault in the model the run starts from (an adapter trained before it)
        model, peft_config = faults.model(model, peft_config)
    if spec.grpo.get("use_vllm"):
        own_rendezvous_port()
    args = build_config(spec, out_dir)
    if args.use_vllm:  # before the trainer builds vLLM's engine
        from hypotrack.vllm_cpu import apply

        apply()
        serve_in_dtype(spec.generator_dtype, model)
    evaluation = _evaluation(spec, args, heldout, tokenizer, rewards)
    before = evaluate(model, tokenizer, evaluation) if evaluation else {}
    if before:
        events.emit(Event.METRICS, step=0, max_steps=spec.max_steps, metrics=before)
    hooks = build_hooks(spec)
    task_name = rewards[spec.task_reward_index].__name__
    callback = TrainingCallback(events, spec.max_steps, task_name, reward_log)
    trainer = HypotrackGRPOTrainer(
        model=model, reward_funcs=rewards, args=args, train_dataset=dataset, processing_class=tokenizer,
        peft_config=peft_config, hooks=hooks, reward_errors=reward_log, faults=faults,
        callbacks=[callback], task_reward_index=spec.task_reward_index, repair_mask=spec.repair_mask,
        reference_column=spec.data.get("reference_column"),
    )
    callback.trainer = trainer
    _quiet(trainer)
    if faults is not None:
        faults.attach(trainer)
    repairs.apply(trainer, spec)  # the treatments that act on the built trainer, after any planted fault
    events.emit(Event.CONFIG, grpo=_jsonable(args.to_dict()), versions=versions(),
                trainable_parameters=sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
                dataset_rows=len(dataset), heldout_rows=len(heldout) if heldout is not None else 0,
                dataset_digest=rows._fingerprint, dataset_columns=rows.column_names, model_source=model.name_or_path)
    try:
        trainer.train()
    finally:
        trainer.hookset.close()  # remove the torch hooks they registered on the model (a crash skips train end)
    if evaluation:
        after = evaluate(trainer.model, tokenizer, evaluation)
        final = {**after, **gains(before, after)}
        events.emit(Event.METRICS, step=trainer.state.global_step, max_steps=spec.max_steps, metrics=final)
        callback.last_metrics.update(final)
    artifacts = out_dir / "artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "samples.json").write_text(json.dumps(trainer.samples, indent=1))
    (artifacts / "grpo_config.json").write_text(json.dumps(_jsonable(args.to_dict()), indent=1, sort_keys=True))
    if reward_log.first_message:
        (artifacts / "reward_errors.json").write_text(json.dumps(
            {"total": dict(reward_log.total), "first_message": reward_log.first_message}, indent=1))
        events.emit(Event.REWARD_ERRORS, total=dict(reward_log.total), first_message=reward_log.first_message)
    for name, exc in trainer.hookset.write_artifacts(artifacts):
        events.emit(Event.WARNING, message=f"hook {name} could not write its artifacts: {exc}")
    return callback.last_metrics


def _evaluation(spec: ArmSpec, args, heldout, tokenizer, rewards) -> "EvalSetup | None":
    """The held-out evaluation of this arm, or None when the experiment has no held-out rows."""
    if heldout is None or len(heldout) == 0:
        return None
    weights = spec.reward_weights or [1.0] * len(rewards)
    return EvalSetup(rows=prepare_prompts(heldout, tokenizer, spec.data), rewards=rewards, weights=list(weights),
                     task_index=spec.task_reward_index, max_new_tokens=int(args.max_completion_length or 256),
                     temperature=float(args.temperature), seed=spec.seed)


def serve_in_dtype(dtype: str, model: Any) -> None:
    """Have TRL's colocated vLLM engine serve the model in ``dtype`` ('trainer': the model's own; 'auto': leave
    vLLM's choice). TRL builds the engine without a dtype, and vLLM then serves a float32 checkpoint in bfloat16."""
    if dtype == "auto":
        return
    from trl.generation import vllm_generation

    name = str(next(model.parameters()).dtype).removeprefix("torch.") if dtype == "trainer" else dtype
    build = getattr(vllm_generation.LLM, "__wrapped__", vllm_generation.LLM)

    def engine(*args: Any, **kwargs: Any) -> Any:
        kwargs["dtype"] = name
        return build(*args, **kwargs)

    engine.__wrapped__ = build  # a second call wraps vLLM's own class again, not this wrapper
    vllm_generation.LLM = engine


def own_rendezvous_port() -> None:
    """A free port for the torch.distributed group vLLM's colocated engine sets up in this process.

    accelerate fills in MASTER_PORT=29500 for a single process, so two arms training side by side would both
    bind it (EADDRINUSE); a worker launched as one rank of several keeps the port its launcher gave it."""
    import os
    import socket

    if os.environ.get("WORLD_SIZE", "1") != "1" or os.environ.get("MASTER_PORT"):
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        os.environ["MASTER_PORT"] = str(sock.getsockname()[1])
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")


def _quiet(trainer) -> None:
    """Drop transformers' PrinterCallback: with tqdm off it prints every log dict (100+ keys with
    hooks on) to the worker's log each step; the metrics already stream to the runner."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(data, default=str))


class TrainingCallback(TrainerCallback):
    """Streams logged metrics to the runner and stops the arm on weights or a task reward that cannot train
    (the hooks get their events from the trainer's own TapCallback)."""

    def __init__(self, events: EventWriter, max_steps: int, task_reward_name: str,
                 reward_log=None):  # a RewardErrorLog
        self.events, self.max_steps = events, max_steps
        self.task_reward_name, self.reward_log = task_reward_name, reward_log
        # TRL logs each reward function under its own name; the task reward is also logged by role.
        self.task_keys = {f"rewards/{task_reward_name}/mean": "task_reward",
                          f"rewards/{task_reward_name}/std": "task_reward_std"}
        self.trainer = None
        self.last_metrics: dict[str, float] = {}

    def on_step_end(self, args, state, control, **kwargs):
        check_weights(self.trainer.model, state.global_step)
        if self.reward_log is not None:
            check_task_signal(self.reward_log, self.task_reward_name, state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        metrics = {k: float(v) for k, v in (logs or {}).items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not metrics:
            return
        metrics.update({role: metrics[key] for key, role in self.task_keys.items() if key in metrics})
        if "train_runtime" not in metrics:
            self.last_metrics = {**self.last_metrics, **metrics}
        self.events.emit(Event.METRICS, step=state.global_step, max_steps=self.max_steps, metrics=metrics)
