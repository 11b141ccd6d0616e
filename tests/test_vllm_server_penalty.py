"""h14 under a vLLM server: a sampling penalty the served model's own generation config carries, which the server
applies to requests that leave it unset. In a file of its own, beside tests/test_vllm_server.py's, so the two run at
the same time (the slowest server test, its long completions make it as long as the rest of that file's tests).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_support import cli, env_for
from vllm_support import LONG_SERVER_DECIDED, arm_readings, assert_decided, control_series, selftest, servers_of


@pytest.mark.vllm
def test_a_penalty_the_served_models_generation_config_carries_validates_h14_and_sending_it_repairs_it(
        tmp_path: Path, wide_cache: Path) -> None:
    """NeMo-RL#3497 under TRL: the served model's generation_config.json carries a presence penalty, which vLLM's
    server applies to every request that leaves it unset, and TRL's requests do. On 96-letter completions the penalty
    moves vLLM's logprobs 0.28 nats a token off the trainer's; the hook names it and reproduces vLLM's logprobs with
    it; h14's treatment sends the penalty as 0."""
    rows = ("clean", "generation_config_penalties")
    assert_decided(selftest(tmp_path, wide_cache, "toy_letters_vllm_server", rows, "--max-steps", "4"), rows,
                   LONG_SERVER_DECIDED)
    series = control_series(tmp_path / "st")
    parity = "diag/sampling_parity/"
    assert set(series["generation_config_penalties"][parity + "generator_hidden_settings"]) == {1.0}
    assert set(series["clean"][parity + "generator_hidden_settings"]) == {0.0}
    assert min(series["generation_config_penalties"][parity + "generator_gap_mean"]) > 0.05
    assert max(series["clean"][parity + "generator_gap_mean"]) < 1e-4
    assert series["generation_config_penalties"][parity + "generator_closing_transform"] == [2.0]  # a penalty
    assert max(series["generation_config_penalties"][parity + "generator_transform_residual_mean"]) < 1e-3
    result = cli(["run", "h14", "--experiment", "toy_letters_vllm_server", "--plant", "generation_config_penalties",
                  "--seeds", "1", "--max-steps", "3"], env_for(tmp_path, wide_cache), tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    readings = arm_readings(tmp_path / "outputs", "h14", parity + "generator_gap_mean")
    assert max(readings["treatment"]) < 1e-4 < min(readings["control"]), readings
    assert servers_of(tmp_path) == []
