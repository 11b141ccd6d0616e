"""Run the MLflow UI on hypotrack's store, bound to 127.0.0.1, and end its whole process group on exit.

`mlflow server` starts job-consumer children that survive a plain kill of the
server; starting it in a new session and signalling the group ends them all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from hypotrack.errors import HypotrackError


def default_tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"


def serve(tracking_uri: str | None, port: int, wait: bool = True) -> subprocess.Popen:
    uri = tracking_uri or default_tracking_uri()
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri,
               "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    print(f"MLflow UI for {uri}: {url}  (Ctrl-C to stop)", flush=True)
    if not wait:
        return process

    # Started from scripts or as a background job, SIGINT may arrive ignored; handle both
    # Ctrl-C and SIGTERM explicitly so the server group never outlives `hypotrack ui`.
    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        code = process.wait()
        if code not in (0, -signal.SIGTERM, -signal.SIGINT):
            raise HypotrackError(f"the MLflow server exited with code {code} (is port {port} in use?)")
    except KeyboardInterrupt:
        pass
    finally:
        stop_group(process)
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
