"""A port handed to a listener that binds later lies outside the kernel's ephemeral range, and is free."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from hypotrack import ports
from hypotrack.ports import EPHEMERAL_RANGE, LOWEST, unclaimed_port


def test_the_port_is_free_and_below_the_range_the_kernel_hands_out() -> None:
    first_ephemeral = int(Path(EPHEMERAL_RANGE).read_text().split()[0])
    drawn = {unclaimed_port() for _ in range(20)}
    assert all(LOWEST <= port < first_ephemeral for port in drawn), drawn
    assert len(drawn) > 1  # drawn at random: two arms asking at once rarely meet
    for port in drawn:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_two_arms_of_the_same_seed_draw_different_ports() -> None:
    # each arm seeds `random` with its seed before it asks for a port: a draw from it would be the same in both
    drawn = []
    for _ in range(2):
        random.seed(0)
        drawn.append(unclaimed_port())
    assert drawn[0] != drawn[1]


def test_a_port_someone_listens_on_is_never_handed_out(tmp_path: Path, monkeypatch) -> None:
    # ten candidates below a pretended ephemeral range; a listener on nine of them leaves one
    (tmp_path / "range").write_text(f"{LOWEST + 10}\t60999\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", str(tmp_path / "range"))
    held = []
    try:
        for port in range(LOWEST, LOWEST + 10):
            sock = socket.socket()
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:  # someone on this machine listens there already
                sock.close()
                continue
            sock.listen()
            held.append(sock)
        free = set(range(LOWEST, LOWEST + 10)) - {sock.getsockname()[1] for sock in held[:-1]}
        held.pop().close()
        assert {ports.unclaimed_port() for _ in range(30)} <= free
    finally:
        for sock in held:
            sock.close()
