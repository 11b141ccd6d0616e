"""Everything hypotrack says to MLflow. The only module that imports mlflow.

The runner is the single MLflow client of a test: it creates one parent run and
one nested run per arm x seed up front (so their ids are in the registry from
the start), logs the workers' metrics as they stream in, and ends every run
FINISHED, FAILED or KILLED. Workers never talk to MLflow, so a worker killed
mid-write cannot leave a run half-logged or wrongly FINISHED.
"""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from typing import Any

import mlflow
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

# MLflow announces at INFO that it creates or upgrades its own tables; in the middle of a run's progress
# that reads like hypotrack output. Its warnings and errors still show.
logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)

MAX_PARAM_LEN = 6000
BATCH = 900  # MLflow accepts at most 1000 metrics per batch


class Tags:
    """The tag names hypotrack puts on MLflow runs (filter with them: tags.`hypotrack.arm` = 'control')."""

    HYPOTHESIS = "hypotrack.hypothesis"
    TEST = "hypotrack.test"
    KIND = "hypotrack.kind"  # test (the parent run), arm, selftest
    ARM = "hypotrack.arm"
    SEED = "hypotrack.seed"
    PLANT = "hypotrack.plant"
    VERDICT = "hypotrack.verdict"
    CONFIDENCE = "hypotrack.confidence"
    ERROR = "hypotrack.error"
    WARNINGS = "hypotrack.warnings"
    REWARD_ERRORS = "hypotrack.reward_errors"
    SAMPLES_ERROR = "hypotrack.samples_error"
    TRAINABLE_PARAMETERS = "hypotrack.trainable_parameters"
    DATASET_ROWS = "hypotrack.dataset_rows"
    NOTE = "mlflow.note.content"  # MLflow's run description
    PARENT = "mlflow.parentRunId"


class Tracker:
    def __init__(self, tracking_uri: str | None = None):
        if tracking_uri:
            mlflow.set_tracking_uri(tracking_uri)
        self.uri = mlflow.get_tracking_uri()
        self.client = MlflowClient(self.uri)

    def experiment_id(self, name: str) -> str:
        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            if experiment.lifecycle_stage == "deleted":
                self.client.restore_experiment(experiment.experiment_id)
            return experiment.experiment_id
        return self.client.create_experiment(name)

    def create_run(self, experiment_id: str, name: str, tags: dict[str, str], parent_id: str | None = None) -> str:
        tags = dict(tags)
        if parent_id:
            tags[Tags.PARENT] = parent_id
        run = self.client.create_run(experiment_id, run_name=name, tags=tags)
        return run.info.run_id

    def log_params(self, run_id: str, params: dict[str, Any]) -> None:
        items = [Param(k, _param(v)) for k, v in sorted(params.items())]
        for start in range(0, len(items), 100):
            self.client.log_batch(run_id, params=items[start:start + 100])

    def set_tags(self, run_id: str, tags: dict[str, Any]) -> None:
        self.client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def log_metrics(self, run_id: str, metrics: dict[str, float], step: int) -> None:
        now = int(time.time() * 1000)
        items = [Metric(key, float(value), now, int(step)) for key, value in metrics.items()
                 if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isinf(value))]
        for start in range(0, len(items), BATCH):
            self.client.log_batch(run_id, metrics=items[start:start + BATCH])

    def log_artifact(self, run_id: str, path: Path, artifact_path: str | None = None) -> None:
        if path.exists():
            self.client.log_artifact(run_id, str(path), artifact_path)

    def log_text(self, run_id: str, text: str, artifact_file: str) -> None:
        self.client.log_text(run_id, text, artifact_file)

    def log_dict(self, run_id: str, data: Any, artifact_file: str) -> None:
        self.client.log_dict(run_id, data, artifact_file)

    def log_table(self, run_id: str, rows: list[dict[str, Any]], artifact_file: str) -> None:
        if not rows:
            return
        columns = sorted({key for row in rows for key in row}, key=lambda k: (k != "step", k))
        table = {column: [row.get(column) for row in rows] for column in columns}
        self.client.log_table(run_id, data=table, artifact_file=artifact_file)

    def log_figure(self, run_id: str, figure: Any, artifact_file: str) -> None:
        self.client.log_figure(run_id, figure, artifact_file)

    def end(self, run_id: str, status: str) -> None:
        """status: FINISHED, FAILED or KILLED."""
        try:
            current = self.client.get_run(run_id).info.status
        except Exception:  # noqa: BLE001 - a run deleted from the UI meanwhile
            return
        if current in ("FINISHED", "FAILED", "KILLED"):
            return
        self.client.set_terminated(run_id, status=status)


def _param(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= MAX_PARAM_LEN else text[: MAX_PARAM_LEN - 3] + "..."


def close_orphaned_runs(registry, tracker: Tracker | None = None) -> int:  # noqa: ANN001
    """End the MLflow runs of test runs the registry already reconciled as killed/failed."""
    from hypotrack.registry.queries import runs_needing_mlflow_close
    from hypotrack.registry.store import mark_mlflow_closed

    closed = 0
    for run in runs_needing_mlflow_close(registry):
        if run.mlflow_parent_run_id or run.mlflow_run_ids:
            tracker = tracker or Tracker(run.tracking_uri)
            if run.tracking_uri and run.tracking_uri != tracker.uri:
                tracker = Tracker(run.tracking_uri)
            status = "KILLED" if run.state == "killed" else "FAILED"
            for run_id in (run.mlflow_run_ids or {}).values():
                tracker.end(run_id, status)
            if run.mlflow_parent_run_id:
                tracker.end(run.mlflow_parent_run_id, status)
            closed += 1
        mark_mlflow_closed(registry, run.id)
    return closed
