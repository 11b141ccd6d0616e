"""`run` for an agent: `hypotrack run` in a child process, each line it prints handed on as it comes.

A test installs signal handlers and trains for minutes, so it never runs inside the server: the child
is the same command a user types, its lines become MCP progress messages, and its exit code and last
lines become the result.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from hypotrack.mcp.commands import CommandFailed, Where

TAIL_LINES = 40  # what the result keeps of the command's output


@dataclass(frozen=True)
class RunRequest:
    hypothesis: str
    train: bool = False  # False: --dry-run
    seeds: int | None = None
    max_steps: int | None = None
    flags: tuple[str, ...] = ()  # any other `hypotrack run` flags, as typed on a command line

    def command(self, where: Where) -> list[str]:
        return [sys.executable, "-m", "hypotrack.cli", *where.global_options(), "run", self.hypothesis,
                *(["--seeds", str(self.seeds)] if self.seeds is not None else []),
                *(["--max-steps", str(self.max_steps)] if self.max_steps is not None else []),
                *self.flags, *([] if self.train else ["--dry-run"])]


async def run_streaming(where: Where, request: RunRequest, on_line: Callable[[int, str], Awaitable[None]]) -> str:
    """Run the command, calling `on_line(n, line)` for each line it prints; its output, or CommandFailed."""
    process = await asyncio.create_subprocess_exec(
        *request.command(where), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"})
    lines: list[str] = []
    try:
        assert process.stdout is not None
        async for raw in process.stdout:
            line = raw.decode(errors="replace").rstrip()
            if line.strip():
                lines.append(line)
                await on_line(len(lines), line)
        code = await process.wait()
    except BaseException:  # the agent cancelled the call: the test ends as killed, its runs closed
        if process.returncode is None:
            process.terminate()
            await process.wait()
        raise
    if code != 0:
        errors = [line for line in lines if line.startswith("Error")]
        raise CommandFailed("\n".join(lines[lines.index(errors[0]):] if errors else lines[-TAIL_LINES:]))
    return "\n".join(lines[-TAIL_LINES:] if request.train else lines)
