"""`hypotrack run`: plan arms x seeds, run each in its own worker, log to MLflow, decide, record.

Order of operations matters for reliability:
1. resolve every arm's config and check the inputs (nothing is recorded if they are bad);
2. record the test run (the hypothesis goes to `testing`) and create the MLflow runs;
3. run the workers; Ctrl-C/SIGTERM stops them and ends everything as killed;
4. evaluate the criteria, then write the verdict to MLflow and the registry.
Whatever happens after step 2, a `finally` ends the MLflow runs and the test run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .arms import ArmSpec, config_hash
from .errors import HypotrackError
from .events import EventTail
from .spec.models import Hypothesis
from .verdict import Series, Verdict, decide

STOP_GRACE_SECONDS = 20


@dataclass
class RunOptions:
    parallel: int | None = None
    launcher: str = "python"
    output_dir: Path | None = None
    tracking_uri: str | None = None
    mlflow_experiment: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)


@dataclass
class ArmState:
    spec: ArmSpec
    dir: Path
    run_id: str = ""
    process: subprocess.Popen | None = None
    tail: EventTail | None = None
    status: str = "queued"  # queued, starting, running, finished, failed, killed
    step: int = 0
    reward: float | None = None
    started: float | None = None
    ended: float | None = None
    error: str = ""
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    reward_errors: dict[str, int] = field(default_factory=dict)
    phase: str = ""  # what a running arm does before its first step (e.g. building the toy model)

    @property
    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.ended or time.time()) - self.started


@dataclass
class TestOutcome:
    test_id: str
    state: str
    verdict: Verdict | None
    arms: list[ArmState]
    parent_run_id: str | None
    tracking_uri: str
    seconds: float
    output_dir: Path


class _StopRequested(Exception):
    pass


def preflight(specs: list[ArmSpec]) -> None:
    """Fail before training on a missing model, dataset or import path."""
    from .imports import import_object
    from .worker import toy_task

    checked: set[str] = set()
    for spec in specs:
        for path in spec.rewards:
            if path not in checked:
                import_object(path, spec.experiment_dir, "reward function")
                checked.add(path)
        if spec.data.get("loader") and spec.data["loader"] not in checked:
            import_object(spec.data["loader"], spec.experiment_dir, "dataset loader")
            checked.add(spec.data["loader"])
        if spec.data.get("dataset") and spec.data["dataset"] not in checked:
            checked.add(spec.data["dataset"])
            _check_dataset(spec.data["dataset"])
        model = spec.model
        if model in checked:
            continue
        checked.add(model)
        if toy_task(model) is not None:
            continue
        if Path(model).expanduser().exists():
            if not (Path(model).expanduser() / "config.json").exists():
                raise HypotrackError(f"model {model!r} is a folder without config.json: not a transformers model")
        elif model.startswith((".", "/", "~")) or model.count("/") > 1:
            raise HypotrackError(f"model {model!r}: no such folder")
        else:
            _check_hub_model(model)


def _check_dataset(dataset: str) -> None:
    """A local folder must exist; a hub dataset must be resolvable (metadata only, no download)."""
    name, config = ([*dataset.split(","), ""])[:2]
    path = Path(name).expanduser()
    if path.exists():
        return
    if name.startswith((".", "/", "~")):
        raise HypotrackError(f"dataset {dataset!r}: {name} does not exist")
    try:
        from datasets import load_dataset_builder

        load_dataset_builder(name, config or None)
    except Exception as exc:  # noqa: BLE001 - offline, typo, gated, missing config
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HypotrackError(f"dataset {dataset!r} could not be found: {first}") from None


def _check_hub_model(model: str) -> None:
    """A hub id must be in the local cache or reachable; say which before ten minutes of set-up."""
    try:
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(model, "config.json"), str):
            return
    except Exception:  # noqa: BLE001 - a malformed id is reported below
        pass
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise HypotrackError(f"model {model!r} is not a local folder and not in the Hugging Face cache, "
                             "and HF_HUB_OFFLINE=1 forbids downloading it")
    try:
        from transformers import AutoConfig

        AutoConfig.from_pretrained(model)
    except Exception as exc:  # noqa: BLE001 - network, auth, typos
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HypotrackError(f"model {model!r} is not a local folder and could not be fetched: {first}") from None


def default_parallel(count: int) -> int:
    return max(1, min(count, os.cpu_count() or 1))


def run_test(
    hypothesis: Hypothesis,
    hypothesis_file: Path,
    specs: list[ArmSpec],
    registry,  # noqa: ANN001
    options: RunOptions,
    display: "Callable[[list[ArmState]], None] | None" = None,
    on_start: "Callable[[str, str, str], None] | None" = None,
) -> TestOutcome:
    from .registry import store
    from .tracking import Tracker, close_orphaned_runs

    preflight(specs)
    tracker = Tracker(options.tracking_uri)
    close_orphaned_runs(registry, tracker)
    arms_used = sorted({s.arm for s in specs}, key=["control", "treatment"].index)
    seeds = sorted({s.seed for s in specs})
    digest = config_hash(specs)
    test = store.start_test_run(registry, hypothesis.id, experiment=specs[0].experiment_name, arms=arms_used,
                                seeds=seeds, config_hash=digest, flags=options.flags, tracking_uri=tracker.uri)
    out_root = (options.output_dir or Path.cwd() / "outputs") / f"{hypothesis.id}-{test.id}"
    parallel = options.parallel or default_parallel(len(specs))
    threads = max(1, (os.cpu_count() or 1) // parallel)
    arms = []
    for spec in specs:
        directory = out_root / f"{spec.arm}-seed{spec.seed}"
        arms.append(ArmState(spec=spec.model_copy(update={"test_id": test.id, "output_dir": str(directory),
                                                           "threads": threads}), dir=directory))
    parent_id: str | None = None
    state, verdict, error = "failed", None, None
    started = time.time()
    previous_handlers = _install_stop_handlers()
    try:
        experiment_id = tracker.experiment_id(options.mlflow_experiment or f"hypotrack/{hypothesis.id}")
        base_tags = {"hypotrack.hypothesis": hypothesis.id, "hypotrack.test": test.id}
        parent_id = tracker.create_run(experiment_id, f"{hypothesis.id} test {test.id}",
                                       {**base_tags, "hypotrack.kind": "test"})
        for arm in arms:
            arm.run_id = tracker.create_run(
                experiment_id, f"{arm.spec.arm}-seed{arm.spec.seed}",
                {**base_tags, "hypotrack.arm": arm.spec.arm, "hypotrack.seed": str(arm.spec.seed),
                 "hypotrack.kind": "arm"}, parent_id)
        store.attach_mlflow(registry, test.id, parent_id, {arm.spec.key: arm.run_id for arm in arms})
        _log_plan(tracker, parent_id, hypothesis, hypothesis_file, arms, digest, options)
        if on_start:
            on_start(test.id, parent_id, tracker.uri)
        _check_stop()
        _run_workers(arms, options.launcher, parallel, tracker, display)
        _check_stop()
        failed = {a.spec.key: a.error or a.status for a in arms if a.status != "finished"}
        verdict = decide(hypothesis, _series(arms), seeds, failed)
        _log_outcome(tracker, parent_id, arms, verdict, out_root)
        state = "failed" if failed else "finished"
    except _StopRequested:
        state, error = "killed", "stopped by the user (Ctrl-C or SIGTERM)"
        _stop_all(arms, tracker)
    except BaseException as exc:
        state, error = "failed", f"{type(exc).__name__}: {exc}"
        _stop_all(arms, tracker)
        raise
    finally:
        # Bookkeeping must complete even if the user presses Ctrl-C again.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        run_status = {"finished": "FINISHED", "killed": "KILLED"}.get(state, "FAILED")
        for arm in arms:
            if arm.run_id:
                arm_status = {"finished": "FINISHED", "killed": "KILLED"}.get(arm.status, "FAILED")
                if state == "killed" and arm.status != "finished":
                    arm_status = "KILLED"
                tracker.end(arm.run_id, arm_status)
        if parent_id:
            tracker.end(parent_id, run_status)
        run_ids = {arm.spec.key: arm.run_id for arm in arms}
        if verdict is not None and state in ("finished", "failed"):
            store.finish_test_run(registry, test.id, state=state, verdict=verdict.status,
                                  confidence=verdict.confidence, summary=verdict.summary,
                                  evidence=verdict.evidence(run_ids), error=error)
        else:
            store.finish_test_run(registry, test.id, state=state, error=error)
        _restore_handlers(previous_handlers)
    return TestOutcome(test.id, state, verdict, arms, parent_id, tracker.uri, time.time() - started, out_root)


# ------------------------------------------------------------------ signals


class _StopFlag:
    """Set by SIGINT/SIGTERM; checked by the scheduling loop.

    The handler only sets a flag: an exception raised from a signal handler surfaces
    inside whatever library code the main thread is in (MLflow's store, SQLAlchemy),
    which may swallow it.
    """

    requested: str | None = None


def _check_stop() -> None:
    if _StopFlag.requested:
        raise _StopRequested(_StopFlag.requested)


def _install_stop_handlers() -> dict[int, Any]:
    _StopFlag.requested = None

    def handler(signum: int, _frame: Any) -> None:
        _StopFlag.requested = signal.Signals(signum).name

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    return previous


def _restore_handlers(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _stop_all(arms: list[ArmState], tracker) -> None:  # noqa: ANN001
    """SIGTERM every live worker group, wait, then SIGKILL stragglers; record what came in."""
    from .launchers import terminate

    # Ignore further Ctrl-C while we clean up: a second press must not leave runs open.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    live = [a for a in arms if a.process is not None and a.process.poll() is None]
    for arm in live:
        terminate(arm.process)
    deadline = time.time() + STOP_GRACE_SECONDS
    for arm in live:
        try:
            arm.process.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            terminate(arm.process, signal.SIGKILL)
            arm.process.wait()
    for arm in arms:
        if arm.status in ("queued", "starting", "running"):
            _drain(arm, tracker)
            arm.status, arm.ended = "killed", time.time()
            arm.error = arm.error or "stopped"


# ------------------------------------------------------------------ workers


def _run_workers(arms: list[ArmState], launcher: str, parallel: int, tracker, display) -> None:  # noqa: ANN001
    from .launchers import start

    queue = list(arms)
    running: list[ArmState] = []
    last_draw = 0.0
    while queue or running:
        _check_stop()
        while queue and len(running) < parallel:
            arm = queue.pop(0)
            arm.dir.mkdir(parents=True, exist_ok=True)
            spec_path = arm.dir / "spec.json"
            spec_path.write_text(arm.spec.model_dump_json(indent=1))
            events = arm.dir / "events.jsonl"
            events.unlink(missing_ok=True)
            arm.tail = EventTail(events)
            arm.process = start(launcher, spec_path, events, arm.dir / "worker.log", arm.spec.threads)
            arm.status, arm.started = "starting", time.time()
            running.append(arm)
        time.sleep(0.2)
        _check_stop()
        for arm in list(running):
            _drain(arm, tracker)
            code = arm.process.poll()
            if code is None:
                continue
            _drain(arm, tracker)
            arm.ended = time.time()
            running.remove(arm)
            if arm.status not in ("finished", "failed", "killed"):
                arm.status = "failed"
                arm.error = arm.error or f"worker exited with code {code} without a result ({_log_tail(arm)})"
            elif arm.status == "finished" and code != 0:
                arm.status, arm.error = "failed", f"worker exited with code {code}"
            _upload_arm(arm, tracker)
        if display and time.time() - last_draw > 0.25:
            display(arms)
            last_draw = time.time()
    if display:
        display(arms)


def _drain(arm: ArmState, tracker) -> None:  # noqa: ANN001
    if arm.tail is None:
        return
    for event in arm.tail.read():
        kind = event.get("event")
        if kind == "started":
            arm.status = "running"
            tracker.set_tags(arm.run_id, {f"version.{k}": v for k, v in (event.get("versions") or {}).items()})
        elif kind == "config":
            arm.phase = ""  # the trainer is built: training starts
            tracker.log_params(arm.run_id, {f"grpo.{k}": v for k, v in (event.get("grpo") or {}).items()
                                            if k in _INTERESTING_GRPO})
            tracker.log_dict(arm.run_id, event.get("grpo") or {}, "resolved/grpo_config.json")
            tracker.set_tags(arm.run_id, {"hypotrack.trainable_parameters": event.get("trainable_parameters"),
                                          "hypotrack.dataset_rows": event.get("dataset_rows")})
        elif kind == "params":
            tracker.log_params(arm.run_id, event.get("params") or {})
        elif kind == "phase":
            arm.phase = str(event.get("text", ""))
        elif kind == "metrics":
            arm.phase = ""
            step = int(event.get("step", 0))
            metrics = event.get("metrics") or {}
            tracker.log_metrics(arm.run_id, metrics, step)
            for key, value in metrics.items():
                arm.series.setdefault(key, []).append((step, float(value)))
            arm.step = step
            if "reward" in metrics:
                arm.reward = float(metrics["reward"])
        elif kind == "reward_errors":
            arm.reward_errors = dict(event.get("total") or {})
            tracker.set_tags(arm.run_id, {"hypotrack.reward_errors": json.dumps(event.get("first_message"))})
        elif kind == "finished":
            # Final figures a trainer returns without streaming them (critic before/after parity,
            # parity probes) are logged once, at the last step.
            final = {k: v for k, v in (event.get("metrics") or {}).items()
                     if k not in arm.series and isinstance(v, (int, float))}
            if final:
                tracker.log_metrics(arm.run_id, final, arm.step)
                for key, value in final.items():
                    arm.series[key] = [(arm.step, float(value))]
            arm.status = "finished"
        elif kind == "failed":
            arm.status, arm.error = "failed", str(event.get("error", "failed"))
            tracker.set_tags(arm.run_id, {"hypotrack.error": arm.error[:5000]})
        elif kind == "killed":
            arm.status, arm.error = "killed", str(event.get("reason", "killed"))


_INTERESTING_GRPO = {
    "learning_rate", "per_device_train_batch_size", "num_generations", "max_completion_length", "temperature",
    "beta", "loss_type", "scale_rewards", "epsilon", "epsilon_high", "num_iterations", "gradient_accumulation_steps",
    "max_steps", "seed", "reward_weights", "mask_truncated_completions", "top_p", "top_k", "use_vllm",
    "importance_sampling_level", "lr_scheduler_type", "warmup_ratio", "weight_decay", "max_grad_norm",
}


def _log_tail(arm: ArmState, lines: int = 3) -> str:
    log = arm.dir / "worker.log"
    if not log.exists():
        return "no log"
    tail = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-lines:]
    return " | ".join(tail)[-400:] or "empty log"


def _upload_arm(arm: ArmState, tracker) -> None:  # noqa: ANN001
    artifacts = arm.dir / "artifacts"
    samples = artifacts / "samples.json"
    if samples.exists():
        try:
            tracker.log_table(arm.run_id, json.loads(samples.read_text()), "samples.json")
        except Exception as exc:  # noqa: BLE001 - a table is a nice-to-have
            tracker.set_tags(arm.run_id, {"hypotrack.samples_error": str(exc)[:500]})
    for path in sorted(artifacts.glob("*")) if artifacts.is_dir() else []:
        if path.name != "samples.json":
            tracker.log_artifact(arm.run_id, path, "diagnostics" if path.suffix in (".html", ".png") else "outputs")
    tracker.log_artifact(arm.run_id, arm.dir / "spec.json", "resolved")
    tracker.log_artifact(arm.run_id, arm.dir / "worker.log")
    tracker.log_artifact(arm.run_id, arm.dir / "traceback.txt")


def _series(arms: list[ArmState]) -> Series:
    series: Series = {}
    for arm in arms:
        if arm.status == "finished":
            series.setdefault(arm.spec.arm, {})[arm.spec.seed] = arm.series
    return series


# ------------------------------------------------------------------ MLflow records of the test


def _log_plan(tracker, parent_id: str, hypothesis: Hypothesis, hypothesis_file: Path, arms: list[ArmState],  # noqa: ANN001
              digest: str, options: RunOptions) -> None:
    tracker.log_params(parent_id, {
        "hypothesis": hypothesis.id, "title": hypothesis.title, "experiment": arms[0].spec.experiment_name,
        "config_hash": digest, "arms": sorted({a.spec.arm for a in arms}), "seeds": sorted({a.spec.seed for a in arms}),
        "flags": options.flags, "launcher": options.launcher,
    })
    tracker.log_artifact(parent_id, hypothesis_file, "hypothesis")
    tracker.log_dict(parent_id, {a.spec.key: a.spec.model_dump() for a in arms}, "resolved/arms.json")
    for arm in arms:
        spec = arm.spec
        params = {"arm": spec.arm, "seed": spec.seed, "model": spec.model, "rewards": spec.rewards,
                  "peft": spec.lora is not None, "max_steps": spec.max_steps, "hooks": spec.hooks,
                  "plant": spec.plant, "data": spec.data, "config_hash": config_hash([spec])}
        params.update({f"grpo.{k}": v for k, v in spec.grpo.items()})
        if spec.lora:
            params.update({f"lora.{k}": v for k, v in spec.lora.items()})
        tracker.log_params(arm.run_id, params)


def _log_outcome(tracker, parent_id: str, arms: list[ArmState], verdict: Verdict, out_root: Path) -> None:  # noqa: ANN001
    run_ids = {arm.spec.key: arm.run_id for arm in arms}
    tracker.log_dict(parent_id, verdict.evidence(run_ids), "verdict.json")
    tracker.set_tags(parent_id, {"hypotrack.verdict": verdict.status,
                                 "hypotrack.confidence": verdict.confidence if verdict.confidence is not None else "",
                                 "mlflow.note.content": verdict.summary})
    if verdict.confidence is not None:
        tracker.log_metrics(parent_id, {"verdict_confidence": verdict.confidence}, 0)
    out_root.mkdir(parents=True, exist_ok=True)
    figure = reward_curves(arms)
    if figure is not None:
        tracker.log_figure(parent_id, figure, "reward_curves.png")
        figure.savefig(out_root / "reward_curves.png", dpi=110)
        import matplotlib.pyplot as plt

        plt.close(figure)
    (out_root / "verdict.json").write_text(json.dumps(verdict.evidence(run_ids), indent=1))


def reward_curves(arms: list[ArmState], metric: str = "reward"):
    """Mean over seeds per arm, with the min-max band across seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_arm: dict[str, list[dict[int, float]]] = {}
    for arm in arms:
        points = dict(arm.series.get(metric, []))
        if points:
            by_arm.setdefault(arm.spec.arm, []).append(points)
    if not by_arm:
        return None
    figure, axis = plt.subplots(figsize=(7, 4))
    for name, runs in by_arm.items():
        steps = sorted(set().union(*runs))
        means, lows, highs = [], [], []
        for step in steps:
            values = [run[step] for run in runs if step in run]
            means.append(sum(values) / len(values))
            lows.append(min(values))
            highs.append(max(values))
        line, = axis.plot(steps, means, label=f"{name} (mean of {len(runs)} seeds)")
        axis.fill_between(steps, lows, highs, alpha=0.2, color=line.get_color())
    axis.set_xlabel("step")
    axis.set_ylabel(metric)
    axis.set_title(f"{metric}: arms compared (band = min-max over seeds)")
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure
