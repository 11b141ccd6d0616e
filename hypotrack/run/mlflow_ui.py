"""Run the MLflow UI on hypotrack's store, bound to 127.0.0.1, and end its whole process group on exit.

`mlflow server` starts job-consumer children that survive a plain kill of the
server; starting it in a new session and signalling the group ends them all.

It starts one web worker and no job execution: the jobs run MLflow's GenAI
features (judges, scorers), which hypotrack's model-training experiments do not
use, and on a small machine the four default workers and seven job consumers
took 26-41 s to answer instead of about 10.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from hypotrack.errors import HypotrackError

# MLflow 3.17's UI shows every experiment in one mode for the whole browser: GenAI until the user picks
# "Model training" at the top left (the browser remembers it). This URL parameter opens a page in the
# model-training view, where runs, metrics and datasets live, but the UI's own links do not carry it.
MODEL_TRAINING_VIEW = "workflowType=machine_learning"
VIEW_HINT = ("MLflow shows experiments as GenAI apps until 'Model training' is picked at the top left "
             "(the browser remembers it); the links above open in it.")
LISTED_EXPERIMENTS = 5
START_TIMEOUT = 180.0  # seconds for the server's first answer; a loaded 2-core machine needs 10-40


def default_tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"


def experiment_url(base: str, experiment_id: str | None = None, charts: bool = False) -> str:
    """A UI page in the model-training view: the experiments, or one experiment's runs (or charts)."""
    if experiment_id is None:
        return f"{base}/#/experiments?{MODEL_TRAINING_VIEW}"
    mode = "&compareRunsMode=CHART" if charts else ""
    return f"{base}/#/experiments/{experiment_id}/runs?{MODEL_TRAINING_VIEW}{mode}"


def start(tracking_uri: str | None, port: int, timeout: float = START_TIMEOUT) -> tuple[subprocess.Popen, str]:
    """Start the server and wait until it answers; (the process, its base URL). Raises if it never does."""
    uri = tracking_uri or default_tracking_uri()
    refuse_taken_port(port)
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--registry-store-uri", uri,
               "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    process = subprocess.Popen(command, start_new_session=True, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        from hypotrack.tracking import relocate_artifacts

        relocate_artifacts(uri)  # while the server starts: a moved project's UI shows its own files
        wait_until_answers(process, base, port, timeout)
    except BaseException:
        stop_group(process)
        raise
    return process, base


def refuse_taken_port(port: int) -> None:
    """Fail when something already listens on the port: its /health would answer for a server that never started."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise HypotrackError(f"--port {port}: 127.0.0.1:{port} is already in use ({exc.strerror}), perhaps by "
                                 "another `hypotrack ui` or `mlflow server`. Pick a free port with --port") from None


def wait_until_answers(process: subprocess.Popen, base: str, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise HypotrackError(f"the MLflow server exited with code {code} before answering "
                                 f"(is port {port} in use? try --port)")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise HypotrackError(f"the MLflow server did not answer on {base} within {timeout:.0f} s")


def hypotrack_experiments(base: str) -> list[tuple[str, str]]:
    """(id, name) of the store's hypotrack experiments, most recently updated first, asked of the running server."""
    query = urllib.parse.urlencode({"max_results": 1000, "order_by": "last_update_time DESC"})
    try:
        with urllib.request.urlopen(f"{base}/api/2.0/mlflow/experiments/search?{query}", timeout=30) as response:
            found = json.load(response).get("experiments", [])
    except (OSError, ValueError):
        return []  # the links are a convenience: the UI itself is up
    return [(e["experiment_id"], e["name"]) for e in found if e["name"].startswith("hypotrack/")
            or any(tag.get("key") == "hypotrack.store_dir" for tag in e.get("tags", []))]


def serve(tracking_uri: str | None, port: int, wait: bool = True) -> subprocess.Popen:
    """Start the UI, print its URL once it answers, and (with `wait`) serve until Ctrl-C or SIGTERM."""
    uri = tracking_uri or default_tracking_uri()

    # Started from scripts or as a background job, SIGINT may arrive ignored; handle both
    # Ctrl-C and SIGTERM explicitly so the server group never outlives `hypotrack ui`.
    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    print(f"Starting the MLflow UI for {uri} ...", file=sys.stderr, flush=True)
    try:
        process, base = start(uri, port)
    except BaseException as exc:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if isinstance(exc, KeyboardInterrupt):
            raise HypotrackError("stopped before the MLflow UI answered") from None
        raise
    keep_running = False  # only --no-wait leaves the server up, and only once everything is printed
    try:
        print(f"MLflow UI for {uri}: {experiment_url(base)}  (Ctrl-C to stop)", flush=True)
        experiments = hypotrack_experiments(base)
        for experiment_id, name in experiments[:LISTED_EXPERIMENTS]:
            print(f"  {name}: {experiment_url(base, experiment_id, charts=True)}", flush=True)
        if experiments:
            print(VIEW_HINT, flush=True)
        if not wait:
            keep_running = True
            return process
        code = process.wait()
        if code not in (0, -signal.SIGTERM, -signal.SIGINT):
            raise HypotrackError(f"the MLflow server exited with code {code}")
    except KeyboardInterrupt:
        pass
    finally:
        if not keep_running:
            stop_group(process)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return process


def stop_group(process: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the server's process group, then SIGKILL whatever is left."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + grace
    while time.time() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        process.poll()
        time.sleep(0.2)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
