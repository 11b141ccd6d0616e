"""Registry store, concurrency, and refusing MLflow's own database.

The store and concurrency tests run on SQLite and on PostgreSQL (a server the session
starts, tests/pg_server.py); they skip on PostgreSQL where none can start.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest
from sqlalchemy import func, select

from hypotrack.registry import RegistryError, open_registry, queries, store
from hypotrack.registry.models import Note, StatusChange

WRITER = textwrap.dedent("""
    import sys
    from hypotrack.registry import open_registry
    from hypotrack.registry.store import add_note, set_status
    url, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    registry = open_registry(url)
    statuses = ["testing", "partial", "inconclusive", "pending"]
    for i in range(count):
        hyp = f"h0{1 + (worker + i) % 6}"
        if i % 2:
            add_note(registry, hyp, f"worker {worker} note {i}", who=f"w{worker}")
        else:
            set_status(registry, hyp, statuses[i % 4], reason=f"worker {worker} write {i}", who=f"w{worker}")
    print("done", worker)
""")


@pytest.fixture
def registry_url(any_registry_url: str) -> str:
    return any_registry_url


def test_eight_processes_thousand_writes(registry_url, tmp_path):
    """8 processes x 125 mark/note writes on a registry none of them has created yet: nothing lost, no lock errors."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), registry_url, str(w), "125"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(8)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
        assert "locked" not in err.lower() and "Traceback" not in err
        assert out.startswith("done")
    registry = open_registry(registry_url)
    with registry.session() as session:
        changes = session.scalar(select(func.count()).select_from(StatusChange))
        notes = session.scalar(select(func.count()).select_from(Note))
        per_worker = dict(session.execute(select(Note.author, func.count()).group_by(Note.author)).all())
    assert changes + notes == 1000
    assert changes == 8 * 63 and notes == 8 * 62 and per_worker == {f"w{w}": 62 for w in range(8)}
    # the history chains: every change starts where the previous one of that hypothesis ended
    for hyp in ("h01", "h02", "h03", "h04", "h05", "h06"):
        chain = queries.history(registry, hyp)
        assert chain[0].from_status == "pending"
        assert all(a.to_status == b.from_status for a, b in zip(chain, chain[1:]))
        assert queries.get_status(registry, hyp) == chain[-1].to_status
    registry.dispose()


def test_set_status_rejects_unknown_status(registry_url):
    registry = open_registry(registry_url)
    with pytest.raises(store.UnknownStatus):
        store.set_status(registry, "h01", "proven")
    assert queries.history(registry, "h01") == []


def test_finish_keeps_hand_marks_and_parallel_runs(registry_url):
    registry = open_registry(registry_url)
    a = store.start_test_run(registry, "h01", experiment="e", arms=["treatment"], seeds=[0], config_hash="1")
    b = store.start_test_run(registry, "h01", experiment="e", arms=["treatment"], seeds=[1], config_hash="2")
    store.finish_test_run(registry, a.id, state="failed", error="oom")
    assert queries.get_status(registry, "h01") == "testing"  # b still runs
    store.set_status(registry, "h01", "partial", reason="by hand")
    store.finish_test_run(registry, b.id, state="finished", verdict="validated", confidence=0.9)
    assert queries.get_status(registry, "h01") == "partial"  # the hand mark stands
    with pytest.raises(ValueError):
        store.finish_test_run(registry, b.id, state="running")



def test_overlapping_interrupted_runs_give_back_the_status_before_either(registry_url):
    registry = open_registry(registry_url)
    store.set_status(registry, "h02", "inconclusive", reason="earlier test")
    for first_to_end in ("a", "b"):  # whichever of the two overlapping runs ends first
        a = store.start_test_run(registry, "h02", experiment="e", arms=["control"], seeds=[0], config_hash="1")
        b = store.start_test_run(registry, "h02", experiment="e", arms=["control"], seeds=[0], config_hash="1")
        assert b.previous_status == "inconclusive"  # not the `testing` that a put it in
        order = [a, b] if first_to_end == "a" else [b, a]
        store.finish_test_run(registry, order[0].id, state="killed")
        assert queries.get_status(registry, "h02") == "testing"  # the other still runs
        store.finish_test_run(registry, order[1].id, state="killed")
        assert queries.get_status(registry, "h02") == "inconclusive"

def test_refuses_mlflow_named_file(tmp_path):
    with pytest.raises(RegistryError, match="MLflow's database file"):
        open_registry(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert not (tmp_path / "mlflow.db").exists()


def test_refuses_mlflow_tracking_database(tmp_path):
    path = tmp_path / "store.sqlite"
    con = sqlite3.connect(path)
    for table in ("experiments", "runs", "metrics", "params", "tags"):
        con.execute(f"create table {table} (x integer)")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(RegistryError, match="is an MLflow tracking database; give hypotrack its own file"):
        open_registry(f"sqlite:///{path}")
    assert path.read_bytes() == before


def test_registry_errors_are_clear(tmp_path):
    with pytest.raises(RegistryError, match="does not exist"):
        open_registry(f"sqlite:///{tmp_path / 'missing' / 'r.db'}")
    (tmp_path / "junk.db").write_text("junk" * 500)
    with pytest.raises(RegistryError, match="not a SQLite database"):
        open_registry(f"sqlite:///{tmp_path / 'junk.db'}")
    with pytest.raises(RegistryError, match="not a valid SQLAlchemy URL"):
        open_registry("nosuch://x/y")
