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
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mlflow
from mlflow import MlflowClient
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, RunTag

from hypotrack.endpoints import check_tracking_server
from hypotrack.errors import HypotrackError, first_line
from hypotrack.mlflow_names import Tags, source_name

if TYPE_CHECKING:
    from hypotrack.registry import Registry

# MLflow announces at INFO that it creates or upgrades its own tables; in the middle of a run's progress
# that reads like hypotrack output. Its warnings and errors still show.
logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)

MAX_PARAM_LEN = 6000
BATCH = 900  # MLflow accepts at most 1000 metrics per batch
# MLflow's UI shows an experiment as model training or as a GenAI app according to this tag value
# (MLflow 3.17 also follows the `workflowType` URL parameter: see mlflow_ui.experiment_url).
MODEL_TRAINING = "custom_model_development"
ARTIFACT_FOLDER = "mlruns"  # beside a SQLite store, the way MLflow lays out its own default store


class Tracker:
    def __init__(self, tracking_uri: str | None = None):
        refuse_unsafe_store(tracking_uri or mlflow.get_tracking_uri())
        if tracking_uri:
            mlflow.set_tracking_uri(tracking_uri)
        self.uri = mlflow.get_tracking_uri()
        check_tracking_server(self.uri)  # a server that does not answer is refused in seconds, not retried for minutes
        from mlflow.exceptions import MlflowException

        with store_lock(self.uri):
            relocate_artifacts(self.uri)
            try:
                self.client = MlflowClient(self.uri)
                self.client.search_experiments(max_results=1)  # creates (or migrates) a new store's tables now
            except MlflowException as exc:
                raise HypotrackError(f"the MLflow tracking URI {self.uri} (--tracking-uri or MLFLOW_TRACKING_URI) "
                                     f"cannot be used: {first_line(exc)}") from None

    def experiment_id(self, name: str) -> str:
        """The experiment's id, created as a model-training experiment whose artifacts live beside the store."""
        from mlflow.exceptions import MlflowException

        with store_lock(self.uri):
            try:
                return self._experiment_id(name)
            except MlflowException as exc:  # created meanwhile by a run on another machine (a server store)
                if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                    raise
                return self._experiment_id(name)

    def _experiment_id(self, name: str) -> str:
        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            if experiment.lifecycle_stage == "deleted":
                self.client.restore_experiment(experiment.experiment_id)
            if experiment.tags.get(Tags.EXPERIMENT_KIND) != MODEL_TRAINING:
                self.client.set_experiment_tag(experiment.experiment_id, Tags.EXPERIMENT_KIND, MODEL_TRAINING)
            return experiment.experiment_id
        tags = {Tags.EXPERIMENT_KIND: MODEL_TRAINING}
        store = store_dir(self.uri)
        location = None
        if store is not None:
            tags[Tags.STORE_DIR] = str(store)
            location = str(store / ARTIFACT_FOLDER / _folder_name(name))
        return self.client.create_experiment(name, artifact_location=location, tags=tags)

    def create_run(self, experiment_id: str, name: str, tags: dict[str, str], parent_id: str | None = None) -> str:
        """A run that says who made it and with which command (the UI's Created by and Source)."""
        from mlflow.tracking.context.registry import resolve_tags

        tags = resolve_tags({Tags.SOURCE_NAME: source_name(), **tags})
        if parent_id:
            tags[Tags.PARENT] = parent_id
        run = self.client.create_run(experiment_id, run_name=name, tags=tags)
        return run.info.run_id

    def rename_run(self, run_id: str, name: str) -> None:
        self.client.update_run(run_id, name=name)

    def experiment_of(self, run_id: str) -> str:
        return self.client.get_run(run_id).info.experiment_id

    def describe_experiment(self, experiment_id: str, text: str) -> None:
        """The experiment's description: the UI shows it on the experiment's page and in the experiments list."""
        self._experiment_tag(experiment_id, Tags.NOTE, text)

    def save_view(self, experiment_id: str, key: str, state: dict[str, Any]) -> None:
        """A view of the experiment page (filter, grouping, charts) that `?viewStateShareKey=<key>` opens: MLflow's
        own "share view", which keeps the state as an experiment tag."""
        self._experiment_tag(experiment_id, Tags.SHARED_VIEW + key, json.dumps(state))

    def _experiment_tag(self, experiment_id: str, key: str, value: str) -> None:
        """Set an experiment tag that two tests of one hypothesis may set at the same moment.

        MLflow's SQL store looks the tag up and inserts it when missing, so two writers of a new tag both
        insert and the second fails on the table's unique key. Under the store's lock a SQLite store sees
        them one after the other; a server store that raced gets the write once more, now an update.
        """
        from mlflow.exceptions import MlflowException

        with store_lock(self.uri):
            try:
                self.client.set_experiment_tag(experiment_id, key, value)
            except MlflowException:
                self.client.set_experiment_tag(experiment_id, key, value)

    def log_dataset(self, run_id: str, name: str, digest: str, source_type: str, source: dict[str, Any],
                    rows: int | None, columns: list[str] | None = None, context: str = "train") -> None:
        """Record the data a run trained on as an MLflow dataset input (the UI's Dataset column and filter)."""
        profile = {"num_rows": rows} if rows is not None else {}
        if columns:
            profile["columns"] = list(columns)
        dataset = Dataset(name=name, digest=digest[:36], source_type=source_type, source=json.dumps(source),
                          profile=json.dumps(profile))
        self._log_inputs(run_id, [DatasetInput(dataset, [InputTag("mlflow.data.context", context)])])

    def gather_datasets(self, run_id: str, from_run_ids: list[str]) -> None:
        """Log on `run_id` every distinct dataset input of the given runs (a parent lists its arms' data)."""
        inputs: dict[tuple[str, str], DatasetInput] = {}
        for source_id in from_run_ids:
            for item in self.client.get_run(source_id).inputs.dataset_inputs:
                inputs.setdefault((item.dataset.name, item.dataset.digest), item)
        if inputs:
            self._log_inputs(run_id, list(inputs.values()))

    def _log_inputs(self, run_id: str, datasets: list[DatasetInput]) -> None:
        """MLflow creates a dataset row the first time it is logged, without a lock: two tests logging the same
        data at once (two runs of one hypothesis) both insert it and one fails. Take turns on a SQLite store;
        elsewhere, the second attempt finds the row the other made."""
        from mlflow.exceptions import MlflowException

        with store_lock(self.uri):
            for attempt in range(3):
                try:
                    self.client.log_inputs(run_id, datasets=datasets)
                    return
                except MlflowException as exc:
                    duplicate = any(word in str(exc) for word in ("UNIQUE constraint", "duplicate key",
                                                                  "IntegrityError"))
                    if not duplicate or attempt == 2:
                        raise
                    time.sleep(0.1 * (attempt + 1))

    def log_params(self, run_id: str, params: dict[str, Any]) -> dict[str, tuple[str, str]]:
        """Log ``params`` on the run. MLflow refuses to change a logged value: a key logged before with another
        value is logged as ``ran.<key>`` instead (what the arm really ran, beside what was declared), and returned
        as key -> (declared, ran); a key logged before keeps its first value."""
        logged = self.client.get_run(run_id).data.params
        changed = {k: (logged[k], _param(v)) for k, v in params.items() if k in logged and logged[k] != _param(v)}
        params = {(f"ran.{k}" if k in changed else k): v for k, v in params.items()}
        # a value logged already (a second trainer in one script) keeps its first
        items = [Param(k, _param(v)) for k, v in sorted(params.items()) if k not in logged]
        for start in range(0, len(items), 100):
            self.client.log_batch(run_id, params=items[start:start + 100])
        return changed

    def set_tags(self, run_id: str, tags: dict[str, Any]) -> None:
        self.client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def tag(self, run_id: str, key: str) -> str | None:
        return self.client.get_run(run_id).data.tags.get(key)

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

    def end(self, run_id: str, status: str, started: float | None = None, ended: float | None = None) -> None:
        """status: FINISHED, FAILED or KILLED; `started` and `ended` (seconds since the epoch) when the run's own
        work began and ended later or earlier than the run was created and is ended (an arm within its test)."""
        try:
            current = self.client.get_run(run_id).info.status
        except Exception:  # noqa: BLE001 - a run deleted from the UI meanwhile
            return
        if current in ("FINISHED", "FAILED", "KILLED"):
            return
        self.client.set_terminated(run_id, status=status, end_time=int(ended * 1000) if ended else None)
        if started:
            set_start_time(self.uri, run_id, int(started * 1000))


