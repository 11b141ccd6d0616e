"""Where every tool reads (the server's --db and --project), and `triage` answered by its command in a child.

`triage` reads MLflow runs as well as log files, and this process never imports MLflow; like `run`
(training.py), it runs as the command a user types, in a child process: the tool answers with what the
command prints with `--json`, or with its one-paragraph error. The other read tools call
hypotrack.investigation in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass


class CommandFailed(Exception):
    """The command refused its input; the message is the CLI's own (`Error: ...`)."""


@dataclass(frozen=True)
class Where:
    """The registry and the project every call reads (the server's --db and --project)."""

    db: str | None = None
    project: str | None = None

    def global_options(self) -> list[str]:
        return [*(["--db", self.db] if self.db else []), *(["--project", self.project] if self.project else [])]


def run_command(where: Where, *args: str, timeout: float = 600) -> str:
    """What `hypotrack <args>` prints on stdout, run in a child process; CommandFailed with its error otherwise."""
    done = subprocess.run([sys.executable, "-m", "hypotrack.cli", *where.global_options(), *args],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, "NO_COLOR": "1"})
    if done.returncode != 0:
        raise CommandFailed(done.stderr.strip() or f"Error: hypotrack {' '.join(args)} exited with code "
                                                     f"{done.returncode}")
    return done.stdout
