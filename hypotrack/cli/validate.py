"""`hypotrack validate`: check hypothesis and experiment files, every problem as file:line: key: message."""

from __future__ import annotations

from pathlib import Path

import click

from hypotrack.cli.context import Context, pass_ctx


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--metrics", "list_metrics", is_flag=True, help="Also list the metric names criteria may use.")
@pass_ctx
def validate(ctx: Context, paths: tuple[Path, ...], list_metrics: bool) -> None:
    """Check hypothesis and experiment files; report every problem as file:line: key: message.

    \b
    Example:
        hypotrack validate
        hypotrack validate hypotheses/h07_my_idea.yaml
    """
    from hypotrack.definitions import Project, SpecError, load_library

    library = load_library(Project.locate(ctx.project_root), list(paths) or None)
    if library.problems:
        raise SpecError(library.problems)
    click.echo(f"ok: {len(library.hypotheses)} hypotheses, {len(library.experiments)} experiments")
    if list_metrics:
        from hypotrack.definitions.metrics import known_metric_patterns

        for name in sorted(known_metric_patterns()):
            click.echo(f"  {name}")
