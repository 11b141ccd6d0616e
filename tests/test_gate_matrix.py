"""The live gates against models users build (tests/gate_scripts/): each script clean and with the fault each gate
exists for. Every gate fails on its fault, at the step it can first see it, naming its hypothesis, and no other
gate fails with it; every clean script is silent. The run's record in the registry carries the gate's finding.

The whole matrix (``-m gate_matrix``, CI's own step) runs every script in one process, about a minute on one
core; the default suite runs the cases of a user who wraps their own PeftModel (FAST), and watches two trainers.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "gate_scripts"
sys.path.insert(0, str(SCRIPTS))

from matrix import CLEAN, FAST, FAULTY  # noqa: E402 - the matrix lives beside the scripts it runs

MARKER = "@@gate-script@@"
CASES = [(name, args, None, None, None) for name, args in CLEAN] + FAULTY


def run_scripts(tmp_path: Path, toy_cache: Path, cases: list[tuple], extra: list[str] | None = None) -> dict:
    """case name -> the result lines its script printed (one per trainer), every case run in one Python."""
    batch = [[str(tmp_path / f"case{index}"), *args, *(extra or [])] for index, (_, args, *_) in enumerate(cases)]
    (tmp_path / "batch.json").write_text(json.dumps(batch))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYPOTRACK_", "MLFLOW_"))}
    env.update(HYPOTRACK_CACHE=str(toy_cache), HYPOTRACK_DB=str(tmp_path / "registry.db"), OMP_NUM_THREADS="1",
               PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, str(SCRIPTS / "user_peft_script.py"), "--batch", str(tmp_path / "batch.json")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    results: dict[str, list[dict]] = {}
    for line in done.stdout.splitlines():
        if line.startswith(MARKER):
            result = json.loads(line[len(MARKER):])
            results.setdefault(cases[int(result["run"][len("case"):])][0], []).append(result)
    assert set(results) == {case[0] for case in cases}, done.stdout[-3000:]
    return results


def recorded_failures(tmp_path: Path, triage_id: str) -> list[dict]:
    with sqlite3.connect(tmp_path / "registry.db") as con:
        (report,) = con.execute("select report from triage where id = ?", (triage_id,)).fetchone()
    return json.loads(report)["watch"]["gate_failures"]


def check(tmp_path: Path, case: tuple, results: list[dict]) -> None:
    name, _, gate, hypothesis, step = case
    for result in results:
        failed = [(f["gate"], f["hypothesis"], f["step"]) for f in result["failures"]]
        if gate is None:
            assert failed == [], (name, result["failures"])
        else:
            steps = step if isinstance(step, tuple) else (step,)
            assert [(g, h) for g, h, _ in failed] == [(gate, hypothesis)] and failed[0][2] in steps, \
                (name, result["failures"])
        assert result["outcome"] == "finished" and result["triage_id"], (name, result)
        if gate is not None:  # the recorded triage names the gate's cause first: a failed gate is a measurement
            assert result["ranking"][0] == hypothesis, (name, result["ranking"][:3])
        assert [(f["gate"], f["hypothesis"]) for f in recorded_failures(tmp_path, result["triage_id"])] == \
            [(g, h) for g, h, _ in failed]


@pytest.mark.gate_matrix
def test_every_gate_fires_on_its_fault_and_stays_silent_on_every_clean_script(tmp_path: Path,
                                                                              toy_cache: Path) -> None:
    results = run_scripts(tmp_path, toy_cache, CASES)
    for case in CASES:
        check(tmp_path, case, results[case[0]])
    fired = {case[2] for case in FAULTY}
    from hypotrack.hooks.gates import GATE_NAMES

    assert fired == set(GATE_NAMES)  # every gate has a fault in the matrix


@pytest.mark.slow
def test_a_user_wrapping_their_own_peft_model_gets_the_right_gate_for_two_trainers(tmp_path: Path,
                                                                                 toy_cache: Path) -> None:
    cases = [case for case in CASES if case[0] in FAST]
    results = run_scripts(tmp_path, toy_cache, cases, extra=["--twice"])  # a second trainer, watched the same way
    for case in cases:
        assert [r["stage"] for r in results[case[0]]] == [0, 1]
        check(tmp_path, case, results[case[0]])
