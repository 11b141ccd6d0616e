"""Build and run one GRPO arm: model, tokenizer, prompts, rewards, hooks, TRL trainer."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .arms import ArmSpec
from .data import load_rows, prepare_prompts
from .errors import HypotrackError
from .events import EventWriter
from .imports import import_object
from .worker import resolve_model_path, versions

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
    if spec.deterministic:
        fields["full_determinism"] = True
    try:
        return GRPOConfig(output_dir=str(out_dir / "trainer"), max_steps=spec.max_steps, seed=spec.seed,
                          data_seed=spec.seed, report_to="none", run_name=f"{spec.hypothesis_id}-{spec.key}",
                          **fields)
    except (TypeError, ValueError) as exc:
        raise HypotrackError(f"GRPOConfig rejected the settings of the {spec.arm} arm: {exc}") from None


def build_model(spec: ArmSpec, events: EventWriter | None = None):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model_path(spec.model, events)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        dtype = torch.float32 if not torch.cuda.is_available() else "auto"
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HypotrackError(f"model {spec.model!r} could not be loaded: {first}") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def build_peft_config(spec: ArmSpec):
    if spec.lora is None:
        return None
    from peft import LoraConfig

    fields = {k: v for k, v in spec.lora.items() if k != "enabled"}
    return LoraConfig(task_type="CAUSAL_LM", **fields)


def build_hooks(spec: ArmSpec) -> list:
    from .hooks import get_hook_class

    return [get_hook_class(name)(**spec.hook_settings.get(name, {})) for name in spec.hooks]


def train(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    import torch
    from transformers import set_seed

    torch.set_num_threads(max(1, spec.threads))
    if spec.deterministic:
        from .parity.determinism import enable_determinism

        events.emit("params", params=enable_determinism(spec.seed))  # keys are already "determinism/..."
    set_seed(spec.seed)
    model, tokenizer = build_model(spec, events)
    dataset = prepare_prompts(load_rows(spec.data, spec.seed, spec.experiment_dir), tokenizer, spec.data)

    from .trainers.grpo import HypotrackGRPOTrainer
    from .trainers.rewards import RewardErrorLog, wrap_reward

    reward_log = RewardErrorLog()
    rewards = [wrap_reward(import_object(path, spec.experiment_dir, "reward function"), reward_log)
               for path in spec.rewards]
    args = build_config(spec, out_dir)
    hooks = build_hooks(spec)
    faults = None
    if spec.plant:
        from .toy.faults import build_faults

        faults = build_faults(spec.plant)
    callback = TrainingCallback(events, hooks, spec.max_steps)
    trainer = HypotrackGRPOTrainer(
        model=model, reward_funcs=rewards, args=args, train_dataset=dataset, processing_class=tokenizer,
        peft_config=build_peft_config(spec), hooks=hooks, reward_errors=reward_log, faults=faults,
        callbacks=[callback],
    )
    callback.trainer = trainer
    _quiet(trainer)
    if faults is not None:
        faults.attach(trainer)
    events.emit("config", grpo=_jsonable(args.to_dict()), versions=versions(),
                trainable_parameters=sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
                dataset_rows=len(dataset))
    try:
        trainer.train()
    finally:
        for hook in hooks:  # remove the torch hooks they registered on the model
            close = getattr(hook, "close", None)
            if close is not None:
                close()
    artifacts = out_dir / "artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "samples.json").write_text(json.dumps(trainer.samples, indent=1))
    (artifacts / "grpo_config.json").write_text(json.dumps(_jsonable(args.to_dict()), indent=1, sort_keys=True))
    if reward_log.first_message:
        (artifacts / "reward_errors.json").write_text(json.dumps(
            {"total": dict(reward_log.total), "first_message": reward_log.first_message}, indent=1))
        events.emit("reward_errors", total=dict(reward_log.total), first_message=reward_log.first_message)
    for hook in hooks:
        try:
            hook.write_artifacts(artifacts)
        except Exception as exc:  # noqa: BLE001 - a broken artifact must not fail a finished run
            events.emit("warning", message=f"hook {hook.name} could not write its artifacts: {exc}")
    return callback.last_metrics


def _quiet(trainer) -> None:  # noqa: ANN001
    """Drop transformers' PrinterCallback: with tqdm off it prints every log dict (100+ keys with
    hooks on) to the worker's log each step; the metrics already stream to the runner."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(data, default=str))


from transformers import TrainerCallback  # noqa: E402 - the worker imports this module only to train


class TrainingCallback(TrainerCallback):
    """Streams logged metrics to the runner and gives hooks the events a callback can see."""

    def __init__(self, events: EventWriter, hooks: list, max_steps: int):
        self.events, self.hooks, self.max_steps = events, hooks, max_steps
        self.trainer = None
        self.last_metrics: dict[str, float] = {}

    def _context(self):
        return self.trainer.step_context()

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        for hook in self.hooks:
            metrics = hook.on_train_begin(self._context())
            self.trainer._record(hook, metrics)

    def on_pre_optimizer_step(self, args, state, control, **kwargs):  # noqa: ANN001
        for hook in self.hooks:
            before = getattr(hook, "on_before_optimizer_step", None)
            if before is not None:
                self.trainer._record(hook, before(self._context()))

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self._check_finite_weights(state.global_step)
        for hook in self.hooks:
            self.trainer._record(hook, hook.on_step_end(self._context()))

    def _check_finite_weights(self, step: int) -> None:
        """A NaN/inf in the weights means the next loss is NaN; stop now with the reason, not later in sampling."""
        import torch

        params = [p.detach() for p in self.trainer.model.parameters() if p.requires_grad]
        if not params:
            return
        norms = torch._foreach_norm(params)
        if not torch.isfinite(torch.stack(norms)).all():
            raise HypotrackError(f"the weights became non-finite after step {step} (the next loss would be NaN); "
                                 "the arm was stopped: lower the learning rate or check the advantages")

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        metrics = {k: float(v) for k, v in (logs or {}).items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not metrics:
            return
        loss = metrics.get("loss")
        if loss is not None and not math.isfinite(loss):
            raise HypotrackError(f"the loss became {loss} at step {state.global_step}; the arm was stopped")
        if "train_runtime" not in metrics:
            self.last_metrics = {**self.last_metrics, **metrics}
        self.events.emit("metrics", step=state.global_step, max_steps=self.max_steps, metrics=metrics)
