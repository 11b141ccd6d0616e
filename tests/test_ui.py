"""`hypotrack ui` serves MLflow on 127.0.0.1 and ends its whole process group (job consumers too)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from hypotrack.ports import unclaimed_port

pytestmark = pytest.mark.slow


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ui_prints_its_url_once_it_answers_and_stops_its_whole_group(tmp_path: Path) -> None:
    port = unclaimed_port()
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    started = time.monotonic()
    ui = subprocess.Popen([sys.executable, "-m", "hypotrack.cli", "ui", "--tracking-uri", store, "--port", str(port)],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = ui.stdout.readline()
        while line and "MLflow UI for" not in line:  # the server's own start-up lines come first
            line = ui.stdout.readline()
        print(f"hypotrack ui answered after {time.monotonic() - started:.1f} s")
        assert f"http://127.0.0.1:{port}/#/experiments?workflowType=machine_learning" in line and store in line
        # printed only once the server answers: the page loads at once, no retrying
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).status == 200
        server_pgid = int(subprocess.run(["pgrep", "-f", f"mlflow server .*--port {port}"], capture_output=True,
                                         text=True).stdout.split()[0])
        assert os.getpgid(server_pgid) == server_pgid  # the server leads its own process group
        ui.send_signal(signal.SIGTERM)
        ui.wait(timeout=30)
        deadline = time.time() + 20
        while _group_alive(server_pgid) and time.time() < deadline:
            time.sleep(0.5)
        assert not _group_alive(server_pgid), "MLflow server processes outlived `hypotrack ui`"
    finally:
        if ui.poll() is None:
            ui.kill()


def test_ui_lists_each_hypothesis_experiment_with_its_latest_verdict(tmp_path: Path) -> None:
    """Every hypotrack experiment, with the latest test's verdict headline over a link to that test's view;
    `--experiment` picks one, and one the store lacks is an error naming the flag."""
    from hypotrack.mlflow_names import Tags
    from hypotrack.tracking import Tracker

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = Tracker(store)
    headlines = {"h06": "invalidated: lora_sync/gen_adapter_active_share 1 >= 0.99", "h13": None}
    for hypothesis, headline in headlines.items():
        experiment = tracker.experiment_id(f"hypotrack/{hypothesis}")
        for test_id in ("old000", "new111"):  # the newer test is the one listed
            run = tracker.create_run(experiment, f"{hypothesis} test {test_id}",
                                     {Tags.KIND: "test", Tags.TEST: test_id, Tags.HYPOTHESIS: hypothesis})
            time.sleep(0.01)
            if headline:
                tracker.set_tags(run, {Tags.VERDICT: "invalidated", Tags.HEADLINE: f"{headline} ({test_id})"})
    tracker.client.create_experiment("someone else's")  # not hypotrack's: not listed

    def listing(*args: str) -> tuple[int, str]:
        ui = subprocess.Popen([sys.executable, "-m", "hypotrack.cli", "ui", "--tracking-uri", store,
                               "--port", str(unclaimed_port()), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        try:
            for line in ui.stdout:
                lines.append(line)
                if "'Model training'" in line:
                    ui.send_signal(signal.SIGTERM)
                    break
            return ui.wait(timeout=60), "".join(lines)
        finally:
            if ui.poll() is None:
                ui.kill()

    _, printed = listing()
    assert f"  hypotrack/h06: {headlines['h06']} (new111)\n" in printed
    assert "viewStateShareKey=hypotrack-test-new111&workflowType=machine_learning&compareRunsMode=CHART" in printed
    assert "  hypotrack/h13: running\n" in printed  # a test without a verdict yet
    assert "someone else's" not in printed
    assert "click 'Model training' at the top left once" in printed

    code, refused = listing("--experiment", "h99")
    assert code == 1 and "Error: --experiment h99: no hypotrack experiment" in refused and "h06, h13" in refused
    assert "Traceback" not in refused


def test_experiment_picks_by_hypothesis_name_or_id() -> None:
    from hypotrack.errors import HypotrackError
    from hypotrack.run.recording.mlflow_ui import Listed, pick

    listed = [Listed("1", "hypotrack/h06", "t1", "invalidated: x"), Listed("2", "hypotrack/h13")]
    assert pick(listed, "h06") == pick(listed, "hypotrack/h06") == pick(listed, "1") == listed[:1]
    assert listed[0].url("http://127.0.0.1:5000") == ("http://127.0.0.1:5000/#/experiments/1/runs?viewStateShareKey="
                                                       "hypotrack-test-t1&workflowType=machine_learning&compareRunsMode=CHART")
    with pytest.raises(HypotrackError, match=r"--experiment h99: .* \(it has: h06, h13\)"):
        pick(listed, "h99")
