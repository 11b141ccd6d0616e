"""`hypotrack mcp`: the tools through the `mcp` SDK's own client, on a real registry file and project.

The server is the installed command started over stdio, as an agent's MCP client starts it. The
triage reads a TRL log recorded from a real run (tests/fixtures/triage/, a planted completion budget
that clips every answer); the run tool makes a dry run of h06.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install -e '.[test]')")

from conftest import dump_sqlite
from mcp import Client
from mcp.client.stdio import StdioServerParameters

RECORDED = Path(__file__).resolve().parent / "fixtures" / "triage" / "selftest_series.json"
CLIPPED_RUN = "toy_arith completion_budget_too_short seed 0"  # h12's fault, as TRL logged it
TOOLS = {"status", "next", "show", "triage", "validate", "report", "run"}


def trainer_state(folder: Path, label: str) -> Path:
    """The recorded run as TRL's trainer_state.json: one log_history entry per step."""
    series = json.loads(RECORDED.read_text())[label]["series"]
    steps: dict[int, dict] = {}
    for metric, points in series.items():
        for step, value in points:
            steps.setdefault(int(step), {"step": int(step)})[metric] = value
    folder.mkdir(parents=True)
    (folder / "trainer_state.json").write_text(json.dumps({"log_history": [steps[s] for s in sorted(steps)],
                                                            "global_step": max(steps)}))
    return folder


