"""What the vLLM tests share (tests/test_vllm.py, colocate mode; tests/test_vllm_server*.py, server mode): a selftest
on h06, h14 and h27, what each planted row decides, and the readings an arm logged. The toy model vLLM serves is the
fixture `wide_cache` (conftest.py)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from runner_support import cli, env_for


def selftest(tmp_path: Path, cache: Path, experiment: str, rows: tuple[str, ...], *steps: str) -> dict:
    env = env_for(tmp_path, cache)
    result = cli(["selftest", "--json", "--experiment", experiment, "--faults", ",".join(rows), "--hypotheses",
                  "h06,h14,h27", "--output-dir", str(tmp_path / "st"), *steps], env, tmp_path, timeout=900)
    assert result.stdout.strip(), result.stderr[-3000:]
    return json.loads(result.stdout)


# h14 on a stale output head: the head is one tensor of the ~40 trained, so the gap it leaves between vLLM's logprobs
# and the trainer's is about h14's line of 1e-3 a token after 4 steps (0.0011 and under it on two runs; a server's
# sampling is not reproducible, so neither is the gap): either answer clears h14, which names no transform for it
NOT_VALIDATED = ("inconclusive", "invalidated")

# what each row decides on h06, h14 and h27, in either mode: each fault its own hypothesis, the clean run none; h27
# (TRL's importance weights summed over long completions) is ruled out on every row of the arith toy: on 3-6-token
# completions the weights that leave [0.8, 1.25] are the ones a stale generator's or a sampling transform's own gap
# per token moves (its fault needs the letters toy's long completions, LONG_DECIDED)
DECIDED = {"clean/h06": "invalidated", "clean/h14": "invalidated", "clean/h27": "invalidated",
           "generator_sync_skipped/h06": "validated", "generator_sync_skipped/h14": "inconclusive",
           "generator_sync_skipped/h27": "invalidated",
           "generator_output_head_stale/h06": "validated", "generator_output_head_stale/h14": NOT_VALIDATED,
           "generator_output_head_stale/h27": "invalidated",
           "generator_precision_lowered/h06": "invalidated", "generator_precision_lowered/h14": "validated",
           "generator_precision_lowered/h27": "invalidated",
           "truncated_sampling_support/h06": "invalidated", "truncated_sampling_support/h14": "validated",
           "truncated_sampling_support/h27": "invalidated"}


# the same on toy_letters_vllm (long, uncertain completions; trainer and vLLM both in bfloat16, TRL weighing tokens):
# TRL's default sequence-level weights planted make h27's case, and as declared h27 does not apply; h14 reads its
# gap of about 0.015 nats a token, the two bfloat16 computations', but neither a dtype nor a sampling transform
# that would explain it
LONG_DECIDED = {"clean/h06": "invalidated", "clean/h14": "inconclusive", "clean/h27": "not_applicable",
                "sequence_importance_correction/h06": "invalidated",
                "sequence_importance_correction/h14": "inconclusive",
                "sequence_importance_correction/h27": "validated"}


# toy_letters_vllm_server (the long completions in the trainer's float32, under a server): a presence penalty from the
# served model's generation config makes h14's case, 0.28 nats a token; h27 cannot tell a gap that large from h14's
LONG_SERVER_DECIDED = {"clean/h06": "invalidated", "clean/h14": "invalidated", "clean/h27": "invalidated",
                       "generation_config_penalties/h06": "invalidated", "generation_config_penalties/h14": "validated",
                       "generation_config_penalties/h27": "inconclusive"}


def assert_decided(report: dict, rows: tuple[str, ...], decided: dict[str, str | tuple[str, ...]] = DECIDED) -> None:
    assert report["failures"] == {}, report["failures"]
    statuses = {cell: value["status"] for cell, value in report["cells"].items()}
    expected = {cell: status for cell, status in decided.items() if cell.split("/")[0] in rows}
    assert statuses.keys() == expected.keys(), statuses
    assert all(statuses[cell] in ((status,) if isinstance(status, str) else status)
               for cell, status in expected.items()), statuses


def arm_readings(outputs: Path, hypothesis: str, metric: str) -> dict[str, list[float]]:
    """Each arm of a test of ``hypothesis`` (seed 0) -> the values it logged for ``metric``, from its event stream."""
    readings = {}
    for arm in ("control", "treatment"):
        events = next(outputs.glob(f"{hypothesis}-*/{arm}-seed0/events.jsonl"))
        readings[arm] = [e["metrics"][metric] for e in map(json.loads, events.read_text().splitlines())
                         if e.get("event") == "metrics" and metric in e["metrics"]]
    return readings


def stale_shares(outputs: Path) -> dict[str, list[float]]:
    """Each arm of an h06 test (seed 0) -> its stale-weight readings."""
    return arm_readings(outputs, "h06", "diag/lora_sync/gen_stale_weight_share")


def assert_treatment_repairs(tmp_path: Path, cache: Path, experiment: str, fault: str) -> None:
    """`hypotrack run h06` with ``fault`` planted: the control arm serves stale weights, the treatment arm none."""
    result = cli(["run", "h06", "--experiment", experiment, "--plant", fault, "--seeds", "1", "--max-steps", "4"],
                 env_for(tmp_path, cache), tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    readings = stale_shares(tmp_path / "outputs")
    assert readings["treatment"] == [0.0] and readings["control"][0] > 0.0, readings


def control_series(root: Path) -> dict[str, dict[str, list[float]]]:
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


def servers_of(tmp_path: Path) -> list[int]:
    """The vLLM servers still alive that a test's runs started: each server inherits its run's environment, whose
    registry (`env_for`) lies in the test's own folder. Scoped so, a server test can run beside another one."""
    found = subprocess.run(["pgrep", "-f", "vllm.entrypoints.openai.api_server"], capture_output=True, text=True)
    mark = f"HYPOTRACK_DB={tmp_path / 'registry.db'}".encode()
    alive = []
    for pid in map(int, found.stdout.split()):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:  # gone since pgrep saw it, or not ours to read
            continue
        if mark in environ:
            alive.append(pid)
    return alive


def sync_folders_left(wait_s: float = 15.0) -> list[Path]:
    """The weight-sync folders in /dev/shm that outlive ``wait_s``: a push's folder is removed once its server has
    reloaded it, seconds later, so a folder another test is pushing through now is gone by then, and one still there
    was left behind."""
    present = set(Path("/dev/shm").glob("hypotrack-vllm-sync-*"))
    time.sleep(wait_s)
    return sorted(folder for folder in present if folder.exists())
