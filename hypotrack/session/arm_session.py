"""`ArmSession`: everything hypotrack attaches to one GRPOTrainer, in one declared order.

Every arm trains a stock GRPOTrainer (or the user's own subclass) with a session attached: hypotrack's worker
builds the trainer and attaches one (worker/grpo_arm.py); a command experiment's script builds its own and
hypotrack's bootstrap attaches one when its constructor returns (command/inject.py); `hypotrack.watch` attaches
one in the user's process (with no event stream, guards or samples: it is the user's run, not an arm). The
parts, in the order `attach` puts them on, each wrapping the seams it needs outside the parts before it:

1. planted faults: the run being debugged, as if the user's script carried the bug;
2. treatments: the hypothesis's fix, acting on that run (after the fault it undoes);
3. hooks: the tap that turns TRL's seams into the hooks' events;
4. reward-error counting, and the task-signal guard at each step end;
5. samples kept for samples.json;
6. the NaN guard on each micro-batch's loss, and non-finite weights at each step end;
7. the metrics stream: what TRL logs, plus the task reward by role, to the runner;
8. the CONFIG event: the resolved GRPOConfig, the versions, the data and the trainable parameters.

The reward functions get their layers the same way, whoever built the trainer (`reward_functions`): the
faults', the treatments', then the counting. Before the trainer is built, `trainer_inputs` lets the faults
change the model it is built with and readies vLLM's engine (session/generator.py). `finish` writes the arm's files: samples.json,
grpo_config.json, reward_errors.json and each hook's artifacts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypotrack.faults.base import PlantedFault
from hypotrack.hooks.hookset import HookSet
from hypotrack.protocol import Event, EventWriter, versions
from hypotrack.session import guards, inference, trl_seams
from hypotrack.session.inference import Inference
from hypotrack.session.reward_functions import RewardErrorLog, counted
from hypotrack.session.samples import SampleKeeper
from hypotrack.session.tap import TrainerTap
from hypotrack.session.trl_seams import Seam, wrap

# The parts of a session, in the order `attach` puts them on (the module docstring says why).
PARTS = ("faults", "treatments", "hooks", "reward_errors", "samples", "nan_guard", "metrics", "config")


class ArmSession:
    def __init__(self, *, hooks: list[Any] | None = None, faults: list[Any] | None = None,
                 treatments: list[Any] | None = None, task_reward: str | None = None,
                 task_index: int | None = None, reference_column: str | None = None, events: EventWriter | None = None,
                 max_steps: int | None = None, guards: bool = True, samples: bool = True,
                 sample_every: int = 10, generator_dtype: str = "auto") -> None:
        """``hooks``, ``faults`` and ``treatments`` are built units; the task reward is the trainer's reward
        function at ``task_index``, else the one TRL logs as ``task_reward``, else its heaviest (the first of
        equals); ``events`` is the runner's stream (None: nothing is streamed, as under `watch`); ``guards``: stop
        on a NaN loss, non-finite weights or no task signal, and count reward errors; ``samples``: keep samples
        for samples.json; ``generator_dtype``: the dtype vLLM serves in, where the trainer generates with it."""
        self.hookset = HookSet(hooks or [])
        self.faults = list(faults or [])
        self.treatments = list(treatments or [])
        self.task_reward, self.fixed_task_index = task_reward, task_index
        self.reference_column = reference_column
        self.inferred: list[Inference] = []  # declarations filled in from the run itself (session/inference.py)
        self.events, self.max_steps = events, max_steps
        self.generator_dtype = generator_dtype
        self.generator_server: Any = None  # the vLLM server started for a run in server mode, stopped by close()
        self.guards = guards
        self.samples = SampleKeeper(sample_every) if samples else None
        self.reward_errors = RewardErrorLog()
        self.tap = TrainerTap(self.hookset, reference_column=reference_column)
        self.trainer: Any = None
        self.last_metrics: dict[str, float] = {}
        # Checks run after every other part at each step end, with (state, control): watch's gates stop training here
        self.step_end_checks: list[Callable[[Any, Any], None]] = []
        self._layered: set[int] = set()  # ids of the reward functions this session already layered

    @classmethod
    def for_arm(cls, spec: Any, events: EventWriter) -> ArmSession:  # an ArmSpec
        """The session of one arm x seed of a `hypotrack run`, from its spec."""
        from hypotrack.faults.manifest import build_faults
        from hypotrack.hooks import build_hooks
        from hypotrack.treatments.manifest import build_treatments

        # hypotrack's worker builds the trainer with the spec's reward functions in order; a user's script names
        # its own, and the task reward is found by the name the experiment gives it
        task_index = None if spec.command else spec.task_reward_index
        return cls(hooks=build_hooks(spec.hooks, spec.hook_settings), faults=build_faults(spec.plant),
                   treatments=build_treatments(spec.treatments), task_reward=spec.task_reward_name,
                   task_index=task_index, reference_column=spec.data.get("reference_column"), events=events,
                   max_steps=spec.max_steps, generator_dtype=spec.generator_dtype)

    # ----------------------------------------------------------------- before the trainer is built

    def reward_functions(self, functions: list[Any], task_index: int) -> list[Any]:
        """The reward functions as this arm trains and evaluates with them: the faults' layer (the bug is in the
        user's function), the treatments' (they act on it), then the error counting (what the trainer gets).
        A reward model (a torch module) is left as it is; a function layered once is not layered again."""
        functions = list(functions)
        if all(id(f) in self._layered or _is_module(f) for f in functions):
            return functions
        for fault in self.faults:
            functions = fault.reward_functions(functions, task_index)
        for treatment in self.treatments:
            functions = treatment.reward_functions(functions)
        if self.guards:
            functions = [f if _is_module(f) else counted(f, self.reward_errors) for f in functions]
        self._layered |= {id(f) for f in functions}
        return functions

    def trainer_inputs(self, model: Any, peft_config: Any, config: Any) -> tuple[Any, Any]:
        """(model, peft_config) as the trainer is built with them: the faults' changes (an adapter trained before
        the run; a script that loads its model by name is left as it is), and vLLM's engine readied where the
        config generates with it (TRL builds the engine in the trainer's constructor)."""
        if hasattr(model, "parameters"):
            for fault in self.faults:
                model, peft_config = fault.model(model, peft_config)
        if getattr(config, "use_vllm", False):
            from hypotrack.session import generator

            generator.own_rendezvous_port()
            self.generator_server = generator.ready_engine(model, self.generator_dtype, config)
            if self.generator_server is not None and self.events is not None:  # say what hypotrack started
                self.events.emit(Event.PARAMS, params={
                    "vllm_server": f"started by hypotrack (the settings name no server): {self.generator_server.url}, "
                                   f"log {self.generator_server.log_path}"})
        return model, peft_config

    # ----------------------------------------------------------------- attaching

    def attach(self, trainer: Any, **described: Any) -> ArmSession:
        """Put every part on ``trainer`` in the declared order; ``described`` adds to (or corrects) what the CONFIG
        event says of the data (dataset_rows, heldout_rows, dataset_digest, dataset_columns, model_source)."""
        self.trainer = trainer
        if hasattr(trainer, "reward_func_names"):  # a callback attaching from Trainer.__init__ waits for train begin
            self.tap.task_index = self.task_index(trainer)
            self.infer(trainer)
        for fault in self.faults:
            fault.attach(trainer)
        self._planted_rewards(trainer)
        for treatment in self.treatments:
            treatment.attach(trainer)
        self.hookset.record = lambda key, value: trl_seams.record_metric(trainer, key, value)
        self._tap_seams(trainer)
        if self.guards or self.faults or self.treatments:
            trainer.reward_funcs = self.reward_functions(list(trainer.reward_funcs), self.tap.task_index)
        self._rollout_seam(trainer)
        if self.guards:
            wrap(trainer, Seam.TRAINING_STEP, lambda step: _nan_guarded(step, trainer))
        trainer.add_callback(_session_callback(self))
        if self.events is not None:
            self.events.emit(Event.CONFIG, **{**self.describe(trainer), **described})
        return self

    def infer(self, trainer: Any) -> None:
        """Fill in what the user did not declare and the run implies (once): the reference column from the task
        reward's own arguments. Before the reward functions are layered, so the user's signature is read."""
        if self.reference_column is not None or self.inferred:
            return
        columns = getattr(getattr(trainer, "train_dataset", None), "column_names", None) or []
        found = inference.reference_column(trainer.reward_funcs[self.tap.task_index], columns)
        if found is not None:
            self.reference_column = self.tap.reference_column = found.value
            self.inferred.append(found)

    def task_index(self, trainer: Any) -> int:
        names = list(trainer.reward_func_names)
        if self.fixed_task_index is not None:
            return self.fixed_task_index
        if self.task_reward is None:
            weights = [float(w) for w in trainer.reward_weights]
            return max(range(len(weights)), key=lambda i: (weights[i], -i))  # the heaviest, else the first
        if self.task_reward not in names:
            from hypotrack.errors import HypotrackError

            raise HypotrackError(f"the task reward {self.task_reward!r} is not one of the reward functions this "
                                 f"GRPOTrainer logs ({', '.join(names)})")
        return names.index(self.task_reward)

    def _planted_rewards(self, trainer: Any) -> None:
        """The faults that change the rewards TRL computed, on its reward seam (inside every later part)."""
        planted = [fault for fault in self.faults if type(fault).rewards is not PlantedFault.rewards]
        if not planted:
            return
        tap = self.tap

        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def calculate_rewards(inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> Any:
                result = original(inputs, prompts, completions, completion_ids_list)
                for fault in planted:
                    result = fault.rewards(trainer, result, inputs, completions, tap.task_index)
                return result

            return calculate_rewards

        wrap(trainer, Seam.REWARDS, make)

    def _tap_seams(self, trainer: Any) -> None:
        """The seams the hooks' events come from: the rewards each batch got, the policy's logprobs and the loss."""
        tap = self.tap

        def rewards(original: Callable[..., Any]) -> Callable[..., Any]:
            def calculate_rewards(inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> Any:
                result = original(inputs, prompts, completions, completion_ids_list)
                tap.rewards_scored(trainer, inputs, prompts, completions, result)
                return result

            return calculate_rewards

        def logps(original: Callable[..., Any]) -> Callable[..., Any]:
            def per_token_logps(*args: Any, **kwargs: Any) -> Any:
                result = original(*args, **kwargs)
                tap.logps_computed(result)
                return result

            return per_token_logps

        def loss(original: Callable[..., Any]) -> Callable[..., Any]:
            def compute_loss(model: Any, inputs: Any) -> Any:
                tap.begin_loss()
                value = original(model, inputs)
                tap.end_loss(trainer, inputs, value)
                return value

            return compute_loss

        wrap(trainer, Seam.REWARDS, rewards)
        wrap(trainer, Seam.LOGPS, logps)
        wrap(trainer, Seam.LOSS, loss)

    def _rollout_seam(self, trainer: Any) -> None:
        """After each rollout: its reward errors logged, samples kept, and the hooks' rollout event."""
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def rollout(inputs: Any) -> Any:
                output = original(inputs)
                errors = self.reward_errors.take_step_counts() if self.guards else {}
                if self.guards:
                    trl_seams.record_metric(trainer, "reward_errors", float(sum(errors.values())))
                    for name in trainer.reward_func_names:
                        trl_seams.record_metric(trainer, f"reward_errors/{name}", float(errors.get(name, 0)))
                scored = self.tap.take_scored()
                if scored:
                    if self.samples is not None:
                        self.samples.keep(trainer, scored, output)
                    self.tap.rollout(trainer, scored, output, errors)
                return output

            return rollout

        wrap(trainer, Seam.ROLLOUT, make)

    def describe(self, trainer: Any) -> dict[str, Any]:
        """What the CONFIG event says of the trainer: its resolved config, versions, parameters and data."""
        dataset = getattr(trainer, "train_dataset", None)
        return {"grpo": jsonable(trainer.args.to_dict()), "versions": versions(),
                "trainable_parameters": sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
                "dataset_rows": _length(dataset), "heldout_rows": 0,
                "dataset_digest": getattr(dataset, "_fingerprint", None),
                "dataset_columns": list(getattr(dataset, "column_names", None) or []),
                "model_source": getattr(trainer.model, "name_or_path", ""),
                "inferred": {found.declaration: found.sentence for found in self.inferred}}

    # ----------------------------------------------------------------- during training

    def step_ended(self, step: int) -> None:
        """The guards that read the state after an optimizer step (before the next rollout samples from it)."""
        if not self.guards:
            return
        guards.check_weights(self.trainer.model, step)
        guards.check_task_signal(self.reward_errors, self.trainer.reward_func_names[self.tap.task_index], step)

    def logged(self, step: int, logs: dict[str, Any]) -> None:
        """Stream what TRL logged (and the task reward by role) to the runner."""
        metrics = {k: float(v) for k, v in logs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not metrics:
            return
        task = self.trainer.reward_func_names[self.tap.task_index]
        for key, role in ((f"rewards/{task}/mean", "task_reward"), (f"rewards/{task}/std", "task_reward_std")):
            if key in metrics:
                metrics[role] = metrics[key]
        if "train_runtime" not in metrics:
            self.last_metrics = {**self.last_metrics, **metrics}
        if self.events is not None:
            self.events.emit(Event.METRICS, step=step, max_steps=self.max_steps, metrics=metrics)

    # ----------------------------------------------------------------- the end

    def close(self) -> None:
        """Remove the torch hooks the diagnostics registered on the model (a crash skips train end), and stop the
        vLLM server hypotrack started for the run."""
        self.hookset.close()
        server, self.generator_server = self.generator_server, None
        if server is not None:
            server.stop()

    def finish(self, artifacts: Path) -> None:
        """Write the arm's files into ``artifacts``; a hook that cannot write its own is reported, not raised."""
        artifacts.mkdir(parents=True, exist_ok=True)
        if self.samples is not None:
            (artifacts / "samples.json").write_text(json.dumps(self.samples.rows, indent=1))
        (artifacts / "grpo_config.json").write_text(
            json.dumps(jsonable(self.trainer.args.to_dict()), indent=1, sort_keys=True))
        log = self.reward_errors
        if log.first_message:
            (artifacts / "reward_errors.json").write_text(json.dumps(
                {"total": dict(log.total), "first_message": log.first_message}, indent=1))
            if self.events is not None:
                self.events.emit(Event.REWARD_ERRORS, total=dict(log.total), first_message=log.first_message)
        for name, exc in self.hookset.write_artifacts(artifacts):
            if self.events is not None:
                self.events.emit(Event.WARNING, message=f"hook {name} could not write its artifacts: {exc}")


def _nan_guarded(step: Callable[..., Any], trainer: Any) -> Callable[..., Any]:
    def training_step(*args: Any, **kwargs: Any) -> Any:
        loss = step(*args, **kwargs)
        guards.check_loss(loss, trainer.state.global_step + 1)
        return loss

    return training_step


def _session_callback(session: ArmSession) -> Any:
    """The TrainerCallback through which the session sees the events a callback sees."""
    from transformers import TrainerCallback

    class SessionCallback(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            session.tap.task_index = session.task_index(session.trainer)  # the trainer has its reward functions now
            session.infer(session.trainer)
            session.tap.train_begin(session.trainer)

        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            session.tap.before_optimizer_step(session.trainer)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            session.step_ended(state.global_step)
            session.tap.step_end(session.trainer)
            for check in session.step_end_checks:
                check(state, control)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            session.logged(state.global_step, logs or {})

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            session.tap.train_end(session.trainer)

    return SessionCallback()


def jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(data, default=str))


def _length(dataset: Any) -> int | None:
    try:
        return len(dataset)
    except TypeError:  # an iterable dataset, or none
        return None


def _is_module(func: Any) -> bool:
    """A reward model TRL runs itself (a torch module), which no wrapper may hide from it."""
    import torch

    return isinstance(func, torch.nn.Module)
