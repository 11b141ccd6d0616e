"""The vLLM generator an arm's trainer samples from (use_vllm), readied before the trainer is built.

In colocate mode TRL builds vLLM's engine inside the arm's process; in server mode it talks to a vLLM server,
which hypotrack starts for the run when the settings name none (hypotrack/vllm_server.py). hypotrack's worker and
a command experiment's bootstrap call these at the same points: `own_rendezvous_port` before anything reads the
torch.distributed environment, `ready_engine` once the GRPOConfig exists and before the trainer builds the
engine or connects to the server.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypotrack.errors import HypotrackError
from hypotrack.ports import unclaimed_port

if TYPE_CHECKING:
    from hypotrack.vllm_server import GeneratorServer


def own_rendezvous_port() -> None:
    """A free port for the torch.distributed group vLLM's colocated engine sets up in this process.

    accelerate fills in MASTER_PORT=29500 for a single process, so two arms training side by side would both
    bind it (EADDRINUSE); a process launched as one rank of several keeps the port its launcher gave it."""
    if os.environ.get("WORLD_SIZE", "1") != "1" or os.environ.get("MASTER_PORT"):
        return
    os.environ["MASTER_PORT"] = str(unclaimed_port())
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")


def ready_engine(model: Any, generator_dtype: str, config: Any = None) -> GeneratorServer | None:
    """vLLM's CPU changes where it runs on a CPU (hypotrack/vllm_cpu.py), and the dtype it serves ``model`` in; in
    server mode, the server the run needs when its settings name none: started, ``config`` pointed at it, and
    returned (the caller stops it when the run ends)."""
    from hypotrack import vllm_cpu

    if getattr(config, "vllm_mode", "colocate") == "server":
        vllm_cpu.sync_server_through_files()
        return start_server(model, generator_dtype, config)
    vllm_cpu.apply()
    if hasattr(model, "parameters"):  # a model the script loaded itself (not a name vLLM loads)
        serve_in_dtype(generator_dtype, model)
    return None


def start_server(model: Any, generator_dtype: str, config: Any) -> GeneratorServer | None:
    """A vLLM server for ``model`` where ``config`` (a GRPOConfig in server mode) names none: no base URL, TRL's
    default host and port, and nothing answering there. A server the settings name is the user's: TRL waits for it
    as they configured, and hypotrack starts nothing."""
    import torch

    from hypotrack.vllm_cpu import CPU_MEMORY_UTILIZATION
    from hypotrack.vllm_server import INSTALL_VLLM, GeneratorServer, answers

    defaults = type(config).__dataclass_fields__
    named = config.vllm_server_base_url is not None or any(
        getattr(config, key) != defaults[key].default for key in ("vllm_server_host", "vllm_server_port"))
    if named or answers(f"http://127.0.0.1:{config.vllm_server_port}"):
        return None
    if importlib.util.find_spec("vllm") is None:
        raise HypotrackError("vllm_mode is server and the settings name no server, so hypotrack would start one, but "
                             f"vLLM is not installed in this environment: {INSTALL_VLLM}, or name a running server "
                             "with vllm_server_base_url")
    dtype = generator_dtype
    if dtype == "trainer":
        dtype = (str(next(model.parameters()).dtype).removeprefix("torch.") if hasattr(model, "parameters")
                 else "auto")
    on_gpu = torch.cuda.is_available()
    memory = config.vllm_gpu_memory_utilization
    server = GeneratorServer(model=str(getattr(model, "name_or_path", model)), dtype=dtype,
                             max_model_len=config.vllm_max_model_length,
                             memory_utilization=memory if on_gpu else min(memory, CPU_MEMORY_UTILIZATION),
                             log_path=Path(config.output_dir) / "vllm-server.log", on_gpu=on_gpu)
    config.vllm_server_base_url = server.start()
    return server


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
