"""Median cold wall time of `hypotrack status` and `hypotrack --help` with 1,000 recorded test runs.

    python tests/tools/bench_cli.py [--runs 5] [--project DIR] [--seed-only]

Builds a throw-away project copy and registry (six seed hypotheses or the whole shipped set,
1,000 RecordedTest rows), then times fresh `python -m hypotrack.cli` processes and prints the medians.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEED_IDS = ("h01", "h02", "h03", "h04", "h05", "h06")


def make_project(dest: Path, seed_only: bool) -> Path:
    shutil.copytree(REPO / "experiments", dest / "experiments")
    (dest / "hypotheses").mkdir()
    for path in sorted((REPO / "hypotheses").glob("*.yaml")):
        if not seed_only or path.name[:3] in SEED_IDS:
            shutil.copy2(path, dest / "hypotheses" / path.name)
    return dest


def fill_registry(url: str, hypothesis_ids: list[str], runs: int = 1000) -> None:
    """Insert ``runs`` plausible finished RecordedTest rows (and their status changes) straight through SQLAlchemy."""
    from hypotrack.registry import open_registry
    from hypotrack.registry.models import HypothesisState, RecordedTest, StatusChange

    registry = open_registry(url)
    rng = random.Random(0)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    with registry.session() as session, session.begin():
        for hyp in hypothesis_ids:
            session.add(HypothesisState(id=hyp, status="inconclusive", confidence=0.5, updated_at=start))
        for i in range(runs):
            hyp = hypothesis_ids[i % len(hypothesis_ids)]
            began = start + timedelta(minutes=7 * i)
            verdict = rng.choice(["validated", "invalidated", "inconclusive", None])
            run = RecordedTest(
                id=uuid.UUID(int=rng.getrandbits(128)).hex[:12], hypothesis_id=hyp, experiment="toy_arith",
                arms=["control", "treatment"], seeds=[0, 1, 2], flags={"max_steps": 30},
                config_hash=f"{rng.getrandbits(64):016x}", mlflow_parent_run_id=uuid.uuid4().hex,
                mlflow_run_ids={f"{a}/{s}": uuid.uuid4().hex for a in ("control", "treatment") for s in range(3)},
                tracking_uri="sqlite:///mlflow.db", pid=10_000 + i, pid_start=str(1000 + i), host="bench-host",
                state="finished" if verdict else rng.choice(["failed", "killed"]), previous_status="pending",
                verdict=verdict, confidence=round(rng.random(), 3) if verdict else None,
                summary=f"{verdict}: reward [delta, mean_last(10)] = +{rng.random():.3f} >= 0.05" if verdict else None,
                error=None if verdict else "worker exited with code 1", started_at=began,
                ended_at=began + timedelta(minutes=5), mlflow_closed=1)
            session.add(run)
            if verdict:
                session.add(StatusChange(hypothesis_id=hyp, from_status="testing", to_status=verdict,
                                         confidence=run.confidence, reason=run.summary, actor="bench@host",
                                         test_run_id=run.id, at=run.ended_at))
    registry.dispose()


CPU_TIMES: dict[str, list[float]] = {}


def time_command(args: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Wall times; the child's CPU time (user+sys) goes to CPU_TIMES: on a busy machine it is what
    the wall time would be on an idle one."""
    import resource

    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "hypotrack.cli", *args], env=env,
                                capture_output=True, text=True)
        times.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU_TIMES.setdefault(" ".join(args), []).append(
            (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        if result.returncode != 0:
            raise SystemExit(f"hypotrack {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return times


def command_env(project: Path, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPOTRACK_")}
    env.update(HYPOTRACK_PROJECT=str(project), HYPOTRACK_DB=str(db), COLUMNS="200",
               HYPOTRACK_CACHE=str(db.parent / "cache"))
    return env


def bench(project: Path, db: Path, runs: int) -> dict[str, list[float]]:
    env = command_env(project, db)
    time_command(["status"], env, 1)  # writes the .pyc files; a user's install has them too
    return {"status": time_command(["status"], env, runs), "--help": time_command(["--help"], env, runs)}


# What the issue calls the floor: importing these alone takes about 0.3 s on an idle machine.
FLOOR = "import click, pydantic, yaml, sqlalchemy, rich.table, rich.console"


def floor_times(runs: int) -> list[float]:
    """Wall times of a bare Python importing the floor, measured in the same conditions as the commands;
    its CPU times go to CPU_TIMES["floor"]."""
    import resource

    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", FLOOR], capture_output=True, check=True)
        times.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU_TIMES.setdefault("floor", []).append(
            (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed-only", action="store_true", help="Only the six seed hypotheses h01-h06.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp) / "project", args.seed_only)
        db = Path(tmp) / "registry.db"
        ids = sorted(p.name.split("_", 1)[0] for p in (project / "hypotheses").glob("*.yaml"))
        fill_registry(f"sqlite:///{db}", ids)
        results = bench(project, db, args.runs)
        results["floor"] = floor_times(args.runs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(ids)} hypotheses, 1000 test runs, {args.runs} cold runs each, load average {load:.2f} "
          f"on {os.cpu_count()} cores")
    for name, times in results.items():
        cpu = CPU_TIMES.get(name, times)[-len(times):]
        print(f"hypotrack {name:8s} median {statistics.median(times):.3f} s wall  "
              f"(min {min(times):.3f}, max {max(times):.3f}); median CPU {statistics.median(cpu):.3f} s")


if __name__ == "__main__":
    main()
