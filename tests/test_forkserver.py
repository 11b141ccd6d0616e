"""Workers forked from the runner's forkserver train exactly as spawned ones, and the switch turns it off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runner_support import TINY, cli, env_for, registry_rows


def _first_steps(outputs: Path) -> dict[str, dict[int, float]]:
    out = {}
    for events in outputs.glob("*/*/events.jsonl"):
        rows = [json.loads(line) for line in events.read_text().splitlines()]
        out[events.parent.name] = {r["step"]: r["metrics"]["reward"] for r in rows
                                   if r["event"] == "metrics" and "reward" in r["metrics"]}
    return out


@pytest.mark.slow
def test_forked_and_spawned_workers_train_the_same_run(tmp_path: Path, toy_cache: Path) -> None:
    rewards = {}
    for mode in ("0", "1"):
        run = tmp_path / f"forkserver-{mode}"
        run.mkdir()
        env = {**env_for(run, toy_cache), "HYPOTRACK_FORKSERVER": mode}
        result = cli(["run", "h01", *TINY, "--arms", "control", "--output-dir", str(run / "outputs")], env, run)
        assert result.returncode == 0, result.stdout + result.stderr
        assert registry_rows(run / "registry.db", "select state from test_run") == [("finished",)]
        rewards[mode] = _first_steps(run / "outputs")
        log = next((run / "outputs").glob("*/control-seed0/worker.log")).read_text()
        assert "Traceback" not in log
    assert rewards["0"] == rewards["1"] and rewards["0"]["control-seed0"], rewards  # same seed, same run


def test_the_switch_and_the_cuda_rule(monkeypatch) -> None:
    from hypotrack.run.launching import forkserver

    monkeypatch.setenv(forkserver.FORKSERVER_ENV, "0")
    assert not forkserver.enabled()
    monkeypatch.setenv(forkserver.FORKSERVER_ENV, "1")
    assert forkserver.enabled()  # CPU only here: torch never initialised CUDA
