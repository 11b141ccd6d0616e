"""The arm's model as the worker loads it: the settings' model_init_kwargs are honoured as TRL honours them for a
model it loads by name (the worker hands TRL a loaded model, for which TRL ignores them)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from hypotrack.errors import HypotrackError
from hypotrack.protocol import ArmSpec
from hypotrack.worker.model import build_model


def spec(model: Path, **grpo) -> ArmSpec:
    return ArmSpec(hypothesis_id="h27", arm="control", seed=0, trainer="grpo", experiment_name="letters",
                   experiment_dir=".", model=str(model), data={}, rewards=[], reward_weights=None, grpo=grpo,
                   lora={"enabled": False}, max_steps=1)


@pytest.fixture(scope="module")
def arith(toy_cache: Path) -> Path:
    from hypotrack.toy.lab import ensure_model

    return ensure_model("arith", cache_dir=toy_cache)


def dtypes(model) -> set[str]:
    return {str(p.dtype) for p in model.parameters()}


def test_without_a_dtype_the_worker_trains_in_float32_on_a_cpu(arith: Path) -> None:
    model, tokenizer = build_model(spec(arith))
    assert dtypes(model) == {"torch.float32"}
    assert tokenizer.pad_token is not None


@pytest.mark.parametrize("declared", [{"dtype": "bfloat16"}, {"torch_dtype": "bfloat16"}, '{"dtype": "bfloat16"}'])
def test_model_init_kwargs_dtype_is_the_dtype_the_trainer_computes_in(arith: Path, declared) -> None:
    model, _ = build_model(spec(arith, model_init_kwargs=declared))
    assert dtypes(model) == {"torch.bfloat16"}


def test_a_dtype_torch_does_not_have_names_the_setting(arith: Path) -> None:
    with pytest.raises(HypotrackError, match=r"settings\.model_init_kwargs\.dtype .*bfloat17.*not a torch dtype"):
        build_model(spec(arith, model_init_kwargs={"dtype": "bfloat17"}))


def test_trl_ignores_model_init_kwargs_for_a_model_it_is_handed() -> None:
    """Why the worker reads them itself: TRL applies them only to a model it loads by name."""
    from trl import GRPOTrainer

    assert "The `model_init_kwargs` will be ignored." in inspect.getsource(GRPOTrainer.__init__)
