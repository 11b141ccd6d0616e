"""The tools that have no library call of their own, answered by their CLI command inside the server's process.

`triage` (its library reads MLflow runs, which this process never imports) and `validate` run the
same click command a user types, so an agent gets what it prints and, for bad input, the same
one-paragraph message (never a traceback). Output is captured per call; a lock keeps two calls
from capturing each other's lines. The MCP transport keeps its own handle on the real stdout, so
the capture never reaches the protocol stream. The other read tools call hypotrack.investigation.
"""

from __future__ import annotations

import contextlib
import io
import threading
from dataclasses import dataclass

import click

_ONE_AT_A_TIME = threading.Lock()


class CommandFailed(Exception):
    """The command refused its input; the message is the CLI's own (`Error: ...`)."""


@dataclass(frozen=True)
class Where:
    """The registry and the project every call reads (the server's --db and --project)."""

    db: str | None = None
    project: str | None = None

    def global_options(self) -> list[str]:
        return [*(["--db", self.db] if self.db else []), *(["--project", self.project] if self.project else [])]


def answer(where: Where, *args: str) -> str:
    """What `hypotrack <args>` prints on stdout; CommandFailed with what it prints on stderr when it fails."""
    from hypotrack.cli import cli, friendly_error

    out, err = io.StringIO(), io.StringIO()
    with _ONE_AT_A_TIME, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(args=[*where.global_options(), *args], prog_name="hypotrack", standalone_mode=False)
            return out.getvalue()
        except click.ClickException as exc:
            exc.show(file=err)
        except click.exceptions.Exit as exc:
            if exc.exit_code == 0:
                return out.getvalue()
            err.write(f"Error: hypotrack {' '.join(args)} exited with code {exc.exit_code}\n")
        except click.exceptions.Abort:
            err.write("Aborted.\n")
        except Exception as exc:  # the same edge as the CLI's main()
            message, _ = friendly_error(exc)
            if message is None:
                raise
            err.write(message + "\n")
    raise CommandFailed(err.getvalue().strip())
