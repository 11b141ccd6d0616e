"""`status` and `--help` stay light: no heavy imports, and fast with 1,000 recorded test runs."""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "mlflow", "trl", "transformers", "peft", "datasets")
PROBE = """
import json, sys
from hypotrack.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print("@@MODULES@@" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _bench():
    spec = importlib.util.spec_from_file_location("bench_cli", Path(__file__).parent / "tools" / "bench_cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def loaded_modules(env: dict[str, str], *args: str) -> set[str]:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True,
                            timeout=120)
    line = [out for out in result.stdout.splitlines() if out.startswith("@@MODULES@@")][-1]
    data = json.loads(line[len("@@MODULES@@"):])
    assert data["code"] in (0, None), result.stderr
    return {m.split(".")[0] for m in data["modules"]}


def test_status_and_help_import_nothing_heavy(cli_env, registry_url):
    from hypotrack.registry import open_registry

    open_registry(registry_url).dispose()  # schema current before `status` runs
    status = loaded_modules(cli_env, "status")
    assert "sqlalchemy" in status  # the probe really ran the command
    assert not status & set(HEAVY), status & set(HEAVY)
    assert "alembic" not in status
    # Once the validated summaries are cached, status parses no YAML and builds no pydantic model.
    assert not loaded_modules(cli_env, "status") & {"pydantic", "yaml", "alembic"}
    help_ = loaded_modules(cli_env, "--help")
    assert not help_ & {*HEAVY, "alembic"}, help_ & {*HEAVY, "alembic"}


def test_status_on_empty_registry_migrates(cli_env):
    # the first command on a new file does need alembic; it must still stay clear of the heavy stack
    modules = loaded_modules(cli_env, "status")
    assert "alembic" in modules and not modules & set(HEAVY)


def test_status_and_help_are_fast_with_1000_runs(seed_project_dir, cli_env, registry_path):
    """Median cold time <= 0.4 s over 5 runs each, with 1,000 test runs in the registry.

    The budget is the issue's: 0.4 s where importing click, pydantic, PyYAML, SQLAlchemy and rich
    alone takes about 0.3 s. The test suite runs two files at a time on two cores, so wall time there
    measures the neighbour as much as the command (one CI run read 0.82 s for a command that takes
    0.28 s idle). The test therefore holds each command's CPU time (user + system), which is what its
    wall time is on an idle machine, to max(0.4 s, 4/3 of the floor's CPU time). The floor is measured
    interleaved with the commands, so a drift in the machine's speed moves both alike
    (HYPOTRACK_TIMING_LIMIT overrides the 0.4). Wall times are printed beside them.
    """
    base_limit = float(os.environ.get("HYPOTRACK_TIMING_LIMIT", "0.4"))
    bench = _bench()
    ids = ["h01", "h02", "h03", "h04", "h05", "h06"]
    bench.fill_registry(f"sqlite:///{registry_path}", ids)
    env = bench.command_env(seed_project_dir, registry_path)
    bench.time_command(["status"], env, 1)  # writes the .pyc files; a user's install has them too
    bench.CPU_TIMES.clear()
    walls: dict[str, list[float]] = {"status": [], "--help": [], "floor": []}
    for _ in range(5):
        walls["floor"] += bench.floor_times(1)
        walls["status"] += bench.time_command(["status"], env, 1)
        walls["--help"] += bench.time_command(["--help"], env, 1)
    cpu = {name: statistics.median(times) for name, times in bench.CPU_TIMES.items()}
    wall = {name: round(statistics.median(times), 3) for name, times in walls.items()}
    limit = max(base_limit, cpu["floor"] * 4 / 3)
    print(f"median cold CPU time: { {k: round(v, 3) for k, v in cpu.items()} }, limit {limit:.3f} s; "
          f"median wall time {wall} (load {os.getloadavg()[0]:.2f})")
    assert cpu["status"] <= limit and cpu["--help"] <= limit, (
        f"median cold CPU times {cpu} exceed {limit:.3f} s (wall times {wall}, "
        f"load average {os.getloadavg()[0]:.2f})")
