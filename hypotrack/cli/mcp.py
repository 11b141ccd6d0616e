"""`hypotrack mcp`: serve hypotrack's commands to a coding agent over the Model Context Protocol."""

from __future__ import annotations

import click

from hypotrack.cli.context import Context, pass_ctx


@click.command()
@click.option("--guide", is_flag=True, help="Print the agent guide (how to investigate a failing GRPO run with "
              "these tools) and exit.")
@pass_ctx
def mcp(ctx: Context, guide: bool) -> None:
    """Serve status, next, show, triage, validate, report and run as MCP tools over stdio.

    Each tool answers with the JSON the command prints with --json, and bad input with the
    command's own error message; `run` is a dry run unless called with train=true, and streams
    its progress. The registry and project are the ones given to `hypotrack` (--db, --project).

    \b
    Example (an MCP client's server entry):
        {"command": "hypotrack", "args": ["--db", "hypotrack.db", "mcp"]}
    """
    from hypotrack.mcp import GUIDE

    if guide:
        click.echo(GUIDE.read_text(), nl=False)
        return
    try:
        from hypotrack.mcp.server import serve
    except ImportError as exc:
        raise click.ClickException(f"the MCP server needs the `mcp` package ({exc}): pip install 'mcp>=2'") from None
    from hypotrack.mcp.commands import Where

    serve(Where(ctx.db_url, ctx.project_root))
