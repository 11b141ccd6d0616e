"""Record the plain TRL logs of a self-test's control arms, for the triage calibration tests.

    hypotrack selftest --hypotheses h01,h04 --seeds 2 --output-dir /tmp/st      # trains every fault's runs
    python tests/tools/record_triage_series.py /tmp/st [/tmp/st2 ...] tests/fixtures/triage/selftest_series.json

Reads the self-test's own MLflow store (a SQLite file), keeps the runs triage is calibrated on (each
planted fault on its own hypothesis's experiment, the clean runs on every experiment) and TRL's keys
only (what a plain TRL run logs: hypotrack.triage.keys drops diag/*, eval/* and hypotrack's own keys),
rounded to 6 significant digits, and writes
{"<experiment> <fault> seed <n>": {"plant", "experiment", "seed", "task_reward", "series"}}.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path


def library():
    from hypotrack.definitions import Project, load_library

    return load_library(Project.locate(Path(__file__).resolve().parents[2]))


def own_experiments() -> dict[str, str]:
    """fault -> the experiment its hypothesis is tested on."""
    from hypotrack.faults.manifest import FAULTS

    hypotheses = library().hypotheses
    return {fault: hypotheses[hyp].experiment for fault, (hyp, _) in FAULTS.items() if hyp in hypotheses}


def task_rewards() -> dict[str, str]:
    """experiment -> the name TRL logs its task reward under."""
    return {name: e.rewards[e.task_reward_index()].rsplit(":", 1)[-1]
            for name, e in library().experiments.items() if e.rewards}


def record(store: Path) -> dict:
    from hypotrack.triage.calibration import is_plain_trl_key

    own, tasks = own_experiments(), task_rewards()

    con = sqlite3.connect(f"file:{store / 'mlflow.db'}?mode=ro", uri=True)
    out = {}
    for run_id, name in con.execute("select run_uuid, name from runs where status = 'FINISHED'"):
        tags = dict(con.execute("select key, value from tags where run_uuid = ?", (run_id,)).fetchall())
        if tags.get("hypotrack.kind") != "arm" or tags.get("hypotrack.arm") != "control":
            continue
        series = defaultdict(list)
        for key, value, step in con.execute("select key, value, step from metrics where run_uuid = ? order by step",
                                            (run_id,)):
            if is_plain_trl_key(key):
                series[key].append([int(step), float(f"{value:.6g}")])
        experiment, plant = name.split()[0], tags["hypotrack.plant"]
        if plant != "clean" and own.get(plant) != experiment:
            continue
        label = f"{experiment} {tags['hypotrack.plant']} seed {tags['hypotrack.seed']}"
        out[label] = {"plant": plant, "experiment": experiment, "seed": int(tags["hypotrack.seed"]),
                      "task_reward": tasks.get(experiment), "series": dict(series)}
    return dict(sorted(out.items()))


if __name__ == "__main__":
    data = {}
    for store in sys.argv[1:-1]:  # a later store's run of the same label replaces an earlier one's
        data.update(record(Path(store)))
    data = dict(sorted(data.items()))
    Path(sys.argv[-1]).parent.mkdir(parents=True, exist_ok=True)
    Path(sys.argv[-1]).write_text(json.dumps(data, separators=(",", ":")))
    print(f"{len(data)} runs -> {sys.argv[-1]}")
