"""Triage accuracy on the planted faults, from the plain TRL logs of real self-test runs.

tests/fixtures/triage/selftest_series.json holds the control arms of a real `hypotrack selftest`
(every planted fault on toy_arith and musique_mini, seeds 0 and 1, the experiments' own 30 steps),
keeping TRL's keys only: what a plain TRL run of the same setup logs (the hooks only observe).
Recorded with tests/tools/record_triage_series.py: the faults of h01-h17 when the toy lab's runs had a
KL term (so TRL logged kl), the faults of h18-h24 on today's toy lab (no KL term, except where the fault
brings one); re-record a fault's runs when it changes.

Each fault is triaged on its own hypothesis's experiment, as the self-test trains it, told which reward
function is the task's (as a user says it with --task-reward: the experiment's task_reward).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hypotrack.faults.manifest import FAULTS
from hypotrack.triage import SUSPECT_THRESHOLD
from hypotrack.triage.calibration import triage_accuracy

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "triage" / "selftest_series.json"
SEED_FAULTS = ("tiny_std_rewards", "prompt_in_loss", "kl_wrong_sign", "truncate_answer", "noisy_reward_component",
               "lora_not_synced")


@pytest.fixture(scope="module")
def library():
    from hypotrack.definitions import Project, load_library

    loaded = load_library(Project.locate(Path(__file__).resolve().parents[1]))
    loaded.raise_if_problems()
    return loaded


@pytest.fixture(scope="module")
def accuracy(library):
    recorded = json.loads(FIXTURE.read_text())
    runs: dict[str, list] = {}
    for label, run in recorded.items():
        plant = run["plant"]
        if plant != "clean" and plant not in FAULTS:
            continue  # a fault the toy lab no longer plants
        own = library.hypotheses[FAULTS[plant][0]].experiment if plant in FAULTS else None
        if own is None or own == run["experiment"]:  # a fault on its hypothesis's experiment; clean: every run
            series = {k: [tuple(p) for p in v] for k, v in run["series"].items()}
            runs.setdefault(plant, []).append((label, series, run["task_reward"]))
    expected = {plant: FAULTS[plant][0] for plant in runs if plant in FAULTS}
    result = triage_accuracy(runs, expected, library.hypotheses)
    print(result.summary())
    for row in result.rows:
        print(f"  {row.run:45} {row.expected or '-':4} rank {row.rank}  top {row.top}")
    return result


def test_seed_faults_rank_their_hypothesis_first(accuracy):
    rows = [r for r in accuracy.rows if r.row in SEED_FAULTS]
    assert {r.row for r in rows} == set(SEED_FAULTS)
    by_seed: dict[str, list] = {}
    for row in rows:
        by_seed.setdefault(row.run.rsplit(" ", 1)[-1], []).append(row)
    for seed, seeded in by_seed.items():
        first = sum(r.rank == 1 for r in seeded)
        assert first >= 5, (seed, [(r.row, r.rank, r.top) for r in seeded])  # at least 5 of the 6 seed faults
        assert all(r.rank <= 3 for r in seeded), (seed, [(r.row, r.rank, r.top) for r in seeded])


# Faults that leave no trace in a plain TRL log, and why. There triage must not point anywhere else: no other
# hypothesis reaches the suspect threshold.
NOT_IN_TRL_LOGS = {
    "sampling_temperature_not_scored": "TRL logs the generator/trainer gap (sampling/*) only with vLLM",
    "checkpointing_without_input_grads": "the output head still trains, so grad_norm is above 0 at every step",
    "groups_of_mixed_prompts": "the tie share needs num_generations, which a plain log does not carry",
    "verifier_timeouts_scored_zero": "a failure's default reads as a wrong answer in the reward's mean and std",
    "length_normalised_loss": "the toy model's completions keep their length (hypotrack/faults/length_normalised_loss.py)",
}


def test_faults_whose_signature_is_in_trls_logs(accuracy):
    """The extended library's faults: first where TRL logs their signature; elsewhere no false suspect."""
    rows = [r for r in accuracy.rows if r.row not in SEED_FAULTS and r.expected]
    if not rows:
        pytest.skip("the toy lab plants only the seed faults")
    assert {r.row for r in rows} >= set(NOT_IN_TRL_LOGS) | {"reference_without_adapter", "schedule_counts_batches",
                                                            "unnormalised_reward_scales"}
    for row in rows:
        if row.row in NOT_IN_TRL_LOGS:
            assert not [h for h in row.suspects if h != row.expected], (row.run, row.top)
        else:
            assert row.rank == 1, (row.run, row.top)


def test_clean_runs_rank_nothing_above_the_threshold(accuracy):
    clean = [r for r in accuracy.rows if r.expected is None]
    assert len(clean) >= 4  # toy_arith and musique_mini, two seeds each
    assert accuracy.clean_suspects() == [], [(r.run, r.top) for r in clean]
    assert all(evidence < SUSPECT_THRESHOLD for r in clean for _, evidence in r.top)
