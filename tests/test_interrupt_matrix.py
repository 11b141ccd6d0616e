"""The interrupt matrix: SIGINT, SIGTERM and SIGKILL, to the runner or to one training worker, at a random
step, in one run or in two concurrent runs of the same hypothesis: 30 trials, real processes.

After every trial (and `hypotrack status`, which reconciles dead runs, and the detached MLflow closer):
1. no hypothesis stays `testing`, no test run stays `running`;
2. an MLflow run is FINISHED only if it really finished, and none stays RUNNING;
3. the training metrics logged up to the interrupt are kept;
4. `PRAGMA integrity_check` is ok on the registry and on the MLflow store;
and the runners exit as they should (130 after SIGINT/SIGTERM, 1 when a worker was killed), without a traceback.

Trials run a few at a time in background threads (tests/interrupt_support.py), each in its own folder,
registry and MLflow store; every test waits for its own trial and reports it. A failure prints the
trial's seed and the command that reruns it alone.

Six more trials signal the runner (SIGINT, SIGTERM) before any training: while it probes a Ray address that
never answers, while it waits on ray.init with a server that is not Ray's, and while preflight reads a slow
dataset. It must end within 5 s, exit 130, and leave nothing recorded (or, once the test is recorded, the
test killed and its MLflow runs KILLED).

    python -m pytest -m interrupt_matrix tests/test_interrupt_matrix.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from interrupt_support import (
    Trial,
    TrialPool,
    connect_matrix,
    connect_problems,
    matrix,
    mlflow_template,
    problems,
    run_connect_trial,
)

pytestmark = pytest.mark.interrupt_matrix

TRIALS = matrix()
assert len(TRIALS) == 30 and len({t.id for t in TRIALS}) == 30
# Trials at once. Each spends much of its time in phases that leave a core idle (a runner starting or
# stopping, `hypotrack status`, the MLflow closer); 4 at a time keeps both cores of a CI machine busy.
PARALLEL = int(os.environ.get("HYPOTRACK_INTERRUPT_PARALLEL", "4"))


@pytest.fixture(scope="module")
def pool(request, toy_cache: Path, tmp_path_factory):
    """Starts every selected trial of this module (after -k / -m), in test order, a few at a time."""
    selected = [item.callspec.params["trial"] for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec") and "trial" in item.callspec.params]
    folders = {t.id: tmp_path_factory.mktemp(t.id, numbered=True) for t in selected}
    template = mlflow_template(tmp_path_factory.mktemp("mlflow-template"))
    trials = TrialPool(selected, toy_cache, folders, PARALLEL, template)
    yield trials
    trials.close()


@pytest.mark.parametrize("trial", [pytest.param(t, id=t.id) for t in TRIALS])
def test_interrupt(pool: TrialPool, trial: Trial) -> None:
    observation = pool.result(trial)
    found = problems(observation)
    assert not found, observation.header() + "\n" + "\n".join(f"- {p}" for p in found)


@pytest.mark.parametrize("connect_trial", [pytest.param(t, id=t.id) for t in connect_matrix()])
def test_interrupt_while_connecting(connect_trial, toy_cache: Path, tmp_path: Path) -> None:
    (tmp_path / "template").mkdir()
    observation = run_connect_trial(connect_trial, tmp_path, toy_cache, mlflow_template(tmp_path / "template"))
    found = connect_problems(observation)
    assert not found, observation.header() + "\n" + "\n".join(f"- {p}" for p in found)
