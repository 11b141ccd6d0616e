"""`hypotrack db`: the registry's schema revision, and migrating it up or down by hand."""

from __future__ import annotations

import click

from hypotrack.cli.context import Context, pass_ctx


@click.group()
def db() -> None:
    """Registry schema: show the revision or migrate (migrations also run on open).

    \b
    Example:
        hypotrack db current
    """


@db.command()
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@pass_ctx
def upgrade(ctx: Context, revision: str) -> None:
    """Migrate the registry up to REVISION.

    \b
    Example:
        hypotrack --db postgresql://team@db/hypotrack db upgrade
    """
    from hypotrack.registry.engine import current_revision
    from hypotrack.registry.engine import upgrade as run_upgrade

    registry = _open_unmigrated(ctx)
    run_upgrade(registry.url, registry.engine, revision)
    click.echo(f"{registry.shown_url}: at revision {current_revision(registry.engine)}")


@db.command()
@click.argument("revision")
@click.option("--yes", is_flag=True, help="Yes, delete what the later revisions hold.")
@pass_ctx
def downgrade(ctx: Context, revision: str, yes: bool) -> None:
    """Migrate the registry down to REVISION ('base' drops every table: every status, note and run).

    \b
    Example:
        hypotrack db downgrade 0002 --yes
    """
    from hypotrack.registry.engine import current_revision
    from hypotrack.registry.engine import downgrade as run_downgrade

    if not yes:  # a downgrade deletes data; on a shared registry, everyone's
        raise click.UsageError(f"downgrading to {revision!r} deletes the tables and columns of the later revisions "
                               "(to 'base': every status, note and run). Add --yes to do it")
    registry = _open_unmigrated(ctx)
    run_downgrade(registry.url, registry.engine, revision)
    click.echo(f"{registry.shown_url}: at revision {current_revision(registry.engine) or 'base'}")


@db.command()
@pass_ctx
def current(ctx: Context) -> None:
    """Print the registry URL and its schema revision.

    \b
    Example:
        hypotrack db current
    """
    from hypotrack.registry.engine import HEAD_REVISION, current_revision

    registry = _open_unmigrated(ctx)
    revision = current_revision(registry.engine)
    state = "current" if revision == HEAD_REVISION else f"behind head {HEAD_REVISION}"
    click.echo(f"{registry.shown_url}: revision {revision or 'none (empty)'} ({state})")


def _open_unmigrated(ctx: Context):
    from hypotrack.registry import open_registry

    return open_registry(ctx.db_url, migrate=False)