# What MLflow's tracking client accepts (mlflow.tracking._tracking_service.utils), by URI scheme.
DATABASE_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")
TRACKING_SCHEMES = {"file", "http", "https", "databricks", "databricks-uc", "uc", *DATABASE_SCHEMES}
REGISTRY_TABLES = {"hypothesis_state", "test_run"}  # hypotrack's own tables: a registry, not an MLflow store


def refuse_unsafe_store(uri: str) -> None:
    """Refuse a tracking URI MLflow would damage, before MLflow opens it.

    MLflow creates its tables in whatever SQLite file it is given, and treats a plain path as the
    folder of a file store. Pointed at hypotrack's registry (the same file as --db / HYPOTRACK_DB), it
    would write its schema into the registry and leave it unreadable to every later command.
    """
    scheme = uri.partition("://")[0].partition("+")[0].lower() if "://" in uri else ""
    if scheme and scheme not in TRACKING_SCHEMES:
        raise HypotrackError(
            f"the MLflow tracking URI {uri} (--tracking-uri or MLFLOW_TRACKING_URI) has a scheme MLflow cannot "
            f"track to ({scheme}://). Give sqlite:///PATH.db, another database URL "
            f"({', '.join(s + '://' for s in DATABASE_SCHEMES)}) or a server (http://HOST:PORT).")
    path = sqlite_file(uri)
    if path is None:
        plain = uri[len("file:"):] if uri.startswith("file:") else uri
        if "://" not in plain and plain and Path(plain).expanduser().is_file():
            raise HypotrackError(
                f"the MLflow tracking URI {uri} (--tracking-uri or MLFLOW_TRACKING_URI) is a file, and a path "
                "there means an MLflow file store, which is a folder. Give MLflow a store of its own: "
                "sqlite:///mlflow.db or a server URL.")
        return
    if not path.is_file():
        return
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            tables = {row[0] for row in con.execute("select name from sqlite_master where type='table'")}
    except sqlite3.DatabaseError as exc:
        raise HypotrackError(f"the MLflow tracking URI {uri} (--tracking-uri or MLFLOW_TRACKING_URI) names "
                             f"{path}, which is not a SQLite database ({exc}).") from None
    if REGISTRY_TABLES <= tables:
        raise HypotrackError(
            f"the MLflow tracking URI {uri} (--tracking-uri or MLFLOW_TRACKING_URI) points at hypotrack's "
            f"registry ({path}); MLflow would write its own tables into it. Give MLflow a database of its own, "
            f"for example sqlite:///{path.with_name('mlflow.db')}.")


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """One process at a time creates a SQLite store's tables or an experiment in it.

    Two first-ever runs on a new store would otherwise both run MLflow's migrations on it (one fails
    half-way through an ALTER TABLE) or both create the experiment. A server serialises this itself.
    """
    database = sqlite_file(uri)
    if database is None or not database.parent.is_dir():
        yield
        return
    from filelock import FileLock

    with FileLock(str(database.with_name(database.name + ".hypotrack.lock")), timeout=300):
        yield


