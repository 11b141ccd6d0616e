"""Ending a test's MLflow runs: the one place that decides the status each run ends with.

Every arm run and the test's parent run end here, whatever happened: FINISHED only for what finished, KILLED for
what the user stopped (and for what a stopped test never started), FAILED otherwise. An arm run ends at the
times its worker started and ended. `hypotrack run` (run/lifecycle.py) and `hypotrack selftest`
(run/selftest.py) both end their runs here in a `finally`, so a crash or an interrupt never leaves a run
RUNNING, nor marked FINISHED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypotrack.run.arms import ArmState
    from hypotrack.tracking import Tracker

# How an arm's or a test's state reads as an MLflow run status (any other state ends FAILED).
MLFLOW_STATUS = {"finished": "FINISHED", "killed": "KILLED"}


def arm_status(arm: ArmState, test_state: str) -> str:
    """The status an arm's run ends with: its own, or KILLED for an arm a stopped test did not let finish."""
    if test_state == "killed" and arm.status != "finished":
        return "KILLED"
    return MLFLOW_STATUS.get(arm.status, "FAILED")


def end_runs(tracker: Tracker, arms: list[ArmState], parent_id: str | None, test_state: str) -> None:
    """End every arm run that was created, then the parent run."""
    for arm in arms:
        if arm.run_id:
            tracker.end(arm.run_id, arm_status(arm, test_state), arm.started, arm.ended)
    if parent_id:
        tracker.end(parent_id, MLFLOW_STATUS.get(test_state, "FAILED"))
