"""`hypotrack run`: a thin layer over hypotrack.run.prepare_test and run_prepared.

Its run-setting flags are generated from RUN_SETTINGS (definitions/run_settings.py), with
the types, choices and bounds declared there. Kept out of the CLI's package
__init__ so the read-only commands never pay for these imports.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from hypotrack.cli.context import Context, console, pass_ctx
from hypotrack.definitions.run_settings import RUN_SETTINGS, RunSetting
from hypotrack.run.launching.base import LAUNCHERS, LaunchOptions


class BoundedNumber(click.ParamType):
    """An int or float within a run setting's declared bounds; NaN and infinities are refused."""

    def __init__(self, setting: RunSetting):
        self.setting = setting
        self.name = setting.type.__name__

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, self.setting.type) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = self.setting.type(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not {'an integer' if self.setting.type is int else 'a number'}", param, ctx)
        problem = self.setting.bounds.problem(number)
        if problem:
            self.fail(problem, param, ctx)
        return number


DEFAULT_MAX_SEEDS = 10  # --seeds auto without --max-seeds


class SeedCount(click.ParamType):
    """--seeds: a number of seeds, or "auto" (add seeds until the treatment effect is decided)."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) or str(value).strip().lower() != "auto":
            return click.IntRange(1, 64).convert(value, param, ctx)
        return "auto"


def setting_option(setting: RunSetting) -> Callable[[Callable], Callable]:
    """The click option of one run setting."""
    if setting.type is bool:
        if setting.flag:  # e.g. --no-peft: given means False, absent means "as declared"
            return click.option(setting.flag_name, setting.name, flag_value=False, default=None, help=setting.help)
        return click.option(setting.flag_name, setting.name, flag_value=True, default=None, help=setting.help)
    if setting.choices:
        kind: click.ParamType = click.Choice(setting.choices)
    elif setting.type in (int, float):
        kind = BoundedNumber(setting)
    else:
        kind = click.STRING
    return click.option(setting.flag_name, setting.name, type=kind, multiple=setting.multiple,
                        metavar=setting.metavar or None, help=setting.help)


def run_setting_options(command: Callable) -> Callable:
    for setting in reversed(RUN_SETTINGS):
        command = setting_option(setting)(command)
    return command


def _parse_sets(values: tuple[str, ...]) -> dict:
    from hypotrack.definitions.settings_check import check_setting, coerce_cli_value

    out = {}
    for item in values:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} must look like KEY=VALUE", param_hint="--set")
        key, raw = item.split("=", 1)
        key, value = key.strip(), coerce_cli_value(raw)
        message = check_setting(key, value)
        if message:
            raise click.BadParameter(message, param_hint=f"--set {key}")
        out[key] = value
    return out


@click.command()
@click.argument("hypothesis_id", metavar="ID")
@click.option("--experiment", metavar="NAME|PATH", help="Experiment to run instead of the hypothesis's default.")
@click.option("--seeds", type=SeedCount(), help="Number of seeds (0..N-1) instead of the experiment's list; auto: "
              "add one seed at a time until the treatment effect is decided (up to --max-seeds).")
@click.option("--max-seeds", type=click.IntRange(2, 64),
              help=f"--seeds auto: the most seeds to train [{DEFAULT_MAX_SEEDS}].")
@click.option("--more-seeds", type=click.IntRange(1, 64), metavar="K",
              help="Train K seeds no earlier test of these arms used, and decide over all of them.")
@run_setting_options
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Treatment arm: any GRPOConfig field or lora.<field>, type-checked (repeatable).")
@click.option("--arms", "arm_names", metavar="ARMS", help="Comma-separated arms to run [the hypothesis's arms].")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), help="Where arms write [./outputs].")
@click.option("--parallel", type=click.IntRange(1), help="Workers at once [number of CPU cores].")
@click.option("--launcher", type=click.Choice(LAUNCHERS), default="python", show_default=True,
              help="How workers start: accelerate trains each arm over several GPUs (or CPU processes); "
                   "ray runs arms x seeds as Ray tasks, locally or on a cluster.")
@click.option("--processes", type=click.IntRange(1), help="--launcher accelerate: processes per arm "
              "[accelerate's config: every GPU].")
@click.option("--ray-address", metavar="ADDRESS", envvar="RAY_ADDRESS", help="--launcher ray: an existing Ray "
              "cluster (auto, HEAD:6379) [env RAY_ADDRESS; default: a new local Ray instance].")
@click.option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow tracking URI [env MLFLOW_TRACKING_URI].")
@click.option("--mlflow-experiment", metavar="NAME", help="MLflow experiment [hypotrack/<ID>].")
@click.option("--deterministic", is_flag=True, help="Set every seed and deterministic switch; recorded with the run.")
@click.option("--dry-run", is_flag=True, help="Print the resolved arms and configs; train nothing.")
@pass_ctx
def run(ctx: Context, hypothesis_id: str, experiment: str | None, seeds: int | str | None, max_seeds: int | None,
        more_seeds: int | None, sets: tuple[str, ...],
        arm_names: str | None, output_dir: Path | None, parallel: int | None, launcher: str,
        processes: int | None, ray_address: str | None,
        tracking_uri: str | None, mlflow_experiment: str | None, deterministic: bool, dry_run: bool,
        **settings: Any) -> None:
    """Test a hypothesis: train control and treatment arms over seeds, log to MLflow, record the verdict.

    The control arm is the experiment as written. Flags that describe the setup say "both arms"
    and apply to both; the others change the treatment arm only, on top of the hypothesis's own
    treatment.

    \b
    Example:
        hypotrack run h06 --no-peft
        hypotrack run h01 --seeds 3 --scale-rewards none --dry-run
        hypotrack run h01 --more-seeds 2          # two more seeds, decided with the earlier ones
        hypotrack run h06 --no-peft --seeds auto --max-seeds 8
    """
    from hypotrack.run.api import prepare_test

    auto = seeds == "auto"
    if max_seeds is not None and not auto:
        raise click.BadParameter("is read only with --seeds auto", param_hint="--max-seeds")
    if more_seeds is not None and seeds is not None:
        raise click.BadParameter("--seeds picks the seeds itself; give one of the two", param_hint="--more-seeds")
    ctx.check_id(hypothesis_id)
    given = {name: (list(value) if isinstance(value, tuple) else value) for name, value in settings.items()
             if value not in (None, ())}
    if sets:
        given["set"] = _parse_sets(sets)
    arms = _parse_arms(arm_names)
    # Recorded with the test run (a JSON column): paths and tuples become strings and lists.
    flags = json.loads(json.dumps({k: v for k, v in click.get_current_context().params.items()
                                   if v not in (None, False, (), "") and k not in ("hypothesis_id", "dry_run")},
                                  default=str))
    plan = prepare_test(ctx.library(), hypothesis_id, experiment=experiment, settings=given,
                        seeds=None if auto else seeds, arms=arms, deterministic=deterministic, flags=flags)
    if auto and "treatment" not in {s.arm for s in plan.specs}:
        raise click.BadParameter("adds seeds until the treatment effect is decided: it needs the treatment arm",
                                 param_hint="--seeds auto")
    if more_seeds is not None:
        from hypotrack.run.api import with_more_seeds

        plan = with_more_seeds(plan, ctx.registry(), more_seeds)
    launch = LaunchOptions(launcher, processes, ray_address)
    if dry_run:
        from hypotrack.run.launching.launchers import check
        from hypotrack.run.planning.preflight import preflight

        # a dry run finds the same missing model, dataset, import or launcher a run would (none, where nothing trains)
        preflight([] if plan.unmet else plan.specs)
        check(launch)
        if auto:
            console().print(f"--seeds auto: one seed at a time, up to {max_seeds or DEFAULT_MAX_SEEDS} in all with "
                            "the earlier tests' seeds, until the treatment effect is decided.")
        _print_plan(plan)
        return
    _run(ctx, plan, parallel, launch, output_dir, tracking_uri, mlflow_experiment,
         (max_seeds or DEFAULT_MAX_SEEDS) if auto else None)


def _parse_arms(arm_names: str | None) -> list[str] | None:
    if arm_names is None:
        return None
    arms = [a.strip() for a in arm_names.split(",")]
    if not all(arms):
        raise click.BadParameter(f"{arm_names!r}: give arm names separated by commas (control, treatment)",
                                 param_hint="--arms")
    repeated = sorted({arm for arm in arms if arms.count(arm) > 1})
    if repeated:
        raise click.BadParameter(f"{repeated[0]!r} is listed twice: each arm trains once per seed", param_hint="--arms")
    return arms


def _print_plan(plan) -> None:
    from rich.markup import escape
    from rich.syntax import Syntax

    out = console()
    specs = plan.specs
    if plan.unmet:
        out.print(f"[bold]{plan.hypothesis.id} does not apply to this run[/]: {escape('; '.join(plan.unmet))}. "
                  "A real run records it not_applicable and trains nothing.")
    out.print(f"[bold]{len(specs)} runs[/] (config hash {plan.config_hash}); nothing is trained in a dry run.")
    shown = set()
    for spec in specs:
        if spec.arm in shown:
            continue
        shown.add(spec.arm)
        seeds = [s.seed for s in specs if s.arm == spec.arm]
        body = spec.model_dump(exclude={"test_id", "output_dir", "threads", "seed"})
        out.print(f"\n[bold]{spec.arm}[/] seeds {seeds}")
        if plan.unmet and spec.arm != "control" and any(s.command for s in specs):
            out.print("  not mapped onto the script's flags: the hypothesis does not apply, nothing trains")
            continue
        if spec.command:  # what the arm runs, as a shell would take it; the script holds the rest of its setup
            from hypotrack.run.planning.command_plan import CommandLine

            line = CommandLine(spec.command, spec.command_env).shown()
            out.print(f"  seed {spec.seed}, in {escape(spec.command_cwd)}:\n  {escape(line)}", soft_wrap=True)
            out.print(f"  hooks inside the script's GRPOTrainer: {', '.join(spec.hooks) or 'none'}")
            continue
        out.print(Syntax(json.dumps(body, indent=2, default=str), "json", theme="ansi_dark", word_wrap=True))


def _run(ctx: Context, plan, parallel, launch, output_dir, tracking_uri, mlflow_experiment,
         max_seeds: int | None) -> None:
    from hypotrack.cli.progress import ProgressDisplay, print_outcome
    from hypotrack.run.api import run_prepared, run_until_decided
    from hypotrack.run.lifecycle import RunOptions

    out = console()
    registry = ctx.registry()
    options = RunOptions(parallel=parallel, launcher=launch.launcher, processes=launch.processes,
                         ray_address=launch.ray_address, output_dir=output_dir, tracking_uri=tracking_uri,
                         mlflow_experiment=mlflow_experiment, flags=plan.flags)
    with ProgressDisplay(out) as display:
        def announce(test_id: str, parent_id: str, uri: str) -> None:
            runs = "the next seeds (--seeds auto)" if max_seeds is not None else f"{len(plan.specs)} runs"
            display.note(f"test run {test_id}: {runs}, MLflow parent run {parent_id} ({uri})")

        if max_seeds is None:
            outcome = run_prepared(plan, registry, options, display.update, announce)
        else:
            outcomes = run_until_decided(plan, registry, options, max_seeds=max_seeds, display=display.update,
                                         on_start=announce)
            outcome = outcomes[-1]
            seeds = outcome.verdict.seeds if outcome.verdict else []
            display.note(f"--seeds auto: {len(outcomes)} test run(s), {len(seeds)} seeds in the verdict")
    print_outcome(out, plan.hypothesis, outcome)
    if outcome.state == "killed":
        sys.exit(130)
    if outcome.state == "failed":
        sys.exit(1)