def set_start_time(uri: str, run_id: str, start_ms: int) -> None:
    """Move a run's start time on a SQLite store (MLflow has no API for it: a run starts when it is created).

    The runner creates every arm's run before the first worker starts, so that their ids are recorded; without
    this, the UI would show every arm lasting the whole test. Other stores keep the creation time.
    """
    database = sqlite_file(uri)
    if database is None or not database.exists():
        return
    with closing(sqlite3.connect(database, timeout=30)) as db, db:
        db.execute("UPDATE runs SET start_time = ? WHERE run_uuid = ?", (start_ms, run_id))


def sqlite_file(uri: str) -> Path | None:
    """The database file of a SQLite store (the one kind of store that travels with a project); None for others."""
    match = re.match(r"^sqlite:///([^?]+)", uri)
    if not match or match.group(1).startswith(":memory:"):
        return None
    return Path(match.group(1)).expanduser()


def store_dir(uri: str) -> Path | None:
    """The folder holding a SQLite store's file; None for other stores."""
    database = sqlite_file(uri)
    return database.resolve().parent if database is not None else None


def _folder_name(experiment_name: str) -> str:
    """An experiment name as a relative folder path: `hypotrack/h06` stays, anything odd becomes `_`."""
    parts = [re.sub(r"[^A-Za-z0-9._-]+", "_", part) for part in experiment_name.split("/")]
    return "/".join(part for part in parts if part not in ("", ".", "..")) or "experiment"


