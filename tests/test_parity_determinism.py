"""Determinism: two identical CPU runs are bitwise equal; a perturbed run is caught at its first step."""
from __future__ import annotations

import subprocess
import sys

import pydantic
import pytest

from hypotrack.parity.manifest import PARITY_METRICS
from hypotrack.parity.settings import ParitySettings


def test_settings_and_manifest_do_not_import_torch():
    code = ("import sys, hypotrack.parity, hypotrack.parity.settings, hypotrack.parity.manifest, "
            "hypotrack.parity.cli; assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_settings_validation():
    s = ParitySettings(check="loss", betas=[0, 0.04])
    assert s.tolerance == 1e-6 and "dapo" in s.loss_types
    with pytest.raises(pydantic.ValidationError):
        ParitySettings(check="loss", unknown_option=1)
    with pytest.raises(pydantic.ValidationError):
        ParitySettings(check="loss", loss_types=["vespo"])
    assert all(m.startswith("parity/") and "<" not in m for m in PARITY_METRICS)
    assert "parity/logprobs/train_mode_dropout/max_abs_diff" in PARITY_METRICS


def test_compare_runs_reports_first_difference():
    import torch

    from hypotrack.parity.determinism import compare_runs

    sd = {"a": torch.ones(2), "b": torch.zeros(3)}
    sd2 = {"a": torch.ones(2), "b": torch.tensor([0.0, 1e-7, 0.0])}
    m = [{"loss": 0.5, "reward": 0.1}, {"loss": 0.25, "reward": 0.2}]
    m2 = [{"loss": 0.5, "reward": 0.1}, {"loss": 0.25, "reward": 0.2 + 1e-12}]
    r = compare_runs((m, sd), (m, dict(sd)))
    assert r.identical
    r = compare_runs((m, sd), (m2, sd2))
    assert not r.identical and r.first_diff_step == 2 and r.first_diff_metric == "reward"
    assert r.first_diff_param == "b" and r.n_params_differ == 1


@pytest.mark.slow
def test_two_runs_identical_and_perturbed_run_located(tmp_path, monkeypatch):
    import tempfile

    import torch

    from hypotrack.parity.common import build_tiny_model
    from hypotrack.parity.determinism import default_train_fn, run_determinism

    torch.set_num_threads(1)
    path = build_tiny_model(tmp_path / "m", seed=2)
    scratch = tmp_path / "temp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = torch.are_deterministic_algorithms_enabled()
    res = run_determinism(default_train_fn(path, steps=3), seed=0)
    assert res.identical, res
    assert res.steps == 3 and res.determinism_params["determinism/use_deterministic_algorithms"]
    assert torch.are_deterministic_algorithms_enabled() == before  # global flag restored
    res2 = run_determinism(default_train_fn(path, steps=3), seed=0,
                           train_fn_b=default_train_fn(path, steps=3, perturb_at_step=2))
    assert not res2.identical and not res2.weights_identical
    assert res2.first_diff_step == 3  # the perturbation after step 2 shows in step 3's metrics
    assert res2.metrics()["parity/determinism/identical"] == 0.0
    # The Trainer's output folders went with their runs (importing wandb, where installed, leaves its own).
    assert not list(scratch.glob("hypotrack-det-*"))


def test_run_probe_writes_artifacts(tmp_path):
    from hypotrack.parity.common import build_tiny_model
    from hypotrack.parity.probe import run_probe

    path = build_tiny_model(tmp_path / "m", seed=3)
    logged = []
    s = ParitySettings(check="logprobs", contexts=["grad_enabled", "train_mode_dropout"], max_completion_length=6)
    m = run_probe(s, path, 0, lambda metrics, step: logged.append((step, metrics)), tmp_path / "art")
    assert logged and logged[0][0] == 0 and set(m) <= set(PARITY_METRICS)
    assert (tmp_path / "art" / "parity_logprobs.md").exists() and (tmp_path / "art" / "parity_logprobs.json").exists()
