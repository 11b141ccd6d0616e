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
import uuid
from dataclasses import dataclass

from hypotrack.errors import HypotrackError
from hypotrack.mlflow_names import Tags

# MLflow 3.17's UI shows every experiment in one mode for the whole browser: GenAI until the user clicks
# "Model training" at the top left, which the browser then remembers. This URL parameter opens one page in
# the model-training view, where runs, metrics and datasets live, but the UI's own links do not carry it:
# the first click inside the UI falls back to GenAI until "Model training" has been clicked once.
MODEL_TRAINING_VIEW = "workflowType=machine_learning"
VIEW_HINT = ("The links open MLflow's model-training view, but MLflow's own links (an experiment, a run, "
             "Compare) open its GenAI view until you click 'Model training' at the top left once; "
             "this browser keeps it from then on.")
VERDICT_WORDS = {"not_applicable": "not applicable"}  # a status as MLflow shows it; the others read as they are
ARMS_SECTION = "Arms compared"
VIEW_CHARTS = 24  # a view is an experiment tag, at most 20,000 characters: about 650 a chart
START_TIMEOUT = 180.0  # seconds for the server's first answer; a loaded 2-core machine needs 10-40


def default_tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"


def experiment_url(base: str, experiment_id: str | None = None, charts: bool = False, view: str | None = None) -> str:
    """A UI page in the model-training view: the experiments, or one experiment's runs (or charts), optionally
    in a saved view (a test's arms compared: see arms_view)."""
    if experiment_id is None:
        return f"{base}/#/experiments?{MODEL_TRAINING_VIEW}"
    shared = f"viewStateShareKey={view}&" if view else ""
    mode = "&compareRunsMode=CHART" if charts else ""
    return f"{base}/#/experiments/{experiment_id}/runs?{shared}{MODEL_TRAINING_VIEW}{mode}"


def verdict_word(status: str) -> str:
    return VERDICT_WORDS.get(status, status)


# ------------------------------------------------------------------ a test's arms compared, as an MLflow view


def view_key(test_id: str) -> str:
    return f"hypotrack-test-{test_id}"


def arms_view(test_id: str, metrics: list[str]) -> dict:
    """The experiment page showing one test: its arm runs grouped by arm (one colour per arm, the mean over
    seeds with the min-max band), a first chart section with one chart per compared metric, the verdict column.

    MLflow's "share view" state (uiState and search facets of the experiment page); the UI adds charts for the
    other metrics in their own sections after this one.
    """
    section = str(uuid.uuid4())
    charts = [{"uuid": str(uuid.uuid4()), "type": "LINE", "metricKey": metric, "displayName": metric,
               "metricSectionId": section, "runsCountToCompare": 10, "deleted": False, "isGenerated": True,
               "lineSmoothness": 0, "scaleType": "linear", "xAxisScaleType": "linear", "xAxisKey": "step",
               "selectedXAxisMetricKey": "", "yAxisKey": "metric", "yAxisExpressions": [], "range": {},
               "ignoreOutliers": False, "useGlobalXaxisKey": True, "useGlobalLineSmoothing": True}
              for metric in metrics[:VIEW_CHARTS]]
    return {
        "searchFilter": f"tags.`{Tags.TEST}` = '{test_id}' and tags.`{Tags.KIND}` = 'arm'",
        "groupBy": {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": Tags.ARM}]},
        "useGroupedValuesInCharts": True, "runsHiddenMode": "SHOW_ALL", "hideEmptyCharts": True,
        "compareRunSections": [{"uuid": section, "name": f"{ARMS_SECTION} (test {test_id})", "display": True,
                                "isReordered": False, "deleted": False, "isGenerated": False}],
        "compareRunCharts": charts, "isAccordionReordered": True,
        "selectedColumns": [f"tags.`{Tags.HEADLINE}`"],  # beside the name, created and duration: in view
    }


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


@dataclass(frozen=True)
class Listed:
    """A hypotrack experiment as `hypotrack ui` lists it: its latest test and that test's verdict."""

    experiment_id: str
    name: str
    test_id: str | None = None
    verdict: str | None = None  # the latest test's headline (or status), "running" before it has one

    def url(self, base: str) -> str:
        return experiment_url(base, self.experiment_id, charts=True,
                              view=view_key(self.test_id) if self.test_id else None)


def _api(base: str, path: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{base}/api/2.0/mlflow/{path}", data=data,
                                     headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def hypotrack_experiments(base: str) -> list[Listed]:
    """The store's hypotrack experiments by name, each with its latest test, asked of the running server."""
    query = urllib.parse.urlencode({"max_results": 1000})
    try:
        found = _api(base, f"experiments/search?{query}").get("experiments", [])
    except (OSError, ValueError):
        return []  # the links are a convenience: the UI itself is up
    ours = sorted((e for e in found if e["name"].startswith("hypotrack/")
                   or any(tag.get("key") == Tags.STORE_DIR for tag in e.get("tags", []))), key=lambda e: e["name"])
    return [latest_test(base, e["experiment_id"], e["name"]) for e in ours]


def latest_test(base: str, experiment_id: str, name: str) -> Listed:
    try:
        runs = _api(base, "runs/search", {"experiment_ids": [experiment_id], "max_results": 1,
                                          "filter": f"tags.`{Tags.KIND}` = 'test'",
                                          "order_by": ["attributes.start_time DESC"]}).get("runs", [])
    except (OSError, ValueError):
        runs = []
    if not runs:
        return Listed(experiment_id, name)
    tags = {tag["key"]: tag["value"] for tag in runs[0]["data"].get("tags", [])}
    status = tags.get(Tags.VERDICT)
    verdict = tags.get(Tags.HEADLINE) or (verdict_word(status) if status else None)
    if verdict is None:
        verdict = "running" if runs[0]["info"].get("status") == "RUNNING" else "no verdict"
    return Listed(experiment_id, name, tags.get(Tags.TEST), verdict)


def pick(experiments: list[Listed], wanted: str) -> list[Listed]:
    """--experiment: a hypothesis id (h06), an experiment name or an MLflow experiment id."""
    chosen = [e for e in experiments if wanted in (e.experiment_id, e.name, e.name.removeprefix("hypotrack/"))]
    if not chosen:
        known = ", ".join(e.name.removeprefix("hypotrack/") for e in experiments) or "none yet"
        raise HypotrackError(f"--experiment {wanted}: no hypotrack experiment of that name, hypothesis or id in this "
                             f"store (it has: {known})")
    return chosen


def serve(tracking_uri: str | None, port: int, wait: bool = True, experiment: str | None = None) -> subprocess.Popen:
    """Start the UI, print its URL and each hypothesis experiment's latest verdict and link once it answers,
    and (with `wait`) serve until Ctrl-C or SIGTERM. `experiment` lists that one alone."""
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
        if experiment:
            experiments = pick(experiments, experiment)
        for listed in experiments:
            print(f"  {listed.name}: {listed.verdict or 'no test yet'}\n    {listed.url(base)}", flush=True)
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
