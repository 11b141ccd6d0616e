"""Runs whose completions a vLLM server generates (TRL's server mode), started and stopped by hypotrack for each arm
whose settings name no server: the weights pushed to it through a file it reloads (on a CPU), what it serves read
through hypotrack's worker extension, in hypotrack's worker and in a user's own script, and Ctrl-C stopping it.
Each test checks that no server its runs started is left behind (tests/test_vllm_server_penalty.py has h14's).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_support import cli, env_for, start_cli
from vllm_support import (
    assert_decided,
    assert_treatment_repairs,
    control_series,
    selftest,
    servers_of,
    stale_shares,
    sync_folders_left,
)


@pytest.mark.vllm
def test_under_a_vllm_server_a_stale_generator_and_a_stale_output_head_validate_h06(
        tmp_path: Path, wide_cache: Path) -> None:
    """Server mode with full fine-tuning: hypotrack starts a vLLM server per arm, pushes the weights to it through
    a file it reloads, and reads the weights it serves through its worker extension."""
    rows = ("clean", "generator_sync_skipped", "generator_output_head_stale")  # h14's rows: tests/test_vllm.py
    assert_decided(selftest(tmp_path, wide_cache, "toy_arith_vllm_server", rows, "--max-steps", "4"), rows)
    series = control_series(tmp_path / "st")
    share = "diag/lora_sync/gen_stale_weight_share"
    assert max(series["generator_sync_skipped"][share]) == 1.0
    # one tensor of the ~40 training moved: the head, served as its starting copy
    assert 0.0 < max(series["generator_output_head_stale"][share]) < 0.1
    assert max(series["clean"][share]) == 0.0
    gap = "diag/sampling_parity/generator_gap_mean"
    assert max(series["generator_output_head_stale"][gap]) > 10 * max(series["clean"][gap])
    assert max(series["clean"][gap]) < 1e-4
    # the server serves in the dtype the experiment names (generator_dtype: trainer), where vLLM would choose bfloat16
    assert max(series["clean"]["diag/sampling_parity/generator_dtype_differs"]) == 0.0
    # every server stopped with its arm
    assert servers_of(tmp_path) == []


def _training(outputs: Path) -> bool:
    return any('"step": 1,' in events.read_text() for events in outputs.glob("h06-*/*/events.jsonl"))


@pytest.mark.vllm
def test_ctrl_c_stops_the_vllm_server_hypotrack_started(tmp_path: Path, wide_cache: Path) -> None:
    env = env_for(tmp_path, wide_cache)
    runner = start_cli(["run", "h06", "--experiment", "toy_arith_vllm_server", "--seeds", "1", "--max-steps", "50"],
                       env, tmp_path)
    deadline = time.monotonic() + 300
    while not _training(tmp_path / "outputs"):  # each arm's server up, and an arm past its first step
        assert runner.poll() is None and time.monotonic() < deadline, runner.communicate()[0][-3000:]
        time.sleep(1)
    assert servers_of(tmp_path)
    runner.send_signal(signal.SIGINT)
    output = runner.communicate(timeout=120)[0]
    assert runner.returncode == 130, output[-3000:]
    assert "Traceback" not in output
    deadline = time.monotonic() + 30
    while servers_of(tmp_path) and time.monotonic() < deadline:
        time.sleep(1)
    assert servers_of(tmp_path) == []
    assert sync_folders_left() == []  # each sync's file removed once reloaded


@pytest.mark.vllm
def test_a_users_script_in_server_mode_gets_a_server_and_its_served_weights_read(tmp_path: Path,
                                                                                 wide_cache: Path) -> None:
    """A command experiment (tests/user_script/train_sums.py) whose GRPOConfig says vllm_mode="server" and names no
    server: the bootstrap, the same session as the worker's, starts one per arm and the hooks read what it serves
    (current in both arms: nothing is planted, since a script receives a fault only through a flag of its own)."""
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
    assert stale_shares(tmp_path / "outputs") == {"control": [0.0], "treatment": [0.0]}
    assert len(list((tmp_path / "outputs").glob("h06-*/*-seed0/**/vllm-server.log"))) == 2
    assert servers_of(tmp_path) == []


@pytest.mark.vllm
def test_the_treatment_ties_the_served_output_head_again(tmp_path: Path, wide_cache: Path) -> None:
    assert_treatment_repairs(tmp_path, wide_cache, "toy_arith_vllm_server", "generator_output_head_stale")
