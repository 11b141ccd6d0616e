"""Settings of a critic parity run (seed 000). No torch here: the spec loader and the CLI import it.

The three controls of the seed (`VALUE_HEAD_INIT`, `CRITIC_DROPOUT_PROB`, `CRITIC_DATA_SHUFFLE`) are
settings; when a setting is left unset (None) the environment variable of the same meaning is read, and
when that is unset too the seed's default applies. `resolve_controls` does this resolution once and the
result is recorded with the run, so a verdict never depends on an environment nobody wrote down.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

BackendName = Literal["value_head", "token_cls"]
BACKENDS: tuple[str, str] = ("value_head", "token_cls")

ENV_VALUE_HEAD_INIT = "VALUE_HEAD_INIT"
ENV_DROPOUT = "CRITIC_DROPOUT_PROB"
ENV_SHUFFLE = "CRITIC_DATA_SHUFFLE"

# Seed defaults: VALUE_HEAD_INIT=0.0 means random init, no dropout, shuffling on.
DEFAULT_VALUE_HEAD_INIT = 0.0
DEFAULT_DROPOUT = 0.0
DEFAULT_SHUFFLE = True

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class CriticSettings(BaseModel):
    """Everything a critic parity run needs besides the model directory and the main seed."""

    model_config = ConfigDict(extra="forbid")

    # --- the seed's controls -------------------------------------------------------------------
    value_head_init: float | None = Field(
        None,
        description="Constant for every head weight (bias 0) of both critics, so both heads start identical. "
        "0 means random init seeded by the training seed (each head with its own init scheme). "
        "Unset: env VALUE_HEAD_INIT, else 0 (random).",
    )
    dropout_prob: float | None = Field(
        None,
        ge=0.0,
        lt=1.0,
        description="Dropout probability in the critic heads (the value head's own dropout and, unless "
        "token_cls_dropout is set, the token-classification head's classifier dropout). "
        "Unset: env CRITIC_DROPOUT_PROB, else 0.0.",
    )
    token_cls_dropout: float | None = Field(
        None,
        ge=0.0,
        lt=1.0,
        description="Classifier dropout of the token-classification critic when it should differ from "
        "dropout_prob (e.g. 0.1, what transformers silently uses for Qwen2 when the config has no "
        "classifier_dropout). Unset: same as the resolved dropout_prob.",
    )
    data_shuffle: bool | None = Field(
        None,
        description="Shuffle the training data order each epoch. When on, each backend shuffles with its "
        "own generator (as separate production workers do), so the two critics see different orders. "
        "Unset: env CRITIC_DATA_SHUFFLE (0/1), else on.",
    )
    # --- seeds (seed hierarchy: both inherit the main seed when unset) ---------------------------
    data_seed: int | None = Field(
        None, description="Seed for prompts, sampled completions, random-token sequences and data order. "
        "Unset: the main seed."
    )
    training_seed: int | None = Field(
        None, description="Seed for random head init and dropout masks. Unset: the main seed."
    )
    # --- training --------------------------------------------------------------------------------
    steps: int = Field(50, ge=0, description="Optimiser steps per critic.")
    learning_rate: float = Field(1e-4, gt=0, description="AdamW learning rate (same for both critics).")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    adam_beta1: float = Field(0.9, ge=0, lt=1, description="AdamW beta1.")
    adam_beta2: float = Field(0.999, ge=0, lt=1, description="AdamW beta2.")
    adam_epsilon: float = Field(1e-8, gt=0, description="AdamW epsilon.")
    max_grad_norm: float | None = Field(
        1.0, description="Clip the global gradient norm to this value; None disables clipping."
    )
    train_backbone: bool = Field(
        True, description="Train the whole critic (backbone + head), as PPO critics do; False trains heads only."
    )
    batch_size: int = Field(8, ge=1, description="Sequences per optimiser step.")
    # --- data -----------------------------------------------------------------------------------
    task: str = Field("arith", description="Toy-lab task whose prompts are used (hypotrack.toy.lab).")
    dataset: str | None = Field(
        None,
        description='Import path "pkg.module:func" of a loader returning a datasets.Dataset with a prompt '
        "column (called with n=, seed= when it accepts them). Unset: the toy lab's task dataset.",
    )
    reward_funcs: list[str] | None = Field(
        None,
        description='Reward functions by import path "pkg.module:func", TRL signature '
        "f(completions, **columns) -> list[float]; summed. Unset: the task's default rewards.",
    )
    num_sequences: int = Field(64, ge=1, description="Sampled completions the critics train on.")
    num_eval_sequences: int = Field(
        32, ge=2, description="Held-out sampled completions (other prompts) on which parity is measured."
    )
    num_random_sequences: int = Field(32, ge=2, description="Random-token sequences for the parity probe.")
    random_seq_len: int = Field(24, ge=2, description="Length of each random-token sequence.")
    max_new_tokens: int = Field(8, ge=1, description="Completion length limit when sampling from the policy.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature for the completions.")
    # --- parity ---------------------------------------------------------------------------------
    backends: tuple[BackendName, BackendName] = Field(
        BACKENDS,
        description="The two critic implementations compared: value_head (Linear over the backbone's last "
        "hidden states, own dropout) and token_cls (AutoModelForTokenClassification, num_labels=1). "
        "The order sets the column order of the table.",
    )
    near_threshold: float = Field(
        0.1, gt=0, description="Two values count as nearly identical when |diff| < this (seed: 0.1)."
    )
    eval_every: int = Field(
        1, ge=1, description="Measure parity and log metrics every this many steps (plus step 0 and the last)."
    )
    values_in_train_mode: bool = Field(
        False,
        description="Compute the parity values with dropout active (a critic that never calls eval()). "
        "Default measures in eval mode, so dropout shows up through training and the initial losses.",
    )
    expected_pearson: float = Field(
        0.999,
        ge=-1,
        le=1,
        description="Pearson below this on random tokens (deterministic controls) counts as a parity break "
        "in the interpretation. The seed's production expectation is 0.95-0.99.",
    )

    @model_validator(mode="after")
    def _distinct_backends(self) -> "CriticSettings":
        if self.backends[0] == self.backends[1]:
            raise ValueError(
                f"backends must name two different implementations, got {list(self.backends)}; "
                f"use {list(BACKENDS)}"
            )
        return self


def _env_float(environ: Mapping[str, str], name: str) -> float | None:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not a number; e.g. {name}=0.01") from None


def _env_bool(environ: Mapping[str, str], name: str) -> bool | None:
    raw = environ.get(name)
    if raw is None:
        return None
    v = raw.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"environment variable {name}={raw!r} is not a boolean; use {name}=0 or {name}=1")


def resolve_controls(
    settings: CriticSettings, environ: Mapping[str, str] | None = None, seed: int | None = None
) -> dict:
    """Settings first, then the seed's environment variables, then the seed's defaults.

    Returns plain values plus, for each control, where it came from (`<name>_source`: setting / env /
    default), ready to be logged as run parameters.
    """
    env = os.environ if environ is None else environ
    out: dict = {}

    def pick(name: str, setting_value, env_name: str, env_value, default):
        if setting_value is not None:
            out[name], out[f"{name}_source"] = setting_value, "setting"
        elif env_value is not None:
            out[name], out[f"{name}_source"] = env_value, f"env:{env_name}"
        else:
            out[name], out[f"{name}_source"] = default, "default"

    pick("value_head_init", settings.value_head_init, ENV_VALUE_HEAD_INIT,
         _env_float(env, ENV_VALUE_HEAD_INIT), DEFAULT_VALUE_HEAD_INIT)
    pick("dropout_prob", settings.dropout_prob, ENV_DROPOUT, _env_float(env, ENV_DROPOUT), DEFAULT_DROPOUT)
    pick("data_shuffle", settings.data_shuffle, ENV_SHUFFLE, _env_bool(env, ENV_SHUFFLE), DEFAULT_SHUFFLE)
    out["value_head_init"] = float(out["value_head_init"])
    out["dropout_prob"] = float(out["dropout_prob"])
    if not 0.0 <= out["dropout_prob"] < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {out['dropout_prob']}")
    out["data_shuffle"] = bool(out["data_shuffle"])
    out["head_init"] = "random" if out["value_head_init"] == 0.0 else "constant"
    if settings.token_cls_dropout is not None:
        out["token_cls_dropout"], out["token_cls_dropout_source"] = float(settings.token_cls_dropout), "setting"
    else:
        out["token_cls_dropout"], out["token_cls_dropout_source"] = out["dropout_prob"], "dropout_prob"
    # Seed hierarchy: training_args.seed / data_seed inherit the main seed.
    out["seed"] = seed
    out["data_seed"] = settings.data_seed if settings.data_seed is not None else seed
    out["training_seed"] = settings.training_seed if settings.training_seed is not None else seed
    out["values_in_train_mode"] = settings.values_in_train_mode
    out["deterministic"] = (
        out["head_init"] == "constant"
        and out["dropout_prob"] == 0.0
        and out["token_cls_dropout"] == 0.0
        and not out["data_shuffle"]
    )
    return out
