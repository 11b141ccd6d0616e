"""The vLLM engine TRL builds inside an arm's process (use_vllm, colocate mode), readied before it is built.

hypotrack's worker and a command experiment's bootstrap call these at the same points: `own_rendezvous_port`
before anything reads the torch.distributed environment, `ready_engine` once the GRPOConfig exists and before
the trainer builds the engine.
"""

from __future__ import annotations

import os
from typing import Any

from hypotrack.ports import unclaimed_port


def own_rendezvous_port() -> None:
    """A free port for the torch.distributed group vLLM's colocated engine sets up in this process.

    accelerate fills in MASTER_PORT=29500 for a single process, so two arms training side by side would both
    bind it (EADDRINUSE); a process launched as one rank of several keeps the port its launcher gave it."""
    if os.environ.get("WORLD_SIZE", "1") != "1" or os.environ.get("MASTER_PORT"):
        return
    os.environ["MASTER_PORT"] = str(unclaimed_port())
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")


def ready_engine(model: Any, generator_dtype: str) -> None:
    """vLLM's CPU changes where it runs on a CPU (hypotrack/vllm_cpu.py), and the dtype it serves ``model`` in."""
    from hypotrack.vllm_cpu import apply

    apply()
    if hasattr(model, "parameters"):  # a model the script loaded itself (not a name vLLM loads)
        serve_in_dtype(generator_dtype, model)


def serve_in_dtype(dtype: str, model: Any) -> None:
    """Have TRL's colocated vLLM engine serve the model in ``dtype`` ('trainer': the model's own; 'auto': leave
    vLLM's choice). TRL builds the engine without a dtype, and vLLM then serves a float32 checkpoint in bfloat16."""
    if dtype == "auto":
        return
    from trl.generation import vllm_generation

    name = str(next(model.parameters()).dtype).removeprefix("torch.") if dtype == "trainer" else dtype
    build = getattr(vllm_generation.LLM, "__wrapped__", vllm_generation.LLM)

    def engine(*args: Any, **kwargs: Any) -> Any:
        kwargs["dtype"] = name
        return build(*args, **kwargs)

    engine.__wrapped__ = build  # a second call wraps vLLM's own class, not this wrapper
    vllm_generation.LLM = engine
