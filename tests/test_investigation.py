"""The investigation's records as a notebook reads them: a real registry file, a project, no CLI and no mocks."""

from __future__ import annotations

import json

import pytest
from conftest import record_two_tests

from hypotrack import investigation
from hypotrack.definitions.project import Project
from hypotrack.errors import HypotrackError
from hypotrack.investigation import Hypotheses, log_record, record_json, show_record
from hypotrack.registry import open_registry, store

CLIPPED = {"hypothesis": "h12", "rank": 1, "evidence": 0.9, "suspect": True, "applies": True}


@pytest.fixture
def notebook(seed_project_dir, tmp_path, monkeypatch):
    """A registry in tmp_path with h03 marked, noted and tested, h01 failed, and a triage that suspects h12."""
    monkeypatch.setenv("HYPOTRACK_CACHE", str(tmp_path / "cache"))
    registry = open_registry(f"sqlite:///{tmp_path / 'notebook.db'}")
    store.set_status(registry, "h03", "partial", reason="beta=0 fixed gradients", confidence=0.8)
    store.add_note(registry, "h03", "rewards still flat")
    tested, failed = record_two_tests(registry)
    triage = store.record_triage(registry, source="outputs/grpo-run", source_kind="trainer_state", threshold=0.5,
                                 ranking=[CLIPPED], report={"ranking": [CLIPPED], "expected": []})
    yield registry, Hypotheses.load(Project.locate(seed_project_dir)), tested, failed, triage
    registry.dispose()


def test_a_notebook_reads_the_records_a_command_prints(notebook, run_cli, cli_env, seed_project_dir, tmp_path):
    registry, hypotheses, tested, failed, triage = notebook

    shown = show_record(registry, hypotheses, "h03")
    assert shown.definition.id == "h03" and shown.file.name.startswith("h03_")
    assert (shown.status, shown.confidence) == ("validated", 0.7)
    data = shown.as_json()
    assert [(c["from"], c["to"]) for c in data["history"]] == [
        ("pending", "partial"), ("partial", "testing"), ("testing", "validated")]
    assert [n["text"] for n in data["notes"]] == ["rewards still flat"]
    assert [r["id"] for r in data["runs"]] == [tested] and data["runs"][0]["verdict"] == "validated"
    assert data["triage"] is None  # the triage did not rank h03
    assert show_record(registry, hypotheses, "h12").triage["triage"] == triage
    # the command prints this very record
    env = {**cli_env, "HYPOTRACK_PROJECT": str(seed_project_dir), "HYPOTRACK_DB": str(tmp_path / "notebook.db")}
    printed = run_cli("show", "h03", "--json", env=env)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == record_json(shown) + "\n"

    status = {row["id"]: row for row in investigation.status_record(registry, hypotheses).as_json()}
    assert status["h03"]["status"] == "validated" and status["h03"]["last_run_id"] == tested
    assert status["h01"]["last_run_id"] == failed and status["h12"]["triage"] == CLIPPED

    step = investigation.next_record(registry, hypotheses)
    assert step.step.hypothesis.id == "h12"  # the triage's suspect comes first
    assert step.as_json()["triage"] == {"id": triage, "source": "outputs/grpo-run"}

    assert [r["id"] for r in log_record(registry).as_json()] == [failed, tested]  # newest first
    assert [r.id for r in log_record(registry, "h03", hypotheses=hypotheses).runs] == [tested]
    assert [r.id for r in log_record(registry, limit=1).runs] == [failed]
    assert "| H03: KL divergence bug | MEDIUM | ✅ Validated | medium (0.70) |" in investigation.report_markdown(
        registry, hypotheses)


def test_bad_input_is_a_hypotrack_error_in_the_commands_words(notebook, seed_project_dir):
    registry, hypotheses, *_ = notebook
    unknown = rf"no hypothesis 'h99' in {seed_project_dir / 'hypotheses'} \(known: h01, h02, "
    with pytest.raises(HypotrackError, match=unknown):
        show_record(registry, hypotheses, "h99")
    with pytest.raises(HypotrackError, match=unknown):
        log_record(registry, "h99", hypotheses=hypotheses)
    with pytest.raises(HypotrackError, match=r"limit must be 1 or more \(got 0\)"):
        log_record(registry, limit=0)
    assert json.loads(record_json(log_record(registry, "h99"))) == []  # without the hypotheses, nothing to check
