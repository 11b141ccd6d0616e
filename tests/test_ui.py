"""`hypotrack ui` serves MLflow on 127.0.0.1 and ends its whole process group (job consumers too)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ui_prints_its_url_once_it_answers_and_stops_its_whole_group(tmp_path: Path) -> None:
    port = _free_port()
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
