"""The compact self-test: a planted fault validates its own hypothesis and no other; clean validates none.

Here on the rows where two hypotheses read the same diagnostic (h05 and h17 both read the auxiliary
rewards) and the clean run, against every hypothesis. The whole matrix, all faults, runs from the
installed wheel in CI (.ci/wheel_check), where a miss fails the build.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from runner_support import cli, env_for

from hypotrack.faults.manifest import FAULTS, NEEDS_VLLM

pytestmark = pytest.mark.slow

ROWS = ["clean", "noisy_reward_component", "biased_judge"]


def test_compact_selftest_diagonal_and_no_false_validations(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    started = time.time()
    # --compact: 3 steps per row, more only where a fault's signature builds up over training
    result = cli(["selftest", "--compact", "--json", "--faults", ",".join(ROWS), "--output-dir", str(tmp_path / "st")],
                 env, tmp_path, timeout=900)
    seconds = time.time() - started
    report = json.loads(result.stdout)
    wrong = {cell: v["summary"] for cell, v in report["cells"].items()
             if (v["status"] == "validated") != (cell.split("/")[0] != "clean" and
                                                 report_expected(cell))}
    assert report["failures"] == {}, report["failures"]
    assert report["diagonal"] == {"validated": len(ROWS) - 1, "of": len(ROWS) - 1}, wrong
    # every hypothesis a fault imitates, on its own experiment: those only a vLLM fault imitates need vLLM's (h27)
    shown = {h for name, (h, _) in FAULTS.items() if name not in NEEDS_VLLM}
    assert len(FAULTS) >= 13 and report["hypotheses"] == sorted(shown) and len(shown) >= 13
    assert "h27" not in shown
    assert report["false_validations"] == [], wrong
    assert result.returncode == 0
    # Alone on 2 cores these rows take 80-100 s. The test commands run two test files at a time, and a training
    # neighbour takes a core for as long as it runs (152 s in a CI run with one), so the budget is twice alone.
    assert seconds < 240, f"compact selftest on {len(ROWS)} rows took {seconds:.0f}s"
    # It used a store of its own: the user's registry and MLflow store were never created.
    assert not (tmp_path / "registry.db").exists() and not (tmp_path / "mlflow.db").exists()


def report_expected(cell: str) -> bool:
    fault, hypothesis = cell.split("/")
    return FAULTS.get(fault, ("",))[0] == hypothesis


# The faults of h18-h24 the toy lab can show, against their own hypotheses and the ones that read the same
# seams (h05 and h17 the auxiliary rewards, h13 the task reward function, h03 the KL term).
NEW_CAUSES = ["clean", "reference_without_adapter", "checkpointing_without_input_grads", "unnormalised_reward_scales",
              "groups_of_mixed_prompts", "schedule_counts_batches", "schedule_stepped_per_micro_batch",
              "verifier_timeouts_scored_zero"]


def test_compact_selftest_on_the_upstream_bug_faults(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    hypotheses = ["h03", "h05", "h13", "h17", "h18", "h19", "h20", "h21", "h22", "h24"]
    result = cli(["selftest", "--compact", "--json", "--faults", ",".join(NEW_CAUSES), "--hypotheses",
                  ",".join(hypotheses), "--output-dir", str(tmp_path / "st")], env, tmp_path, timeout=900)
    report = json.loads(result.stdout)
    assert report["failures"] == {}, report["failures"]
    assert report["diagonal"] == {"validated": len(NEW_CAUSES) - 1, "of": len(NEW_CAUSES) - 1}, report["cells"]
    assert report["false_validations"] == [], report["false_validations"]
    assert report["left_out"] == {} and result.returncode == 0
    # triage on the same runs' plain TRL logs names the cause first where TRL logs its signature
    ranks = {row["row"]: row["rank"] for row in report["triage"]["rows"] if row["expected"]}
    assert ranks["reference_without_adapter"] == 1 and ranks["schedule_counts_batches"] == 1, ranks
    assert ranks["schedule_stepped_per_micro_batch"] == 1, ranks


def test_a_matrix_wider_than_the_terminal_shows_one_letter_a_cell() -> None:
    """Twenty hypotheses of 'inconclusive 0.67' do not fit a terminal: each verdict keeps its cell as one letter
    and the fault names are shortened instead."""
    from rich.console import Console

    from hypotrack.cli.selftest import _print_matrix
    from hypotrack.run.selftest import SelftestResult
    from hypotrack.verdict import Verdict

    hypotheses = [f"h{i:02d}" for i in range(1, 21)]
    expected = {"checkpointing_without_input_grads": "h19", "reference_without_adapter": "h18"}
    rows = ["clean", *expected]
    verdicts = {(row, hyp): Verdict("validated" if expected.get(row) == hyp else
                                    "not_applicable" if hyp == "h03" else "inconclusive" if hyp == "h05" else
                                    "invalidated", 0.67, "")
                for row in rows for hyp in hypotheses}
    result = SelftestResult(rows=rows, hypotheses=hypotheses, verdicts=verdicts, seconds=60, unique_runs=3,
                            store=Path("."), expected=expected)
    for width, label in ((200, "checkpointing_without_input_grads (h19)"), (100, "checkpointing_wit…")):
        console = Console(width=width, record=True, force_terminal=False)
        _print_matrix(console, result)
        lines = console.export_text().splitlines()
        row = next(line.split() for line in lines if line.lstrip().startswith("checkpointing_"))
        letters = {"validated": "V", "invalidated": "i", "inconclusive": "?", "not_applicable": "n/a"}
        assert row[-20:] == [letters[verdicts[("checkpointing_without_input_grads", hyp)].status]
                             for hyp in hypotheses], (width, lines)
        assert " ".join(row[:-20]) == label and max(map(len, lines)) <= width
    wide = Console(width=500, record=True, force_terminal=False)
    _print_matrix(wide, result)
    assert "inconclusive 0.67" in wide.export_text()  # where it fits, each cell has its words and confidence
