"""`hypotrack run` and `hypotrack ui`: the commands that train and that talk to MLflow.

Kept out of cli.py so the read-only commands never pay for these imports.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .cli import Context, pass_ctx


def _parse_sets(values: tuple[str, ...]) -> dict:
    from .spec.settings_check import check_setting, coerce_cli_value

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
@click.option("--seeds", type=click.IntRange(1, 64), help="Number of seeds (0..N-1) instead of the experiment's list.")
@click.option("--max-steps", type=click.IntRange(1), help="Training steps per arm (both arms).")
@click.option("--batch-size", type=click.IntRange(1), help="per_device_train_batch_size (both arms).")
@click.option("--num-generations", type=click.IntRange(2), help="Completions per prompt (both arms).")
@click.option("--logging-steps", type=click.IntRange(1), help="Log every N steps (both arms).")
@click.option("--learning-rate", type=click.FloatRange(min=0, min_open=True), help="Treatment arm learning rate.")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), help="Where arms write [./outputs].")
@click.option("--no-peft", is_flag=True, help="Treatment arm: full fine-tuning instead of LoRA.")
@click.option("--scale-rewards", type=click.Choice(["group", "batch", "none"]), help="Treatment arm advantage scaling.")
@click.option("--kl-beta", type=click.FloatRange(min=0), help="Treatment arm KL coefficient (GRPOConfig beta).")
@click.option("--loss-type", type=click.Choice(["grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo"]),
              help="Treatment arm loss type.")
@click.option("--max-prompt-length", type=click.IntRange(1), help="Treatment arm prompt budget in tokens (data side).")
@click.option("--model", metavar="PATH|HUB_ID|toy:TASK", help="Model for both arms.")
@click.option("--dataset", metavar="SPEC", help="Dataset for both arms: 'name,config,split', a loader 'pkg.mod:func' or a toy task.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Treatment arm: any GRPOConfig field or lora.<field>, type-checked (repeatable).")
@click.option("--plant", multiple=True, metavar="FAULT", help="Plant a known fault in both arms (toy lab self-test).")
@click.option("--arms", "arm_names", metavar="ARMS", help="Comma-separated arms to run [the hypothesis's arms].")
@click.option("--parallel", type=click.IntRange(1), help="Workers at once [number of CPU cores].")
@click.option("--launcher", type=click.Choice(["python", "accelerate"]), default="python", show_default=True,
              help="How workers start; accelerate for multi-GPU machines.")
@click.option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow tracking URI [env MLFLOW_TRACKING_URI].")
@click.option("--mlflow-experiment", metavar="NAME", help="MLflow experiment [hypotrack/<ID>].")
@click.option("--deterministic", is_flag=True, help="Set every seed and deterministic switch; recorded with the run.")
@click.option("--dry-run", is_flag=True, help="Print the resolved arms and configs; train nothing.")
@pass_ctx
def run(ctx: Context, hypothesis_id: str, experiment: str | None, seeds: int | None, max_steps: int | None,
        batch_size: int | None, num_generations: int | None, logging_steps: int | None, learning_rate: float | None,
        output_dir: Path | None, no_peft: bool, scale_rewards: str | None, kl_beta: float | None,
        loss_type: str | None, max_prompt_length: int | None, model: str | None, dataset: str | None,
        sets: tuple[str, ...], plant: tuple[str, ...], arm_names: str | None, parallel: int | None, launcher: str,
        tracking_uri: str | None, mlflow_experiment: str | None, deterministic: bool, dry_run: bool) -> None:
    """Test a hypothesis: train control and treatment arms over seeds, log to MLflow, record the verdict.

    Flags that describe the setup (--max-steps, --batch-size, --num-generations, --logging-steps,
    --model, --dataset, --plant) apply to both arms; the others change the treatment arm only,
    on top of the hypothesis's own treatment.

    \b
    Example:
        hypotrack run h06 --no-peft
        hypotrack run h01 --seeds 3 --scale-rewards none --dry-run
    """
    from .arms import config_hash, resolve_arms
    from .spec.loader import Catalog, load_experiment, resolve_experiment_path
    from .spec.models import Overrides

    hypothesis = ctx.hypothesis(hypothesis_id)
    catalog = ctx.catalog()
    exp_name = experiment or hypothesis.experiment
    exp_path = resolve_experiment_path(exp_name, catalog.project)
    if not exp_path.exists():
        raise click.BadParameter(f"experiment {exp_name!r} not found (looked for {exp_path})", param_hint="--experiment")
    scratch = Catalog(project=catalog.project)
    exp = load_experiment(exp_path, scratch)
    scratch.raise_if_problems()
    try:
        overrides = Overrides(
            peft=False if no_peft else None, scale_rewards=scale_rewards, kl_beta=kl_beta, loss_type=loss_type,
            max_prompt_length=max_prompt_length, learning_rate=learning_rate, max_steps=max_steps,
            batch_size=batch_size, num_generations=num_generations, logging_steps=logging_steps, model=model,
            dataset=dataset, plant=list(plant) or None, set=_parse_sets(sets))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if plant:
        _check_plants(plant)
    arms = [a.strip() for a in arm_names.split(",") if a.strip()] if arm_names else None
    specs = resolve_arms(hypothesis, exp, exp_path, overrides, seeds=list(range(seeds)) if seeds else None,
                         arms=arms, deterministic=deterministic)
    # Recorded with the test run (a JSON column): paths and tuples become strings and lists.
    flags = json.loads(json.dumps({k: v for k, v in click.get_current_context().params.items()
                                   if v not in (None, False, (), "") and k not in ("hypothesis_id", "dry_run")},
                                  default=str))
    if dry_run:
        _print_plan(specs, config_hash(specs))
        return
    _run(ctx, hypothesis, catalog.hypothesis_files[hypothesis.id], specs, flags, parallel, launcher, output_dir,
         tracking_uri, mlflow_experiment)


def _check_plants(plant: tuple[str, ...]) -> None:
    try:
        from .toy.faults import FAULTS
    except ImportError:
        raise click.BadParameter("this install has no planted faults", param_hint="--plant") from None
    for name in plant:
        if name not in FAULTS:
            raise click.BadParameter(f"unknown fault {name!r} (known: {', '.join(sorted(FAULTS))})",
                                     param_hint="--plant")


def _print_plan(specs, digest: str) -> None:  # noqa: ANN001
    import json

    from rich.console import Console
    from rich.syntax import Syntax

    console = Console()
    console.print(f"[bold]{len(specs)} runs[/] (config hash {digest}); nothing is trained in a dry run.")
    shown = set()
    for spec in specs:
        if spec.arm in shown:
            continue
        shown.add(spec.arm)
        seeds = [s.seed for s in specs if s.arm == spec.arm]
        body = spec.model_dump(exclude={"test_id", "output_dir", "threads", "seed"})
        console.print(f"\n[bold]{spec.arm}[/] seeds {seeds}")
        console.print(Syntax(json.dumps(body, indent=2, default=str), "json", theme="ansi_dark", word_wrap=True))


def _run(ctx: Context, hypothesis, hypothesis_file: Path, specs, flags: dict, parallel, launcher, output_dir,  # noqa: ANN001
         tracking_uri, mlflow_experiment) -> None:
    from rich.console import Console

    from .progress import ProgressDisplay, print_outcome
    from .runner import RunOptions, run_test

    console = Console() if sys.stdout.isatty() else Console(width=160)
    registry = ctx.registry()
    options = RunOptions(parallel=parallel, launcher=launcher, output_dir=output_dir, tracking_uri=tracking_uri,
                         mlflow_experiment=mlflow_experiment, flags=flags)
    with ProgressDisplay(console) as display:
        def announce(test_id: str, parent_id: str, uri: str) -> None:
            display.note(f"test run {test_id}: {len(specs)} runs, MLflow parent run {parent_id} ({uri})")

        outcome = run_test(hypothesis, hypothesis_file, specs, registry, options, display.update, announce)
    print_outcome(console, hypothesis, outcome)
    if outcome.state == "killed":
        sys.exit(130)
    if outcome.state == "failed":
        sys.exit(1)


@click.command()
@click.option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store to show [env MLFLOW_TRACKING_URI; "
              "default MLflow's own default, sqlite:///mlflow.db].")
@click.option("--port", type=click.IntRange(1, 65535), default=5000, show_default=True)
@click.option("--no-wait", is_flag=True, help="Start, print the URL and return (the server keeps running).")
def ui(tracking_uri: str | None, port: int, no_wait: bool) -> None:
    """Start the MLflow UI on the same store as `hypotrack run`, on 127.0.0.1, and print its URL.

    The server runs in its own process group; leaving (Ctrl-C) ends the whole group, job
    consumers included.

    \b
    Example:
        hypotrack ui --port 5001
    """
    from .mlflow_ui import serve

    serve(tracking_uri, port, wait=not no_wait)
