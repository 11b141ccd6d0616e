"""Verdicts in the registry and the read-only commands: not_applicable as a status, headlines, confirmations.

A real SQLite registry and the real CLI; the verdicts come from hypotrack.verdict.decide on constructed
series (the training side is exercised in tests/test_runner_e2e.py and tests/test_seeds_pooling.py).
"""

from __future__ import annotations

import json
import sqlite3

from hypotrack.definitions.models import Hypothesis
from hypotrack.registry import engine as engine_mod
from hypotrack.registry import open_registry, store
from hypotrack.verdict import decide, not_applicable

PRESENT = {"metric": "diag/x", "arm": "control", "steps": "mean", "op": ">", "threshold": 0.5, "seeds": "all"}


def _series(treatment: dict[int, float]) -> dict:
    def arm(values: dict[int, float], diag: bool) -> dict:
        return {seed: {"task_reward": [(s, v) for s in range(1, 11)], "task_reward_std": [(s, 0.5) for s in range(1, 11)],
                       **({"diag/x": [(s, 1.0) for s in range(1, 11)]} if diag else {})}
                for seed, v in values.items()}
    return {"control": arm(dict.fromkeys(treatment, 0.5), True), "treatment": arm(treatment, False)}


def _record(registry, hypothesis_id: str, verdict) -> str:
    test = store.start_test_run(registry, hypothesis_id, experiment="toy_arith", arms=["control", "treatment"],
                                seeds=verdict.seeds or [0], config_hash="x")
    store.finish_test_run(registry, test.id, state="finished", verdict=verdict.status, confidence=verdict.confidence,
                          summary=verdict.summary, evidence=verdict.evidence(), headline=verdict.headline,
                          effect=verdict.effect.as_json() if verdict.effect else None)
    return test.id


def test_status_reads_at_a_glance_with_not_applicable_and_a_signature_only_verdict(run_cli, registry_url, cli_env):
    registry = open_registry(registry_url)
    hyp = Hypothesis.model_validate({"id": "h01", "title": "t", "priority": "high", "statement": "s",
                                     "criteria": {"validated": [PRESENT]}})
    signature_only = decide(hyp, _series({0: 0.62, 1: 0.55}), [0, 1])
    assert signature_only.signature_only
    _record(registry, "h01", signature_only)
    _record(registry, "h03", not_applicable(["the experiment has no KL term: beta is 0"]))

    table = run_cli("status", env={**cli_env, "COLUMNS": "120"}).stdout
    lines = table.splitlines()
    assert all(len(line) <= 120 for line in lines)
    rows = [line for line in lines if line.lstrip().startswith("h")]
    assert len(rows) == 27  # one line per hypothesis
    h01 = next(r for r in rows if r.lstrip().startswith("h01"))
    assert "validated" in h01 and "0.75" in h01 and "validated (signature only)" in h01
    h03 = next(r for r in rows if r.lstrip().startswith("h03"))
    assert "not applicable" in h03 and "high" not in h03.lower().split("not applicable")[1]

    rows_json = {r["id"]: r for r in json.loads(run_cli("status", "--json").stdout)}
    assert rows_json["h03"]["status"] == "not_applicable" and rows_json["h03"]["confidence"] is None
    assert rows_json["h01"]["headline"] == signature_only.headline and len(rows_json["h01"]["headline"]) <= 100
    assert "treatment better on 2/2 seeds" in rows_json["h01"]["evidence"]  # the whole evidence stays in JSON

    step = json.loads(run_cli("next", "--json").stdout)
    assert step["next"] != "h03"  # next skips a hypothesis that does not apply
    assert step["confirm"][0]["hypothesis"] == "h01" and "--more-seeds" in step["confirm"][0]["command"]
    shown = run_cli("show", "h03").stdout
    assert "not applicable" in shown and "beta is 0" in shown
    report = run_cli("report").stdout
    assert "Not applicable" in report and "Confirm the fix" in report and "hypotrack run h01 --more-seeds" in report


def test_migration_turns_old_not_applicable_verdicts_into_the_status(registry_path):
    """A registry written before not_applicable had its own status is upgraded in place, and back."""
    url = f"sqlite:///{registry_path}"
    registry = open_registry(url, migrate=False)
    engine_mod.upgrade(registry.url, registry.engine, "0003")
    with sqlite3.connect(registry_path) as db:
        db.execute("insert into hypothesis_state values ('h03', 'invalidated', 1.0, '2026-11-20 10:00:00')")
        db.execute("insert into test_run (id, hypothesis_id, experiment, arms, seeds, config_hash, pid, host, state, "
                   "previous_status, verdict, confidence, summary, started_at, mlflow_closed) values ('t1', 'h03', "
                   "'toy', '[]', '[0]', 'x', 1, 'h', 'finished', 'pending', 'invalidated', 1.0, "
                   "'invalidated: not applicable to this run: beta is 0', '2026-11-20 10:00:00', 1)")
        db.execute("insert into status_change (hypothesis_id, from_status, to_status, confidence, reason, actor, "
                   "test_run_id, at) values ('h03', 'testing', 'invalidated', 1.0, 'test run t1: invalidated: not "
                   "applicable to this run: beta is 0', 'me', 't1', '2026-11-20 10:00:00')")
    engine_mod.upgrade(registry.url, registry.engine, "head")
    with sqlite3.connect(registry_path) as db:
        assert db.execute("select status, confidence from hypothesis_state").fetchall() == [("not_applicable", None)]
        assert db.execute("select verdict, confidence, summary from test_run").fetchall() == [
            ("not_applicable", None, "not applicable to this run: beta is 0")]
        assert db.execute("select to_status from status_change").fetchall() == [("not_applicable",)]
    engine_mod.downgrade(registry.url, registry.engine, "0003")
    with sqlite3.connect(registry_path) as db:
        assert db.execute("select status, confidence from hypothesis_state").fetchall() == [("invalidated", 1.0)]
        assert db.execute("select verdict from test_run").fetchall() == [("invalidated",)]