def mlflow_run(store: str, label: str) -> str:
    """The recorded run as TRL's MLflow callback logs it, in a real MLflow store; its run id."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(store)
    run_id = client.create_run(client.create_experiment("grpo")).info.run_id
    series = json.loads(RECORDED.read_text())[label]["series"]
    metrics = [Metric(key, float(value), 0, int(step)) for key, points in series.items() for step, value in points]
    for start in range(0, len(metrics), 900):
        client.log_batch(run_id, metrics=metrics[start:start + 900])
    client.set_terminated(run_id)
    return run_id


def text(result) -> str:  # a CallToolResult
    return "".join(block.text for block in result.content)


def test_an_agent_triages_a_trl_log_dry_runs_the_suspect_and_reads_status(cli_env, tmp_path, registry_path):
    run_folder = trainer_state(tmp_path / "grpo-run", CLIPPED_RUN)
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    logged = mlflow_run(store, CLIPPED_RUN)
    server = StdioServerParameters(command=sys.executable, args=["-m", "hypotrack.cli", "mcp"],
                                   env=cli_env, cwd=str(tmp_path))
    timings: dict[str, float] = {}

    async def session() -> dict:
        seen: dict = {}
        started = time.monotonic()
        async with Client(server) as client:
            timings["start_s"] = time.monotonic() - started
            seen["tools"] = {tool.name: tool for tool in (await client.list_tools()).tools}
            started = time.monotonic()
            seen["status"] = await client.call_tool("status", {})
            timings["status_s"] = time.monotonic() - started
            started = time.monotonic()
            seen["triage"] = await client.call_tool("triage", {"source": str(run_folder), "task_reward": "arith_correct"})
            timings["triage_s"] = time.monotonic() - started
            seen["next"] = await client.call_tool("next", {})
            seen["triage_mlflow"] = await client.call_tool("triage", {"source": f"runs:/{logged}", "tracking_uri": store,
                                                                      "task_reward": "arith_correct"})
            lines: list[str] = []

            async def progress(_done: float, _total: float | None, message: str | None) -> None:
                lines.append(message or "")

            seen["dry_run"] = await client.call_tool("run", {"hypothesis": "h06", "seeds": 2, "flags": ["--no-peft"]},
                                                     progress_callback=progress)
            seen["dry_run_lines"] = lines
            before = dump_sqlite(registry_path)
            seen["unknown"] = await client.call_tool("show", {"hypothesis": "h99"})
            seen["bad_flag"] = await client.call_tool("run", {"hypothesis": "h06", "flags": ["--seeds", "many"]})
            seen["unchanged"] = dump_sqlite(registry_path) == before
            seen["show"] = await client.call_tool("show", {"hypothesis": "h12"})
        return seen

    seen = asyncio.run(session())
    print("\nMCP server through the SDK client, seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in timings.items()))

    assert set(seen["tools"]) == TOOLS
    assert seen["tools"]["status"].annotations.read_only_hint is True
    assert "train" in seen["tools"]["run"].input_schema["properties"]

    # status: the same JSON as `hypotrack status --json`
    assert not seen["status"].is_error
    rows = {row["id"]: row for row in json.loads(text(seen["status"]))}
    cli_rows = {row["id"]: row for row in json.loads(subprocess.run(
        [sys.executable, "-m", "hypotrack.cli", "status", "--json"], env=cli_env, cwd=tmp_path,
        capture_output=True, text=True, check=True).stdout)}
    assert rows.keys() == cli_rows.keys() and rows["h06"]["status"] == "pending"

    # triage: every completion clipped ranks h12 first, and `next` starts from it
    assert not seen["triage"].is_error, text(seen["triage"])
    report = json.loads(text(seen["triage"]))
    assert report["ranking"][0]["hypothesis"] == "h12" and report["ranking"][0]["suspect"]
    assert json.loads(text(seen["next"]))["next"] == "h12"
    assert json.loads(text(seen["show"]))["triage"]["rank"] == 1
    assert not seen["triage_mlflow"].is_error, text(seen["triage_mlflow"])
    from_mlflow = json.loads(text(seen["triage_mlflow"]))
    assert from_mlflow["kind"] == "mlflow" and from_mlflow["ranking"][0]["hypothesis"] == "h12"

    # run: a dry run unless asked to train; its lines arrive as progress
    assert not seen["dry_run"].is_error, text(seen["dry_run"])
    plan = json.loads(text(seen["dry_run"]))
    assert plan["dry_run"] is True and "nothing is trained in a dry run" in plan["plan"]
    assert any("nothing is trained" in line for line in seen["dry_run_lines"])
    assert not list(tmp_path.glob("outputs/h06-*")), "a dry run trained"

    # bad input: the CLI's own message, as an error result; the registry untouched
    assert seen["unknown"].is_error and "no hypothesis 'h99'" in text(seen["unknown"])
    assert "Traceback" not in text(seen["unknown"])
    assert seen["bad_flag"].is_error and "--seeds" in text(seen["bad_flag"])
    assert "Traceback" not in text(seen["bad_flag"])
    assert seen["unchanged"]


def test_the_read_only_tools_import_no_training_stack(cli_env, tmp_path):
    run_folder = trainer_state(tmp_path / "grpo-run", CLIPPED_RUN)
    probe = ("import asyncio, json, sys\n"
             "from hypotrack.mcp.server import build\n"
             "from hypotrack.mcp.commands import Where\n"
             "server = build(Where())\n"
             "for name, args in (('status', {}), ('next', {}), ('show', {'hypothesis': 'h06'}), ('validate', {}),"
             f" ('report', {{}}), ('triage', {{'source': {str(run_folder)!r}}})):\n"
             "    result = asyncio.run(server.call_tool(name, args))\n"
             "    assert not result.is_error, (name, result)\n"
             "print(json.dumps([m for m in ('torch', 'mlflow', 'trl', 'transformers') if m in sys.modules]))\n")
    result = subprocess.run([sys.executable, "-c", probe], env=cli_env, cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_the_agent_guide_ships_with_the_package(cli_env, tmp_path):
    result = subprocess.run([sys.executable, "-m", "hypotrack.cli", "mcp", "--guide"], env=cli_env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    guide = result.stdout
    steps = [guide.index(f"## {n}. {tool}") for n, tool in enumerate(("triage", "next", "run", "show"), start=1)]
    assert steps == sorted(steps)  # in the order an investigation takes
    assert "train: true" in guide and os.linesep in guide
