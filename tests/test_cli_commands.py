"""The read/write commands through the real CLI: status, next, show, validate, mark, note, log, report."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import record_two_tests

from hypotrack.registry import open_registry, queries, store

SEED = ["h01", "h02", "h03", "h04", "h05", "h06"]


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def test_fresh_registry_status_next_mark_next(run_cli, seed_project_dir, cli_env):
    env = {**cli_env, "HYPOTRACK_PROJECT": str(seed_project_dir)}
    rows = json.loads(ok(run_cli("status", "--json", env=env)))
    # a project always has the shipped library underneath its own files
    assert [r["id"] for r in rows] == [*SEED, "h07", "h08", "h09", "h10", *(f"h{n}" for n in range(11, 28))]
    assert {r["status"] for r in rows} == {"pending"}
    assert set(rows[0]) >= {"id", "title", "priority", "status", "confidence", "evidence", "last_run"}
    table = ok(run_cli("status", env=env))
    for column in ("ID", "Hypothesis", "Pri", "Status", "Conf", "Latest verdict or note", "Last run"):
        assert column in table
    assert "LoRA weight sync" in table and table.count("pending") == 27

    text = ok(run_cli("next", env=env))
    assert "Next: H06: LoRA weight sync" in text
    assert "h06 is high priority and pending; it has no prerequisites" in text
    assert "Run: hypotrack run h06 --no-peft" in text
    assert "blocked: h01 waits for h06 (pending)" in text

    assert ok(run_cli("mark", "h06", "invalidated", "--confidence", "0.9", "--note", "full FT no better",
                      env=env)).strip() == "h06: pending -> invalidated"
    step = json.loads(ok(run_cli("next", "--json", env=env)))
    assert step["next"] == "h01"
    assert "h01 is high priority and pending; its prerequisites h06 (invalidated) are resolved" in step["reason"]
    assert step["command"] == "hypotrack run h01 --scale-rewards none"


def test_shipped_project_next_is_h06(run_cli):
    assert "Next: H06" in ok(run_cli("next"))


def test_validate_passes_on_shipped_files(run_cli, project_dir):
    out = ok(run_cli("validate"))
    # toy_arith_vllm, its full fine-tuning and server twins; toy_letters_vllm and its server twin
    assert out.startswith("ok: 27 hypotheses, 11 experiments")
    out = ok(run_cli("validate", project_dir / "hypotheses" / "h06_lora_weight_sync.yaml", "--metrics"))
    assert out.startswith("ok: 1 hypotheses") and "  reward\n" in out


def test_mark_note_show_log_report(run_cli, registry_url, tmp_path):
    ok(run_cli("mark", "h03", "partial", "--confidence", "0.8", "--note", "beta=0 fixed gradients"))
    ok(run_cli("note", "h03", "rewards still flat"))
    registry = open_registry(registry_url)
    run_id, older_id = record_two_tests(registry)
    registry.dispose()

    shown = json.loads(ok(run_cli("show", "h03", "--json")))
    assert shown["definition"]["id"] == "h03" and shown["status"] == "validated" and shown["confidence"] == 0.7
    assert [(c["from"], c["to"]) for c in shown["history"]] == [
        ("pending", "partial"), ("partial", "testing"), ("testing", "validated")]
    assert shown["history"][0]["reason"] == "beta=0 fixed gradients" and shown["history"][0]["confidence"] == 0.8
    assert [n["text"] for n in shown["notes"]] == ["rewards still flat"]
    assert [r["id"] for r in shown["runs"]] == [run_id]
    text = ok(run_cli("show", "h03"))
    assert "H03: KL divergence bug" in text and "History" in text and run_id in text and "rewards still flat" in text

    logged = json.loads(ok(run_cli("log", "--json")))
    assert [r["id"] for r in logged] == [older_id, run_id]  # newest first
    assert logged[0]["state"] == "failed" and logged[1]["verdict"] == "validated"
    assert [r["id"] for r in json.loads(ok(run_cli("log", "--json", "--hypothesis", "h03")))] == [run_id]
    assert [r["id"] for r in json.loads(ok(run_cli("log", "--json", "--limit", "1")))] == [older_id]
    assert "Experiments log" in ok(run_cli("log"))

    status = {r["id"]: r for r in json.loads(ok(run_cli("status", "--json")))}
    assert status["h03"]["status"] == "validated" and status["h03"]["last_run_id"] == run_id
    assert status["h01"]["status"] == "pending" and "failed" in status["h01"]["last_run"]

    report = ok(run_cli("report"))
    assert report.startswith("# Hypothesis status report")
    assert "## Current Status Summary" in report and "## Next Action" in report and "## Experiments Log" in report
    assert "| H03: KL divergence bug | MEDIUM | ✅ Validated | medium (0.70) |" in report
    assert "**H06: LoRA weight sync**" in report and run_id in report and older_id in report
    target = tmp_path / "report.md"
    assert "report written to" in ok(run_cli("report", "-o", target))
    assert target.read_text() == report


def test_status_evidence_is_the_newest_note_or_change(run_cli):
    ok(run_cli("mark", "h02", "inconclusive", "--note", "masks look fine"))
    rows = {r["id"]: r for r in json.loads(ok(run_cli("status", "--json")))}
    assert rows["h02"]["evidence"] == "masks look fine"
    ok(run_cli("note", "h02", "but env tokens are trained"))
    rows = {r["id"]: r for r in json.loads(ok(run_cli("status", "--json")))}
    assert rows["h02"]["evidence"] == "but env tokens are trained" and rows["h02"]["status"] == "inconclusive"


def test_reconcile_dead_and_alive_runs(run_cli, cli_env, any_registry_url):
    """On SQLite and on PostgreSQL: the CLI reconciles a shared registry the same way."""
    from sqlalchemy import update

    from hypotrack.registry.models import RecordedTest
    from hypotrack.registry.processes import process_start

    registry_url = cli_env["HYPOTRACK_DB"] = any_registry_url  # run_cli reads this environment
    registry = open_registry(registry_url)
    store.set_status(registry, "h04", "inconclusive", confidence=0.3)
    dead_run = store.start_test_run(registry, "h04", experiment="musique_mini", arms=["treatment"], seeds=[0],
                                    config_hash="x")
    alive_run = store.start_test_run(registry, "h05", experiment="toy_arith", arms=["treatment"], seeds=[0],
                                     config_hash="y")
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_start = process_start(finished.pid)
    finished.wait()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with registry.session() as session, session.begin():
            session.execute(update(RecordedTest).where(RecordedTest.id == dead_run.id)
                            .values(pid=finished.pid, pid_start=dead_start))
            session.execute(update(RecordedTest).where(RecordedTest.id == alive_run.id)
                            .values(pid=sleeper.pid, pid_start=process_start(sleeper.pid)))
        assert queries.get_status(registry, "h04") == "testing"

        result = run_cli("status", "--json")
        ok(result)
        assert f"test run {dead_run.id} of h04 (pid {finished.pid}) had died" in result.stderr
        assert "h04 is back to inconclusive" in result.stderr
        assert alive_run.id not in result.stderr
        rows = {r["id"]: r for r in json.loads(result.stdout)}
        assert rows["h04"]["status"] == "inconclusive" and rows["h04"]["confidence"] == 0.3
        assert rows["h05"]["status"] == "testing"
        assert queries.get_test_run(registry, dead_run.id).state == "killed"
        assert queries.get_test_run(registry, alive_run.id).state == "running"
        # reported once: the next command has nothing left to reconcile
        assert "had died" not in run_cli("next").stderr
    finally:
        sleeper.kill()
        sleeper.wait()
    # once the alive one dies too, the next command reconciles it
    result = run_cli("log", "--json")
    assert f"test run {alive_run.id} of h05" in result.stderr and "back to pending" in result.stderr
    assert queries.get_status(registry, "h05") == "pending"
    registry.dispose()


def test_help_and_version(run_cli):
    out = ok(run_cli("--help"))
    for command in ("status", "next", "show", "validate", "mark", "note", "log", "report", "db", "run"):
        assert f"  {command} " in out
    assert "0.1.0" in ok(run_cli("--version"))


def test_what_a_hypothesis_requires_is_checked_on_the_users_run_whichever_arms_train(run_cli) -> None:
    """h01 requires group scaling and its treatment turns it off: training the treatment arm alone must not
    make the run look like one without group scaling. h03 requires a KL term, which toy_arith lacks."""
    treatment_only = run_cli("run", "h01", "--arms", "treatment", "--dry-run")
    assert treatment_only.returncode == 0, treatment_only.stderr
    assert "does not apply" not in treatment_only.stdout
    no_kl = run_cli("run", "h03", "--arms", "treatment", "--dry-run")
    assert no_kl.returncode == 0, no_kl.stderr
    assert "h03 does not apply to this run: the experiment has no KL term" in " ".join(no_kl.stdout.split())
