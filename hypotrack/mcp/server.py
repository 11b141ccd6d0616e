"""The MCP server: hypotrack's investigation commands as tools, over stdio.

Every tool answers with the text the CLI prints for the same command with `--json` (`report` and
`validate`, which have no JSON form, with their text), and a refused input with the CLI's own
one-paragraph message as an error result. status, next, show, report and validate call the library
(hypotrack.investigation) for their records; triage (which may read MLflow) and run (which trains)
run as their commands in a child process (commands.py, training.py). This process imports no torch,
mlflow or trl.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from hypotrack import __version__
from hypotrack.cli import friendly_error
from hypotrack.definitions.loader import SpecError
from hypotrack.errors import HypotrackError
from hypotrack.investigation import (
    Hypotheses,
    next_record,
    record_json,
    report_markdown,
    show_record,
    status_record,
    validation_record,
)
from hypotrack.mcp import GUIDE
from hypotrack.mcp.commands import CommandFailed, Where, run_command
from hypotrack.mcp.training import RunRequest, run_streaming
from hypotrack.registry import Registry, RegistryError

READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
T = TypeVar("T")
REFUSED = (HypotrackError, SpecError, RegistryError)  # input the user can fix: the CLI words it (friendly_error)


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _refused(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _command(call: Callable[[], str]) -> CallToolResult:
    try:
        return _text(call().strip())
    except CommandFailed as exc:
        return _refused(str(exc))


def _reading(where: Where, read: Callable[[Registry, Hypotheses], T], hypothesis_id: str | None = None) -> T:
    """`read` on the registry and the hypotheses, opened as a command opens them (dead runners' tests marked
    killed). The files are read and the id checked first, so a broken file or an unknown id opens no registry."""
    from hypotrack.cli.context import Context as CommandContext

    opened = CommandContext(where.db, where.project)
    hypotheses = opened.hypotheses()
    if hypothesis_id is not None:
        hypotheses.check(hypothesis_id)
    registry = opened.registry()
    try:
        return read(registry, hypotheses)
    finally:
        registry.dispose()


def _refusal(exc: Exception) -> CallToolResult:
    """The error result for input the CLI refuses, in the CLI's words (`Error: ...`)."""
    return _refused(friendly_error(exc)[0] or str(exc))


def _read(where: Where, answer_with: Callable[[Registry, Hypotheses], str],
          hypothesis_id: str | None = None) -> CallToolResult:
    try:
        return _text(_reading(where, answer_with, hypothesis_id))
    except REFUSED as exc:
        return _refusal(exc)


def build(where: Where) -> MCPServer:
    server = MCPServer("hypotrack", version=__version__, instructions=GUIDE.read_text())

    @server.tool(annotations=READS)
    def status() -> CallToolResult:
        """Every hypothesis with its status, confidence, latest evidence, last run and triage rank
        (the JSON of `hypotrack status --json`)."""
        return _read(where, lambda registry, hypotheses: record_json(status_record(registry, hypotheses)))

    @server.tool(name="next", annotations=READS)
    def next_() -> CallToolResult:
        """Which hypothesis to test next and why: the top unresolved triage suspect, else priority and
        prerequisites (`hypotrack next --json`)."""
        return _read(where, lambda registry, hypotheses: record_json(next_record(registry, hypotheses)))

    @server.tool(annotations=READS)
    def show(hypothesis: str) -> CallToolResult:
        """One hypothesis: its definition, status history, notes, test runs with their verdicts and MLflow
        run ids, and its triage reading (`hypotrack show ID --json`)."""
        return _read(where, lambda registry, hypotheses: record_json(show_record(registry, hypotheses, hypothesis)),
                     hypothesis)

    @server.tool(annotations=WRITES)
    def triage(source: str, tracking_uri: str | None = None, task_reward: str | None = None) -> CallToolResult:
        """Rank the hypotheses on a run's own logs before training anything (`hypotrack triage SOURCE --json`).

        source: a training output folder (its trainer_state.json, or the newest checkpoint's), a
        trainer_state.json, a CSV with a step column, or an MLflow run id / runs:/<id> URI.
        tracking_uri: the MLflow store of an MLflow run source. task_reward: the logged reward function that
        measures the task. The ranking is recorded in the registry; `next` then starts from its top suspect."""
        options = [*(["--tracking-uri", tracking_uri] if tracking_uri else []),
                   *(["--task-reward", task_reward] if task_reward else [])]
        # after "--", a source that starts with "-" is a source, never an option (and "-" finds nothing piped in)
        return _command(lambda: run_command(where, "triage", *options, "--json", "--", source))

    @server.tool(annotations=READS)
    def validate(paths: list[str] | None = None) -> CallToolResult:
        """Check the hypothesis and experiment files (all of them, or the given paths); every problem is
        reported as file:line: key: message (`hypotrack validate`)."""
        try:
            return _text(validation_record(Path(where.project) if where.project else None,
                                           [Path(p) for p in paths or []]).text())
        except REFUSED as exc:
            return _refusal(exc)

    @server.tool(annotations=READS)
    def report() -> CallToolResult:
        """The investigation as markdown: status summary, next action, the experiments log (`hypotrack report`)."""
        return _read(where, lambda registry, hypotheses: report_markdown(registry, hypotheses).strip())

    @server.tool(annotations=WRITES)
    async def run(hypothesis: str, ctx: Context, train: bool = False, seeds: int | None = None,
                  max_steps: int | None = None, flags: list[str] | None = None) -> CallToolResult:
        """Test a hypothesis (`hypotrack run ID`). By default a dry run: the resolved arms and configs, nothing
        trained. train=true trains control and treatment over the seeds (minutes), streaming each progress
        line, and answers with the test's record as `show` lists it (verdict, confidence, effect, MLflow runs).
        flags: other `hypotrack run` flags as on a command line, e.g. ["--no-peft", "--batch-size", "8"]."""
        request = RunRequest(hypothesis, train, seeds, max_steps, tuple(flags or ()))

        async def progress(count: int, line: str) -> None:
            await ctx.report_progress(count, None, line)

        try:
            output = await run_streaming(where, request, progress)
        except CommandFailed as exc:
            return _refused(str(exc))
        if not train:
            return _text(json.dumps({"dry_run": True, "plan": output}, indent=2))
        try:
            shown = _reading(where, lambda registry, hypotheses: show_record(registry, hypotheses, hypothesis).as_json(),
                             hypothesis)
        except REFUSED as exc:
            return _refusal(exc)
        latest = shown["runs"][0] if shown["runs"] else None  # the runs are listed newest first
        return _text(json.dumps({"dry_run": False, "test": latest, "status": shown["status"],
                                 "output_tail": output}, indent=2, default=str))

    return server


def serve(where: Where) -> None:
    """Serve the tools on stdin/stdout until the client closes them."""
    build(where).run("stdio")
