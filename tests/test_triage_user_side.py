"""Triage on faults written elsewhere: user-written runs trained by plain TRL, fitted on one half, read on the other.

tests/fixtures/triage/user_side_plain_trl.json holds the `trainer_state.json` logs of the user-side runs
(tests/user_side/experiments: six users' loaders and reward functions, 0/1, graded, +-1 and negative
rewards, 2 to 16 generations, batches of 8 to 32, LoRA and full fine-tuning), recorded by
tests/tools/record_user_side_triage.py with TRL's own GRPOTrainer. The signatures were tuned on the
`fit` half; the `holdout` half was written and recorded before that tuning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tools.triage_holdout import FIXTURE, summary, triage_fixture


@pytest.fixture(scope="module")
def runs():
    return triage_fixture()


def test_the_holdout_half_ranks_the_planted_cause(runs) -> None:
    held = summary(runs, "holdout")
    assert held["faulty"] >= 9 and held["clean"] >= 2
    assert held["first"] / held["faulty"] >= 0.8, held
    assert held["top3"] == held["faulty"], held
    assert held["clean_with_suspect"] == 0, [r for r in runs if r.half == "holdout" and r.suspects and not r.expected]


def test_the_fit_half_and_every_clean_run(runs) -> None:
    fit = summary(runs, "fit")
    assert fit["faulty"] >= 14, "the issue asks for at least 14 user-written faults over h01-h17"
    assert fit["first"] / fit["faulty"] >= 0.9, fit
    assert not [r.name for r in runs if r.expected is None and r.suspects]


@pytest.mark.parametrize("run, cause", [("overweighted_kl", "h03"), ("beta_two", "h03"), ("out_of_reach", "h11"),
                                        ("six_digit_sums", "h11"), ("wrong_sign_grade", "h13"),
                                        ("negated_cost", "h13"), ("judge_hacked", "h17")])
def test_the_four_failures_users_report_rank_their_own_hypothesis_first(runs, run: str, cause: str) -> None:
    """A KL term that pins the policy, a task out of reach, a reward with its sign flipped, an auxiliary reward
    the policy hacks: each named first from plain logs."""
    triaged = next(r for r in runs if r.name == run)
    assert (triaged.expected, triaged.rank) == (cause, 1), triaged.top


def test_a_constant_auxiliary_reward_is_said_to_move_nothing(tmp_path: Path) -> None:
    from hypotrack.definitions import Project, load_library
    from hypotrack.triage.api import triage

    run = json.loads(FIXTURE.read_text())["constant_format"]  # a format reward every completion earns, weight 3
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": run["log_history"]}))
    report = triage(str(tmp_path), load_library(Project(Path(__file__).resolve().parents[1])).hypotheses,
                    task_reward=run["task_reward"])
    assert any("format_ok gave every completion of every step the same score" in f for f in report.findings)
    assert report.suspects() == []
    for hypothesis in ("h05", "h17"):
        entry = next(e for e in report.ranking if e.id == hypothesis)
        assert entry.evidence < 0 and any("moves no advantage" in r.shows for r in entry.contradicting())
    # the end-of-training summary TRL appends at the last step is not a step logged twice
    assert not any("logged more than once" in f for f in report.findings)
