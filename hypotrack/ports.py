"""A TCP port for a listener that something else binds later (accelerate's rendezvous, torch.distributed's store).

Asking the kernel for port 0 and closing the socket hands back a port from the ephemeral range, the same range
every outgoing connection and every listener bound to port 0 draws from. Between the probe and the real bind,
seconds later once a model has loaded, a neighbour (another arm's gloo pairs or TCPStore client, a tracker's
HTTP connection) can take that very port, and the bind fails with EADDRINUSE. A port drawn at random below the
ephemeral range is one the kernel never hands out on its own; two arms collide only if both draw the same one.
The draw comes from the operating system's entropy: every arm seeds `random` with its own seed before it trains
(transformers' set_seed), so two arms of seed 0 would draw the same port from it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 20000  # under it sit the well-known services' ports (PostgreSQL's 5432, Ray's 6379, MLflow's 5000)
EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"
_DRAW = random.SystemRandom()


def unclaimed_port(host: str = "127.0.0.1") -> int:
    """A port free now on ``host`` and outside the kernel's ephemeral range (a probe of port 0 where that range
    cannot be read or leaves no room below it)."""
    try:
        first_ephemeral = int(Path(EPHEMERAL_RANGE).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first_ephemeral = LOWEST
    for port in _DRAW.sample(range(LOWEST, first_ephemeral), min(64, max(0, first_ephemeral - LOWEST))):
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
