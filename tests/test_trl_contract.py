"""hypotrack subclasses TRL internals and mirrors GRPOConfig; these fail loudly when a TRL upgrade moves them."""

from __future__ import annotations

import inspect
import runpy
import sys
from io import StringIO
from pathlib import Path

import pytest
import trl

from hypotrack.definitions.grpo_fields import GRPO_FIELDS, TRL_VERSION
from hypotrack.session.trl_seams import GENERATE_RETURNS, SEAM_PARAMETERS, Seam

TOOL = Path(__file__).parent / "tools" / "gen_grpo_fields.py"


def test_field_table_matches_the_installed_trl() -> None:
    assert trl.__version__ == TRL_VERSION, "regenerate: python tests/tools/gen_grpo_fields.py > hypotrack/definitions/grpo_fields.py"
    out, saved = StringIO(), sys.stdout
    sys.stdout = out
    try:
        runpy.run_path(str(TOOL), run_name="__main__")
    finally:
        sys.stdout = saved
    namespace: dict = {}
    exec(out.getvalue(), namespace)  # noqa: S102 - our own generated table
    assert namespace["GRPO_FIELDS"] == GRPO_FIELDS


@pytest.mark.parametrize("seam", list(Seam), ids=lambda seam: seam.name)
def test_trainer_seams_still_exist(seam: Seam) -> None:
    from trl import GRPOTrainer

    method = getattr(GRPOTrainer, seam.value, None)
    assert method is not None, f"GRPOTrainer.{seam.value} is gone: hypotrack/session/trl_seams.py must follow TRL"
    signature = list(inspect.signature(method).parameters)[1:]
    params = list(SEAM_PARAMETERS[seam])
    assert signature[:len(params)] == params, f"GRPOTrainer.{seam.value}{signature} changed"


def test_generate_returns_what_the_faults_unpack() -> None:
    """A planted fault rewrites (prompt_ids, completion_ids, tool_mask, completions, logprobs) of the generate seam."""
    from trl import GRPOTrainer

    assert GENERATE_RETURNS in inspect.getsource(getattr(GRPOTrainer, Seam.GENERATE.value))


def test_the_private_members_the_seams_module_reads_exist() -> None:
    """TRL's metric buffer and the step vLLM last loaded, on a built trainer (session/trl_seams.py)."""
    from trl import GRPOTrainer

    source = inspect.getsource(GRPOTrainer)
    assert "self._metrics = {" in source and "self._last_loaded_step" in source


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


def test_trls_sequence_level_importance_weight_still_sums_the_log_ratios() -> None:
    """h27 reads TRL's importance weights from its rollout (output["importance_sampling_ratio"]) and says that its
    sequence modes sum the per-token log-ratios (trl#5814). Where a TRL release takes their mean, h27's rationale and
    the importance_weights hook's docstring must say from which version."""
    from trl import GRPOTrainer

    source = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    assert 'output["importance_sampling_ratio"] = vllm_importance_sampling_ratio' in source
    assert "per_token_logps_diff.sum(dim=-1, keepdim=True)" in source


def test_which_sampling_settings_trl_leaves_to_a_vllm_servers_defaults() -> None:
    """vLLM's server fills a request's unset sampling settings from the served model's generation_config.json
    (NeMo-RL#3497: hidden settings the trainer never scores with). TRL's requests set temperature, top_p, top_k,
    min_p, repetition_penalty and max_tokens in both modes; in server mode they leave presence_penalty and
    frequency_penalty unset, which vLLM 0.32's CompletionRequest.to_sampling_params fills from the model's
    generation config (a colocated engine gets vLLM's own defaults for both: SamplingParams, not the model's). Where TRL starts sending
    them, that way in closes; where it stops sending one of the others, another opens."""
    from trl.generation import vllm_generation

    generate = inspect.getsource(vllm_generation.VLLMGeneration.generate)
    for sent in ("repetition_penalty", "temperature", "top_p", "top_k", "min_p", "max_tokens"):
        assert generate.count(f'"{sent}":') >= 2, sent  # the server request's and the colocated engine's
    for unsent in ("presence_penalty", "frequency_penalty"):
        assert unsent not in generate, unsent
