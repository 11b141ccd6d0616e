"""Rank of the planted hypothesis in the triage of a watched run against the same fault's plain run.

    python tests/tools/watch_triage_ranks.py [--steps 20] [--faults lora_not_synced ...]

Each fault runs tests/watch_user_script.py twice on the toy model, as a user's script: plain (TRL's logs
only) and with `hypotrack.watch(trainer, hypotheses="all")`; both runs' trainer_state.json are triaged
with the shipped hypotheses (task reward: exact_answer). Prints one JSON line per fault.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "watch_user_script.py"
PLANTED = {"lora_not_synced": "h06", "sampling_temperature_not_scored": "h14", "kl_wrong_sign": "h03"}


def triage_rank(folder: Path, hypothesis: str) -> dict:
    from hypotrack.definitions import Project, load_library
    from hypotrack.triage import triage

    library = load_library(Project.locate(Path(__file__).resolve().parents[2]))
    report = triage(str(folder), library.hypotheses, task_reward="exact_answer")
    entry = next(e for e in report.ranking if e.id == hypothesis)
    return {"rank": entry.rank, "evidence": round(entry.evidence, 3), "top": report.ranking[0].id}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--faults", nargs="*", default=list(PLANTED))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HYPOTRACK_DB": str(Path(tmp) / "registry.db")}
        env.pop("MLFLOW_TRACKING_URI", None)
        for fault in args.faults:
            row = {"fault": fault, "hypothesis": PLANTED[fault]}
            for mode, extra in (("plain", ["--no-watch"]), ("watched", ["--hypotheses", "all"])):
                out = Path(tmp) / f"{fault}-{mode}"
                subprocess.run([sys.executable, str(SCRIPT), str(out), "--fault", fault, "--steps", str(args.steps),
                                *extra], check=True, env=env, capture_output=True, cwd=tmp)
                row[mode] = triage_rank(out, PLANTED[fault])
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
