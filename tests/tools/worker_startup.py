"""A toy test run's wall time and its workers' start-up, with and without the forkserver, side by side.

Each round runs `hypotrack run h01 --seeds 2` (four arms, two at a time) on the toy lab, once with
HYPOTRACK_FORKSERVER=0 (every worker a fresh `python -m hypotrack.worker`) and once with the forkserver
(workers forked from a process that imported torch, transformers, peft and TRL once). Start-up is an
arm's MLflow run start to its first logged step (the toy model's build and the held-out evaluation
before training included); the wall time is the whole command's.

    python tests/tools/worker_startup.py --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from command_twins import timings


def one(forkserver: bool, steps: int, tmp: Path) -> tuple[float, list[float], list[float]]:
    from hypotrack.tracking import Tracker

    env = {**os.environ, "HYPOTRACK_DB": str(tmp / "registry.db"), "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'mlflow.db'}",
           "HYPOTRACK_FORKSERVER": "1" if forkserver else "0"}
    started = time.time()
    subprocess.run([sys.executable, "-m", "hypotrack.cli", "run", "h01", "--seeds", "2", "--max-steps", str(steps),
                    "--output-dir", str(tmp / "outputs")], env=env, cwd=tmp, check=True, capture_output=True)
    wall = time.time() - started
    tracker = Tracker(f"sqlite:///{tmp / 'mlflow.db'}")
    runs = tracker.client.search_runs([e.experiment_id for e in tracker.client.search_experiments()],
                                      "tags.`hypotrack.kind` = 'arm'")
    startup, step = timings(tracker, [r.info.run_id for r in runs])
    return wall, startup, step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()
    results: dict[bool, tuple[list[float], list[float], list[float]]] = {False: ([], [], []), True: ([], [], [])}
    for _ in range(args.rounds):
        for forkserver in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                wall, startup, step = one(forkserver, args.steps, Path(tmp))
            results[forkserver][0].append(wall)
            results[forkserver][1].extend(startup)
            results[forkserver][2].extend(step)
            print(f"  {'forkserver' if forkserver else 'spawn     '}: wall {wall:.1f} s, start-up "
                  f"{statistics.median(startup):.2f} s median", flush=True)
    print("\n| workers | test run wall (median) | arm start-up (median) | step (median) |\n|---|---|---|---|")
    for forkserver, (wall, startup, step) in results.items():
        print(f"| {'forked from the forkserver' if forkserver else 'python -m hypotrack.worker'} | "
              f"{statistics.median(wall):.1f} s | {statistics.median(startup):.2f} s | "
              f"{statistics.median(step) * 1000:.0f} ms |")
    print(f"(load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
