"""Test runs whose runner died (SIGKILL, OOM, a crash) are marked killed by the next command.

Every command calls `reconcile`: a SIGKILLed runner leaves a `running` row whose pid
is gone, and the hypothesis would otherwise stay `testing` forever. The check is one
read in SQLAlchemy Core; only when there is something to fix does it load the ORM
writer.
"""

from __future__ import annotations

from sqlalchemy import select

from . import tables
from .engine import Registry
from .processes import hostname, is_alive
from .queries import Row, fetch


def reconcile(registry: Registry) -> list[Row]:
    """Mark test runs of dead processes on this host as killed; returns them."""
    tr = tables.test_run
    running = fetch(registry, select(tr).where(tr.c.state == "running", tr.c.host == hostname()))
    dead = [run for run in running if not is_alive(run.pid, run.pid_start)]
    if dead:
        from .store import finish_test_run

        for run in dead:
            finish_test_run(registry, run.id, state="killed",
                            error=f"runner process {run.pid} ended without finishing (killed or crashed)",
                            mlflow_closed=False)
    return dead
