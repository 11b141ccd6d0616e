"""`python -m hypotrack.bench`: what hypotrack costs per training step, measured in one process.

Variants on the same model, data, rewards, config and seed, interleaved round
by round (each round starting from the next variant) so machine noise and the
order within a round hit them alike:
  plain    TRL's GRPOTrainer as a user would write it;
  worker   the same trainer with an arm's session (event stream, error counting, guards, samples), no hooks;
  hooks    the same with every diagnostics hook attached;
  gates    the plain trainer under `hypotrack.watch(trainer)`: the live gates only;
  watched  the plain trainer under `hypotrack.watch(trainer, hooks="all")`.
Step time is the time between consecutive step ends (generation, loss,
backward, optimizer, callbacks and hooks all included), median over the steps
after a warm-up, as wall time and as this process's CPU time (``*_cpu``: what
the step cost, robust to other load on a shared machine); each ratio is also
given as the median over rounds of that round's ratio of medians. A watched variant's failed gates are reported too
(on a healthy experiment: none). `--memory-steps` also runs one long arm with every hook and
reports resident memory at step 50 and at the end.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

# The variants that run TRL's own trainer under `hypotrack.watch`, with the hooks each attaches besides the gates.
WATCHED = {"gates": None, "watched": "all"}
VARIANTS = ("plain", "worker", "hooks", *WATCHED)


class StepClock(TrainerCallback):
    """Wall time and this process's CPU time at each step end (CPU time: what the step itself cost, whatever
    else the machine runs; torch uses one thread here, so it adds no parallel time)."""

    def __init__(self) -> None:
        self.ends: list[float] = []
        self.cpu_ends: list[float] = []
        self.rss: dict[int, int] = {}
        self.session = None  # the Watch of a watched variant
        self.gate_readings: dict[str, float] = {}

    def on_train_begin(self, args, state, control, **kwargs):
        self.ends, self.cpu_ends = [time.perf_counter()], [time.process_time()]

    def on_step_end(self, args, state, control, **kwargs):
        self.ends.append(time.perf_counter())
        self.cpu_ends.append(time.process_time())
        self.rss[state.global_step] = _rss_bytes()

    def step_times(self, warmup: int, cpu: bool = False) -> list[float]:
        ends = self.cpu_ends if cpu else self.ends
        gaps = [b - a for a, b in zip(ends, ends[1:])]
        return gaps[warmup:]


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _spec(experiment: str, steps: int, hooks: list[str], out: Path):
    from hypotrack.definitions import Project, load_library
    from hypotrack.definitions.models import Overrides
    from hypotrack.run.planning.plan import resolve_arms

    library = load_library(Project.locate())
    library.raise_if_problems()
    hypothesis = library.hypotheses["h01"].model_copy(update={"hooks": hooks, "hook_settings": {}})
    exp = library.experiments[experiment]
    spec = resolve_arms(hypothesis, exp, library.experiment_files[experiment], Overrides(max_steps=steps),
                        seeds=[0], arms=["control"])[0]
    return spec.model_copy(update={"output_dir": str(out), "threads": 1})


def _train(variant: str, experiment: str, steps: int, out: Path) -> StepClock:
    import torch

    from hypotrack.hooks import ALL_HOOKS
    from hypotrack.session import generator
    from hypotrack.worker.data import load_rows, prepare_prompts
    from hypotrack.worker.grpo_arm import build_config
    from hypotrack.worker.model import build_model

    torch.set_num_threads(1)
    spec = _spec(experiment, steps, list(ALL_HOOKS) if variant == "hooks" else [], out)
    from transformers import set_seed

    set_seed(spec.seed)
    model, tokenizer = build_model(spec)
    dataset = prepare_prompts(load_rows(spec.data, spec.seed, spec.experiment_dir), tokenizer, spec.data)
    if spec.grpo.get("use_vllm"):  # as the worker does, before the trainer builds vLLM's engine
        generator.own_rendezvous_port()
    args = build_config(spec, out)
    server = generator.ready_engine(model, spec.generator_dtype, args) if args.use_vllm else None
    try:  # a vLLM server started for the run (server mode) is stopped whatever happens
        return _timed(variant, spec, model, tokenizer, dataset, args, out)
    finally:
        if server is not None:
            server.stop()


def _timed(variant: str, spec: Any, model: Any, tokenizer: Any, dataset: Any, args: Any, out: Path) -> StepClock:
    from trl import GRPOTrainer

    from hypotrack.imports import import_object
    from hypotrack.protocol import EventWriter
    from hypotrack.session import ArmSession
    from hypotrack.worker.grpo_arm import _quiet
    from hypotrack.worker.model import build_peft_config

    clock = StepClock()
    rewards = [import_object(path, spec.experiment_dir) for path in spec.rewards]
    common: dict[str, Any] = dict(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                                  peft_config=build_peft_config(spec))
    trainer = GRPOTrainer(reward_funcs=rewards, callbacks=[clock], **common)
    _quiet(trainer)  # console printing of the log is not what is measured
    if variant in WATCHED:
        from hypotrack.watch import watch

        clock.session = watch(trainer, hooks=WATCHED[variant], record=False)
    elif variant != "plain":
        events = EventWriter(open(out / "events.jsonl", "w"))  # noqa: SIM115 - as a worker writes them
        ArmSession.for_arm(spec, events).attach(trainer)
    trainer.train()
    if clock.session is not None:  # what the gates read, largest value per reading: they checked, and found what
        for entry in trainer.state.log_history:
            for key, value in entry.items():
                if key.startswith("diag/gates/"):
                    clock.gate_readings[key] = max(value, clock.gate_readings.get(key, value))
    return clock


def overhead(experiment: str, steps: int, rounds: int, warmup: int,
             variants: tuple[str, ...] = VARIANTS) -> dict[str, Any]:
    times: dict[str, dict[str, list[float]]] = {clock: {v: [] for v in variants} for clock in ("wall", "cpu")}
    per_round: dict[str, dict[str, list[float]]] = {clock: {v: [] for v in variants} for clock in ("wall", "cpu")}
    failures: dict[str, list[str]] = {}
    readings: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_index in range(rounds):
            # Each round starts from another variant, so running first (or last) in a round favours none of them.
            shift = round_index % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                gc.collect()  # the previous trainer's garbage is not the next one's to collect
                out = Path(tmp) / f"{variant}-{round_index}"
                out.mkdir()
                clock = _train(variant, experiment, steps, out)
                for kind in ("wall", "cpu"):
                    step_times = clock.step_times(warmup, cpu=kind == "cpu")
                    times[kind][variant] += step_times
                    per_round[kind][variant].append(statistics.median(step_times))
                if clock.session is not None:
                    failures.setdefault(variant, []).extend(str(f) for f in clock.session.failures())
                    readings.setdefault(variant, {}).update(clock.gate_readings)
    report: dict[str, Any] = {"experiment": experiment, "steps_per_run": steps, "rounds": rounds,
                              "warmup_steps": warmup, "gate_failures": failures,
                              "gate_readings_max": readings}
    for kind, suffix in (("wall", ""), ("cpu", "_cpu")):
        median = {variant: statistics.median(values) for variant, values in times[kind].items()}
        report[f"median_step_seconds{suffix}"] = median
        report[f"round_medians{suffix}"] = per_round[kind]
        for a, b in (("worker", "plain"), ("hooks", "worker"), ("hooks", "plain"), ("gates", "plain"),
                     ("watched", "plain")):
            if a in median and b in median:
                report[f"{a}_vs_{b}{suffix}"] = median[a] / median[b]
                report[f"{a}_vs_{b}{suffix}_median_of_rounds"] = statistics.median(
                    x / y for x, y in zip(per_round[kind][a], per_round[kind][b]))
    return report


def memory(experiment: str, steps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        clock = _train("hooks", experiment, steps, Path(tmp))
    early, late = clock.rss[50], clock.rss[steps]
    return {"steps": steps, "rss_at_50_mb": early / 2**20, f"rss_at_{steps}_mb": late / 2**20,
            "growth": late / early - 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hypotrack.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default="toy_arith")
    parser.add_argument("--steps", type=int, default=40, help="steps per run")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the three variants")
    parser.add_argument("--warmup", type=int, default=5, help="steps dropped at the start of each run")
    parser.add_argument("--memory-steps", type=int, default=0, help="also run one all-hooks arm this long")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated, from {', '.join(VARIANTS)} [all]")
    args = parser.parse_args(argv)
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"--variants: unknown {', '.join(unknown)} (known: {', '.join(VARIANTS)})")
    report = overhead(args.experiment, args.steps, args.rounds, args.warmup, variants)
    if args.memory_steps:
        report["memory"] = memory(args.experiment, args.memory_steps)
    print(json.dumps(report, indent=2))
    return 0
