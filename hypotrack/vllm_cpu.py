"""vLLM on a machine without a GPU: the changes hypotrack makes so TRL can train with vLLM generating on a CPU.

Applied only where vLLM runs on the CPU (`applies()`), never on a GPU, in the process that builds vLLM
(hypotrack's worker, and the user's process under `watch` or a command experiment), before the engine is
built. Each change says what breaks without it:

- **Live weights.** vLLM's CPU build packs every linear layer's weight for oneDNN when the model is loaded
  (`dispatch_cpu_unquantized_gemm`) and empties `layer.weight`. TRL's colocated weight sync then fails on
  its first call (`'Parameter' object has no attribute 'weight_loader'`), and a reload that does write the
  weights leaves the packed copy, which is what generation reads, stale. The replacement keeps each layer's
  own weight and multiplies with `torch.nn.functional.linear`, so what TRL writes is what vLLM samples with.
- **An engine in this process.** `VLLM_ENABLE_V1_MULTIPROCESSING=0` keeps vLLM's engine core in the
  training process (it starts in 3-4 s instead of 25-30 s for a separate core process).
- **A bounded KV cache.** On a CPU the KV cache is ordinary memory; `VLLM_CPU_KVCACHE_SPACE` (GiB) caps it
  at 1 unless set, where vLLM's default would reserve a large share of the machine's RAM.
- **Weight sync to a server through files** (`sync_server_through_files`, server mode). TRL streams the
  trainer's weights to a vLLM server over NCCL, which needs CUDA: its client refuses a CPU device
  (`init_communicator`). Instead each sync writes the weights TRL would stream to one safetensors file and asks
  the server to reload them (`/collective_rpc` `reload_weights`, a development endpoint, served with
  `VLLM_SERVER_DEV_MODE=1`). Trainer and server must share a file system: hypotrack starts the server on
  this machine (hypotrack/vllm_server.py).

TRL's `vllm_gpu_memory_utilization` (0.9 by default) is refused on a CPU, which vLLM reads as a share of RAM;
the worker lowers it to `CPU_MEMORY_UTILIZATION` unless the experiment sets it (worker/grpo_arm.py).
"""

from __future__ import annotations

import os
from typing import Any

CPU_MEMORY_UTILIZATION = 0.1
KV_CACHE_GIB = "1"

_applied = False


def applies() -> bool:
    """Whether vLLM would run on this machine's CPU (no CUDA device): the only case these changes are for."""
    import torch

    return not torch.cuda.is_available()


def apply() -> None:
    """Make vLLM's CPU build keep live weights and run in-process; idempotent, a no-op where a GPU is present."""
    global _applied
    if _applied or not applies():
        return
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", KV_CACHE_GIB)
    from vllm.model_executor.layers import utils

    packed = utils.dispatch_cpu_unquantized_gemm

    def keep_live_weights(layer: Any, remove_weight: bool) -> None:
        # 2-D weights are the linear layers (and the tied output head); anything else keeps vLLM's own handling
        if getattr(layer, "weight", None) is None or layer.weight.ndim != 2 or layer.weight.is_meta:
            packed(layer, remove_weight)
            return
        import torch

        layer.cpu_linear = torch.nn.functional.linear

    keep_live_weights.__doc__ = "hypotrack: multiply with the layer's own weight, so weight syncs reach generation"
    utils.dispatch_cpu_unquantized_gemm = keep_live_weights
    _applied = True


def sync_server_through_files() -> None:
    """Have TRL's vLLM client push weights to its server through a file and a reload (server mode on a CPU, where
    TRL's NCCL transfer cannot run); idempotent, a no-op where a GPU is present."""
    if not applies():
        return
    from trl.generation import vllm_generation

    if getattr(vllm_generation.VLLMClient, "syncs_through_files", False):
        return
    vllm_generation.VLLMClient = _file_synced_client(vllm_generation.VLLMClient)


def _file_synced_client(client_class: type) -> type:
    import shutil
    import tempfile

    class FileSyncedClient(client_class):  # type: ignore[misc, valid-type]
        """TRL's client, its NCCL weight transfer replaced by a safetensors file the server reloads."""

        syncs_through_files = True

        def init_communicator(self, device: Any = 0) -> None:
            """Nothing to set up: each sync writes its own file (TRL would join an NCCL group here)."""

        def update_named_params(self, metadata: Any, named_params: Any) -> None:
            from safetensors.torch import save_file

            shm = "/dev/shm" if os.path.isdir("/dev/shm") else None  # memory, not disk, where the machine has it
            folder = tempfile.mkdtemp(prefix="hypotrack-vllm-sync-", dir=shm)
            try:
                save_file({name: tensor.detach().contiguous() for name, tensor in named_params},
                          os.path.join(folder, "model.safetensors"))
                # the reload has read the file when the call returns: the folder can go
                self._post(f"{self.base_url}/collective_rpc",
                           json={"method": "reload_weights", "kwargs": {"weights_path": folder}})
            finally:
                shutil.rmtree(folder, ignore_errors=True)

        def close_communicator(self) -> None:
            """Nothing to close."""

    FileSyncedClient.__name__ = FileSyncedClient.__qualname__ = f"FileSynced{client_class.__name__}"
    return FileSyncedClient
