"""`hypotrack run` against a shared MLflow tracking server, checked over HTTP.

The module starts one real `mlflow server` on 127.0.0.1 (its own SQLite backend and
artifact folder) and ends its whole process group afterwards, the way `hypotrack ui` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from runner_support import cli, env_for, registry_rows

from hypotrack.ports import unclaimed_port

pytestmark = pytest.mark.slow

SERVER_START_TIMEOUT = 240  # the server imports for 20-40 s on an idle 2-core machine, longer when it is busy
RUN = ["run", "h06", "--no-peft", "--seeds", "2", "--max-steps", "3", "--batch-size", "8", "--num-generations", "4"]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory) -> tuple[str, Path]:
    """(URL, server folder) of an MLflow tracking server serving artifacts through itself."""
    from hypotrack.errors import HypotrackError
    from hypotrack.run.recording.mlflow_ui import stop_group, wait_until_answers

    root = tmp_path_factory.mktemp("mlflow-server")
    port = unclaimed_port()
    # As `hypotrack ui` starts it: one web worker and no GenAI job consumers, which a 2-core machine
    # otherwise spends 20-40 s starting.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with open(root / "server.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
             "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
             "--workers", "1"],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_until_answers(process, url, port, SERVER_START_TIMEOUT)
        except HypotrackError as exc:
            raise RuntimeError(f"{exc}: {(root / 'server.log').read_text()[-2000:]}") from None
        yield url, root
    finally:
        stop_group(process)
        assert not live_members(process.pid), "the server left processes behind"  # job consumers included


def live_members(pgid: int) -> list[int]:
    """Processes of the group that still run (zombies waiting for a reaper do not count)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def test_run_logs_every_run_and_artifact_to_the_server(mlflow_server, tmp_path: Path, toy_cache: Path) -> None:
    from mlflow import MlflowClient

    url, server_root = mlflow_server
    env = env_for(tmp_path, toy_cache)
    result = cli([*RUN, "--tracking-uri", url], env, tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (tmp_path / "mlflow.db").exists()  # the flag wins over MLFLOW_TRACKING_URI: nothing local

    (test_id, verdict, parent_id, tracking_uri) = registry_rows(
        tmp_path / "registry.db", "select id, verdict, mlflow_parent_run_id, tracking_uri from test_run")[0]
    assert tracking_uri == url

    client = MlflowClient(url)  # everything below is read over HTTP
    parent = client.get_run(parent_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["hypotrack.test"] == test_id and parent.data.tags["hypotrack.verdict"] == verdict
    children = client.search_runs([parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{parent_id}'")
    assert sorted((c.data.tags["hypotrack.arm"], c.data.tags["hypotrack.seed"]) for c in children) == [
        ("control", "0"), ("control", "1"), ("treatment", "0"), ("treatment", "1")]
    assert all(c.info.status == "FINISHED" and c.data.tags["hypotrack.test"] == test_id for c in children)
    assert all({"reward", "loss"} <= set(c.data.metrics) for c in children)
    assert all(len(client.get_metric_history(c.info.run_id, "reward")) == 3 for c in children)

    assert {"verdict.json", "reward_curves.png"} <= {a.path for a in client.list_artifacts(parent_id)}
    evidence = json.loads(Path(client.download_artifacts(parent_id, "verdict.json", str(tmp_path))).read_text())
    assert evidence["status"] == verdict
    for child in children:
        assert "samples.json" in {a.path for a in client.list_artifacts(child.info.run_id)}
    table = json.loads(Path(client.download_artifacts(children[0].info.run_id, "samples.json",
                                                      str(tmp_path))).read_text())
    assert {"completion", "step"} <= set(table["columns"]) and table["data"]
    # The server stored them in its own artifact folder: the runner uploaded through HTTP.
    assert len(list((server_root / "artifacts").rglob("samples.json"))) == 4
