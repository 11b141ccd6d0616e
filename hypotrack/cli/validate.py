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
    from hypotrack.investigation import validation_record

    click.echo(validation_record(ctx.project_root, list(paths), list_metrics).text())
