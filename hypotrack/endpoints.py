"""Is anything listening there? A bounded TCP probe of the servers a run depends on, before it records anything.

MLflow's HTTP client retries a server that does not answer for minutes, and Ray's GCS client for
more than a hundred seconds, in native code that defers Ctrl-C and SIGTERM. One TCP connection
with a short timeout tells a closed port, an unknown host or a silent network at once, and the
caller says what to start. A server that accepts the connection is left to its client.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

from hypotrack.errors import HypotrackError

PROBE_SECONDS = 5.0  # the longest a probe waits for a connection (an unreachable network), well under 10 s


def unanswered(host: str, port: int, timeout: float = PROBE_SECONDS) -> str | None:
    """Why nothing answers at host:port (refused, unknown host, timed out), or None when a connection opened."""
    started = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror as exc:
        return f"unknown host: {exc.strerror or exc}"
    except TimeoutError:
        return f"no answer within {time.monotonic() - started:.0f} s"
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def check_tracking_server(uri: str) -> None:
    """An http(s) MLflow tracking URI must have a server listening; other URIs (files, databases) pass."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise HypotrackError(f"the MLflow tracking URI {uri} (--tracking-uri or MLFLOW_TRACKING_URI) has an invalid "
                             "port") from None
    reason = unanswered(parts.hostname, port)
    if reason:
        raise HypotrackError(
            f"the MLflow tracking server {uri} (--tracking-uri or MLFLOW_TRACKING_URI) does not answer at "
            f"{parts.hostname}:{port} ({reason}). Start it (`mlflow server --host 0.0.0.0 --port {port}` on that "
            "machine), or give a tracking URI that works, such as sqlite:///mlflow.db; nothing was recorded")
