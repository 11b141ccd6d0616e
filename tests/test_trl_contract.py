"""hypotrack subclasses TRL internals and mirrors GRPOConfig; these fail loudly when a TRL upgrade moves them."""

from __future__ import annotations

import inspect
import runpy
import sys
from io import StringIO
from pathlib import Path

import pytest
import trl

from hypotrack.spec.grpo_fields import GRPO_FIELDS, TRL_VERSION

TOOL = Path(__file__).parent / "tools" / "gen_grpo_fields.py"

# Methods HypotrackGRPOTrainer overrides or planted faults wrap, with the parameters hypotrack relies on.
SEAMS = {
    "_calculate_rewards": ["inputs", "prompts", "completions", "completion_ids_list"],
    "_generate_and_score_completions": ["inputs"],
    "_get_per_token_logps_and_entropies": ["model", "input_ids", "attention_mask", "logits_to_keep"],
    "_compute_loss": ["model", "inputs"],
    "training_step": ["model", "inputs", "num_items_in_batch"],
    "_generate": ["prompts"],
}


def test_field_table_matches_the_installed_trl() -> None:
    assert trl.__version__ == TRL_VERSION, "regenerate: python tests/tools/gen_grpo_fields.py > hypotrack/spec/grpo_fields.py"
    out, saved = StringIO(), sys.stdout
    sys.stdout = out
    try:
        runpy.run_path(str(TOOL), run_name="__main__")
    finally:
        sys.stdout = saved
    namespace: dict = {}
    exec(out.getvalue(), namespace)  # noqa: S102 - our own generated table
    assert namespace["GRPO_FIELDS"] == GRPO_FIELDS


@pytest.mark.parametrize("name, params", sorted(SEAMS.items()))
def test_trainer_seams_still_exist(name: str, params: list[str]) -> None:
    from trl import GRPOTrainer

    method = getattr(GRPOTrainer, name, None)
    assert method is not None, f"GRPOTrainer.{name} is gone: hypotrack/trainers/grpo.py must follow TRL"
    signature = list(inspect.signature(method).parameters)[1:]
    assert signature[:len(params)] == params, f"GRPOTrainer.{name}{signature} changed"


def test_generate_returns_what_the_faults_unpack() -> None:
    """faults.py reads (prompt_ids, completion_ids, tool_mask, completions, logprobs, ...) from _generate."""
    from trl import GRPOTrainer

    source = inspect.getsource(GRPOTrainer._generate)
    assert "return prompt_ids, completion_ids, tool_mask, completions, logprobs" in source


def test_the_tap_wraps_only_seams_this_file_checks() -> None:
    """hypotrack.watch wraps these on a user's trainer instance; the worker's subclass overrides the same ones."""
    from hypotrack.hooks._trainer_tap import WRAPPED_METHODS
    from hypotrack.worker.trainer import HypotrackGRPOTrainer

    assert set(WRAPPED_METHODS) <= set(SEAMS)
    assert all(name in vars(HypotrackGRPOTrainer) for name in WRAPPED_METHODS)


def test_the_reference_adapter_switch_the_hooks_use_exists() -> None:
    """The kl hook and the ref_kl gate score TRL's "ref" adapter through TRL's own context manager."""
    from trl.trainer.utils import use_adapter

    assert "adapter_name" in inspect.signature(use_adapter).parameters


def test_the_vllm_engine_seam_the_worker_wraps_exists() -> None:
    """generator_dtype reaches vLLM by wrapping the LLM class TRL builds its colocated engine from, and the lora_sync
    hook reads the served model where TRL's colocated sync writes it."""
    from trl.generation import vllm_generation

    assert "LLM(" in inspect.getsource(vllm_generation.VLLMGeneration._init_vllm)
    assert "driver_worker.model_runner.model.load_weights" in inspect.getsource(vllm_generation.VLLMGeneration.sync_weights)