def relocate_artifacts(uri: str) -> int:
    """Point hypotrack's experiments at the artifacts beside their store after the store moved or was copied.

    MLflow records artifact locations as absolute paths, so a moved project's UI would show no files and a
    copied one the original's. Each experiment hypotrack creates notes the store folder it was written for;
    when the SQLite file now lives elsewhere, the experiment's and its runs' artifact paths under that
    folder are rewritten to the new one. MLflow has no API to change an artifact location, hence the SQL on
    its `experiments`, `runs` and `experiment_tags` tables. Returns how many experiments were moved.
    """
    database = sqlite_file(uri)
    if database is None or not database.exists():
        return 0
    here = database.resolve().parent
    moved = 0
    with closing(sqlite3.connect(database, timeout=30)) as db, db:
        try:
            rows = db.execute("SELECT experiment_id, value FROM experiment_tags WHERE key = ?",
                              (Tags.STORE_DIR,)).fetchall()
        except sqlite3.OperationalError:  # not an MLflow store (yet)
            return 0
        for experiment_id, written_for in rows:
            if written_for == str(here):
                continue
            old, new = written_for.rstrip("/") + "/", str(here).rstrip("/") + "/"
            for table, column in (("experiments", "artifact_location"), ("runs", "artifact_uri")):
                db.execute(f"UPDATE {table} SET {column} = ? || substr({column}, ?) "  # noqa: S608 - fixed names
                           f"WHERE experiment_id = ? AND substr({column}, 1, ?) = ?",
                           (new, len(old) + 1, experiment_id, len(old), old))
            db.execute("UPDATE experiment_tags SET value = ? WHERE experiment_id = ? AND key = ?",
                       (str(here), experiment_id, Tags.STORE_DIR))
            moved += 1
    return moved


def _param(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= MAX_PARAM_LEN else text[: MAX_PARAM_LEN - 3] + "..."


def close_orphaned_runs(registry: Registry, tracker: Tracker | None = None) -> int:
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


# MLflow 3's opt-in to its file store (in maintenance mode), which it checks as the store is opened.
FILE_STORE_SWITCH = "MLFLOW_ALLOW_FILE_STORE"


class RunNotFound(LookupError):
    """No run with that id on that tracking URI (the message says which)."""


def read_run(run_id: str, tracking_uri: str | None = None) -> tuple[dict[str, list[tuple[int, float]]], dict[str, str], str]:
    """A run someone else logged, read back: every metric's full history, its params, and the store's URI.

    `hypotrack triage` reads runs TRL's own MLflow callback wrote; nothing is written to the store. A `file:` URI is
    a file store (an `mlruns/` folder, as a repository keeps it): MLflow 3 reads one only when told it may
    (MLFLOW_ALLOW_FILE_STORE), which a read that writes nothing is told.
    """
    from mlflow.exceptions import MlflowException

    uri = tracking_uri or mlflow.get_tracking_uri()
    database = sqlite_file(uri)
    if database is not None and not database.exists():  # MLflow would create an empty store there
        raise RunNotFound(f"no MLflow store at tracking URI {uri} ({database} does not exist)")
    try:
        with _file_store_allowed(uri):
            client = MlflowClient(uri)
        run = client.get_run(run_id)
    except MlflowException as exc:
        raise RunNotFound(f"no MLflow run {run_id!r} on tracking URI {uri} ({first_line(exc)})") from None
    series = {key: [(int(m.step), float(m.value)) for m in client.get_metric_history(run_id, key)]
              for key in run.data.metrics}
    return series, dict(run.data.params), uri


@contextmanager
def _file_store_allowed(uri: str) -> Iterator[None]:
    """MLflow's file store opened for a read where the store is there: opening one creates its folder, so a store that
    is not there is left to MLflow's own refusal, and nothing is made."""
    from unittest import mock  # patch.dict puts the environment back as it was, the switch's absence included
    from urllib.parse import unquote, urlparse

    if not uri.startswith("file:") or not Path(unquote(urlparse(uri).path)).is_dir():
        yield
        return
    with mock.patch.dict(os.environ, {FILE_STORE_SWITCH: "true"}):
        yield

