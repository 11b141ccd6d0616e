"""The shipped hypotheses on runs written the way users write them (tests/user_side/README.md).

Each user-side bug must validate its own hypothesis and no other; the healthy runs must validate
none and be decided (not inconclusive) by at least five of h01-h06. Nothing here imports
hypotrack.toy.faults: the bugs live in the users' own experiment files, loaders and rewards.
This reads the signature (control arms, one seed); the two-part verdict with the treatment's
effect is exercised in tests/test_runner_e2e.py.

The second test is the whole user-side matrix at the seeds a user affords (two), over every GRPO
hypothesis (tests/tools/user_side_matrix.py); it is CI's own step (`-m user_side`, about 4 minutes).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent / "user_side"
SEED_HYPOTHESES = ["h01", "h02", "h03", "h04", "h05", "h06"]
ROWS = {  # run -> the hypothesis its bug should validate (None: healthy)
    "healthy_sums": None, "healthy_capitals": None, "bf16_reward_model": "h01", "overweighted_kl": "h03",
    "cut_evidence": "h04", "cut_span": "h04", "flaky_judge": "h05", "penalty_sign": "h05",
}
STEPS = 8


@pytest.mark.slow
def test_user_side_bugs_validate_their_own_hypothesis_only(tmp_path: Path, toy_cache: Path, monkeypatch) -> None:
    from hypotrack.definitions import Project, load_library
    from hypotrack.registry import open_registry
    from hypotrack.run.selftest import Row, render_markdown, run_selftest
    from hypotrack.tracking import Tracker

    monkeypatch.setenv("HYPOTRACK_CACHE", str(toy_cache))
    assert "hypotrack.toy.faults" not in "".join(p.read_text() for p in (PROJECT / "experiments").iterdir())
    library = load_library(Project(PROJECT))
    library.raise_if_problems()
    rows = [Row(name, experiment=name, expected=expected) for name, expected in ROWS.items()]
    started = time.time()
    result = run_selftest(library, open_registry(f"sqlite:///{tmp_path / 'registry.db'}"),
                          Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}"), tmp_path / "runs", rows,
                          SEED_HYPOTHESES, [0], STEPS, parallel=2)
    matrix = render_markdown(result)
    print(matrix, f"{time.time() - started:.0f} s")
    report = os.environ.get("HYPOTRACK_TEST_REPORTS")
    if report:  # keep the matrix where CI can show it
        Path(report).mkdir(parents=True, exist_ok=True)
        (Path(report) / "user_side_matrix.md").write_text(matrix)
        (Path(report) / "user_side_matrix.json").write_text(json.dumps(result.as_json(), indent=1))
    cells = {f"{r}/{h}": v.summary for (r, h), v in result.verdicts.items()}
    assert result.failures == {}, result.failures
    hits, total = result.diagonal()
    assert (hits, total) == (6, 6), matrix + json.dumps(cells, indent=1)
    assert result.false_validations() == [], matrix
    for row, expected in ROWS.items():
        if expected is None:
            decided = [h for h in SEED_HYPOTHESES if result.verdicts[(row, h)].status != "inconclusive"]
            assert len(decided) >= 5, (row, matrix)


@pytest.mark.user_side
def test_user_side_matrix_at_two_seeds(tmp_path: Path, toy_cache: Path, monkeypatch) -> None:
    """Every bug validates its own hypothesis at two seeds, none validates another, healthy runs validate nothing."""
    from tools.user_side_matrix import GRPO_HYPOTHESES, run_matrix
    from tools.user_side_matrix import ROWS as ALL_ROWS

    from hypotrack.run.selftest import render_markdown

    monkeypatch.setenv("HYPOTRACK_CACHE", str(toy_cache))
    started = time.time()
    result = run_matrix(2, None, ALL_ROWS, GRPO_HYPOTHESES, tmp_path)
    matrix = render_markdown(result)
    print(matrix, f"{time.time() - started:.0f} s")
    report = os.environ.get("HYPOTRACK_TEST_REPORTS")
    if report:
        Path(report).mkdir(parents=True, exist_ok=True)
        (Path(report) / "user_side_matrix_2_seeds.md").write_text(matrix)
    assert result.failures == {}, result.failures
    assert result.false_validations() == [], matrix
    hits, total = result.diagonal()
    assert hits == total == sum(expected is not None for expected in ALL_ROWS.values()), matrix
    for row, expected in ALL_ROWS.items():
        if expected is None:
            assert not [h for h in GRPO_HYPOTHESES if result.verdicts[(row, h)].status == "validated"], matrix
