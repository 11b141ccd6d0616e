"""`hypotrack init` and `hypotrack new`: start a project, write a hypothesis from the template."""

from __future__ import annotations

from pathlib import Path

import click

from hypotrack.cli.context import Context, pass_ctx


@click.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--command", "command", metavar="'python train.py ...'",
              help="Also write experiments/my_script.yaml: your own training command as an experiment, run where you "
                   "type this, its common flags and key=value arguments mapped to hypotrack's treatments and the rest "
                   "commented.")
@pass_ctx
def init(ctx: Context, directory: Path | None, command: str | None) -> None:
    """Start a project here (or in DIRECTORY): hypotheses/ and experiments/ with a run template.

    The hypotheses that ship with hypotrack are always available; experiments/my_run.yaml is a
    template of your own run (loader, task and auxiliary rewards, LoRA, KL) that runs on the toy
    lab as it is. With --command, experiments/my_script.yaml runs your own script instead.

    \b
    Example:
        hypotrack init && hypotrack run h06 --no-peft
        hypotrack run h05 --experiment my_run
        hypotrack init --command "python train.py --lr 1e-6 --beta 0.04"
    """
    from hypotrack.definitions.project import Project
    from hypotrack.scaffold import init_project, write_command_experiment

    root = Project.locate(directory or ctx.project_root).root
    if command is not None:
        # the command runs where the user typed it (the experiment's command.cwd says so)
        written = write_command_experiment(root, command, typed_in=Path.cwd())
        click.echo(f"created {written}: set task_reward, check the mapping, then "
                   "hypotrack run h03 --experiment my_script --dry-run")
    created, kept = init_project(root)
    for path in created:
        click.echo(f"created {path}")
    for path in kept:
        click.echo(f"kept    {path} (already there)")
    click.echo("Next: hypotrack status, then hypotrack run h06 --no-peft (the toy lab), or edit "
               "experiments/my_run.yaml into your own run and test it with --experiment my_run.")


@click.command()
@click.argument("hypothesis_id", metavar="ID")
@click.argument("title")
@click.option("--experiment", default="my_run", show_default=True, metavar="NAME",
              help="The run to test it on: an experiment name or a YAML path.")
@click.option("--statement", default="", help="What you think is wrong, one or two sentences.")
@pass_ctx
def new(ctx: Context, hypothesis_id: str, title: str, experiment: str, statement: str) -> None:
    """Write hypotheses/ID_<slug>.yaml from the commented template, then check it.

    \b
    Example:
        hypotrack new h20 "Reward model drifts" --statement "The reward model scores length, not answers."
    """
    from hypotrack.definitions import Project, SpecError, load_library
    from hypotrack.definitions.loader import resolve_experiment_path
    from hypotrack.scaffold import new_hypothesis

    project = Project.locate(ctx.project_root)
    library = load_library(project)
    if experiment not in library.experiments and not resolve_experiment_path(experiment, project).exists():
        known = ", ".join(sorted(library.experiments)) or "none"
        hint = "; `hypotrack init` writes the my_run template" if experiment == "my_run" else ""
        raise click.BadParameter(f"experiment {experiment!r} not found (known: {known}){hint}",
                                 param_hint="--experiment")
    path = new_hypothesis(project.hypotheses_dir, hypothesis_id, title, experiment, statement,
                          taken=library.hypothesis_files)
    written = load_library(project, [path])
    if written.problems:  # a file every later command would trip over is not left behind
        path.unlink()
        raise SpecError(written.problems)
    click.echo(f"created {path}: edit its statement, treatment and criteria, then `hypotrack run {hypothesis_id}`")
