"""Shared set-up for tests that run `hypotrack run` for real (tiny toy-lab runs in subprocesses)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Small enough for CI on 2 cores, large enough that every arm logs several steps.
TINY = ["--seeds", "1", "--max-steps", "4", "--batch-size", "8", "--num-generations", "4"]


def env_for(tmp: Path, cache: Path, project: Path = REPO) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "HYPOTRACK_PROJECT": str(project),
        "HYPOTRACK_DB": str(tmp / "registry.db"),
        "HYPOTRACK_CACHE": str(cache),
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'mlflow.db'}",
        "HF_HUB_OFFLINE": "1",
        "PYTHONWARNINGS": "ignore",
        "COLUMNS": "200",  # the CLI wraps to COLUMNS: a test reads whole lines whatever terminal ran pytest
    })
    return env


def cli(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hypotrack.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def start_cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """The CLI as a user starts it in a terminal, whatever started the tests: a shell's background job (`bash .ci/run
    &`) passes SIGINT down ignored, and Python then installs no Ctrl-C handler, so a test of Ctrl-C would test
    nohup's convention instead of hypotrack."""
    return subprocess.Popen([sys.executable, "-m", "hypotrack.cli", *args], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_ctrl_c_as_in_a_terminal)


def _ctrl_c_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for_step(outputs: Path, step: int, timeout: float = 180) -> dict[str, int]:
    """Wait until every arm that started has logged `step`; returns {arm dir: worker pid}."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        pids, steps = {}, {}
        for events in outputs.glob("*/*/events.jsonl"):
            for line in events.read_text().splitlines():
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if event.get("event") == "started":
                    pids[events.parent.name] = event["pid"]
                if event.get("event") == "metrics":
                    steps[events.parent.name] = max(steps.get(events.parent.name, 0), event["step"])
        if pids and all(steps.get(name, 0) >= step for name in pids):
            return pids
        time.sleep(0.3)
    raise TimeoutError(f"no arm reached step {step} in {timeout}s under {outputs}")


def registry_rows(db: Path, sql: str) -> list[tuple]:
    import sqlite3

    if not db.exists():
        return []  # commands that failed early never created the registry: nothing recorded
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    finally:
        con.close()


def mlflow_runs(tmp: Path) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}")
    runs = []
    for experiment in client.search_experiments():
        runs += client.search_runs([experiment.experiment_id])
    return runs


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False
