"""Commands that write to the registry by hand: mark a status, add a note."""

from __future__ import annotations

import math

import click

from hypotrack.cli.context import Context, pass_ctx
from hypotrack.definitions.vocabulary import STATUSES
from hypotrack.text import printable


@click.command()
@click.argument("hypothesis_id", metavar="ID")
@click.argument("new_status", metavar="STATUS",
                type=click.Choice(STATUSES))
@click.option("--confidence", type=click.FloatRange(0.0, 1.0), callback=lambda _ctx, _param, value: _finite(value),
              help="Confidence between 0 and 1.")
@click.option("--note", default="", help="Why: stored with the status change.")
@pass_ctx
def mark(ctx: Context, hypothesis_id: str, new_status: str, confidence: float | None, note: str) -> None:
    """Set a hypothesis's status by hand (the change and its reason go to the history).

    \b
    Example:
        hypotrack mark h03 partial --confidence 0.8 --note "KL beta=0 fixed gradients, not rewards"
    """
    from hypotrack.registry.store import set_status

    ctx.check_id(hypothesis_id)
    change = set_status(ctx.registry(), hypothesis_id, new_status, reason=note or "marked by hand",
                        confidence=confidence)
    click.echo(f"{hypothesis_id}: {change.from_status} -> {change.to_status}")


@click.command()
@click.argument("hypothesis_id", metavar="ID")
@click.argument("text")
@pass_ctx
def note(ctx: Context, hypothesis_id: str, text: str) -> None:
    """Attach a free-form note to a hypothesis.

    \b
    Example:
        hypotrack note h02 "env tokens are masked since commit abc123"
    """
    from hypotrack.registry.store import add_note

    ctx.check_id(hypothesis_id)
    if not printable(text).strip():  # what would be stored: control characters never are
        raise click.BadParameter("the note is empty (control characters and escape sequences are not kept)",
                                 param_hint="TEXT")
    add_note(ctx.registry(), hypothesis_id, text)
    click.echo(f"{hypothesis_id}: note added")


def _finite(value: float | None) -> float | None:
    # click's FloatRange lets NaN through: every comparison with NaN is False
    if value is not None and math.isnan(value):
        raise click.BadParameter("must be a number between 0 and 1, not nan", param_hint="--confidence")
    return value
