"""Critic settings, env fallback and metric catalog: no torch, fast."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from pydantic import ValidationError

from hypotrack.critic.manifest import CRITIC_METRICS, FINAL_METRICS, STEP_METRICS
from hypotrack.critic.settings import CriticSettings, resolve_controls


def test_defaults_follow_the_seed_when_nothing_is_set():
    c = resolve_controls(CriticSettings(), environ={}, seed=7)
    assert c["value_head_init"] == 0.0 and c["head_init"] == "random"
    assert c["dropout_prob"] == 0.0 and c["token_cls_dropout"] == 0.0
    assert c["data_shuffle"] is True
    assert c["value_head_init_source"] == c["dropout_prob_source"] == c["data_shuffle_source"] == "default"
    # seed hierarchy: data and training seeds inherit the main seed
    assert c["data_seed"] == 7 and c["training_seed"] == 7
    assert c["deterministic"] is False


def test_env_vars_are_the_fallback():
    env = {"VALUE_HEAD_INIT": "0.01", "CRITIC_DROPOUT_PROB": "0.0", "CRITIC_DATA_SHUFFLE": "0"}
    c = resolve_controls(CriticSettings(), environ=env, seed=42)
    assert c["value_head_init"] == 0.01 and c["value_head_init_source"] == "env:VALUE_HEAD_INIT"
    assert c["dropout_prob"] == 0.0 and c["dropout_prob_source"] == "env:CRITIC_DROPOUT_PROB"
    assert c["data_shuffle"] is False and c["data_shuffle_source"] == "env:CRITIC_DATA_SHUFFLE"
    assert c["deterministic"] is True


def test_settings_win_over_env_and_seeds_can_be_set():
    env = {"VALUE_HEAD_INIT": "0.01", "CRITIC_DROPOUT_PROB": "0.2", "CRITIC_DATA_SHUFFLE": "1"}
    s = CriticSettings(value_head_init=0.5, dropout_prob=0.0, data_shuffle=False, data_seed=3, training_seed=4)
    c = resolve_controls(s, environ=env, seed=42)
    assert (c["value_head_init"], c["dropout_prob"], c["data_shuffle"]) == (0.5, 0.0, False)
    assert {c["value_head_init_source"], c["dropout_prob_source"], c["data_shuffle_source"]} == {"setting"}
    assert (c["data_seed"], c["training_seed"]) == (3, 4)
    c = resolve_controls(CriticSettings(token_cls_dropout=0.1), environ={"CRITIC_DROPOUT_PROB": "0"}, seed=0)
    assert c["token_cls_dropout"] == 0.1 and c["deterministic"] is False


@pytest.mark.parametrize("name,value", [("VALUE_HEAD_INIT", "abc"), ("CRITIC_DATA_SHUFFLE", "maybe"),
                                         ("CRITIC_DROPOUT_PROB", "1.5")])
def test_bad_env_values_say_what_to_write(name, value):
    with pytest.raises(ValueError, match=name if name != "CRITIC_DROPOUT_PROB" else "dropout"):
        resolve_controls(CriticSettings(), environ={name: value}, seed=0)


def test_settings_reject_unknown_keys_and_same_backend_twice():
    with pytest.raises(ValidationError):
        CriticSettings(dropout=0.1)
    with pytest.raises(ValidationError):
        CriticSettings(backends=("value_head", "value_head"))
    for name, f in CriticSettings.model_fields.items():
        assert f.description, f"{name} has no description"


def test_catalog_names_are_explicit_and_unique():
    assert len(set(CRITIC_METRICS)) == len(CRITIC_METRICS)
    assert set(STEP_METRICS) | set(FINAL_METRICS) == set(CRITIC_METRICS)
    for k in CRITIC_METRICS:
        assert re.fullmatch(r"critic(/[a-z0-9_]+)+", k), k
    for k in ("critic/value_head/loss", "critic/token_cls/loss", "critic/parity/real/pearson",
              "critic/parity/random/spearman", "critic/parity/before/random/near_share",
              "critic/parity/after/real/token_cls/max", "critic/parity/initial_loss_abs_diff"):
        assert k in CRITIC_METRICS


def test_light_modules_do_not_import_torch():
    code = ("import sys, hypotrack.critic, hypotrack.critic.settings, hypotrack.critic.manifest; "
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
