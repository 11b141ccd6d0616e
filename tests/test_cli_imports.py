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
    """Median cold wall time <= 0.4 s over 5 runs each, with 1,000 test runs in the registry.

    The budget is the issue's: 0.4 s where importing click, pydantic, PyYAML, SQLAlchemy and rich
    alone takes about 0.3 s. That floor is measured here in the same conditions, and the limit is
    max(0.4 s, 4/3 of the floor), so a slower or busier machine moves both together
    (HYPOTRACK_TIMING_LIMIT overrides the 0.4).
    """
    base_limit = float(os.environ.get("HYPOTRACK_TIMING_LIMIT", "0.4"))
    bench = _bench()
    ids = ["h01", "h02", "h03", "h04", "h05", "h06"]
    bench.fill_registry(f"sqlite:///{registry_path}", ids)
    # The floor is measured just before and just after the commands: a shared machine's speed drifts
    # within seconds, and the commands are held to the slower of the two.
    floor_before = statistics.median(bench.floor_times(5))
    results = bench.bench(seed_project_dir, registry_path, runs=5)
    floor = max(floor_before, statistics.median(bench.floor_times(5)))
    limit = max(base_limit, floor * 4 / 3)
    medians = {name: statistics.median(times) for name, times in results.items()}
    print(f"median cold wall time: {medians}, import floor {floor:.3f} s, limit {limit:.3f} s "
          f"(load {os.getloadavg()[0]:.2f})")
    assert medians["status"] <= limit and medians["--help"] <= limit, (
        f"median cold wall times {medians} exceed {limit:.3f} s (import floor {floor:.3f} s, "
        f"load average {os.getloadavg()[0]:.2f})")
