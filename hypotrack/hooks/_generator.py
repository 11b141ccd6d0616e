"""The weights a separate generator serves, read beside the trainer's own: is the generator current?

Under TRL's `use_vllm` (colocate mode) the completions come from vLLM's copy of the model, in the training
process, which TRL refreshes before each step's generation (`sync_weights`: LoRA adapters merged into the
base weights, every tensor loaded into vLLM). hypotrack reads that copy where TRL writes it
(`llm.llm_engine.model_executor.driver_worker.model_runner.model`) and compares it with the trainer's
weights as TRL would sync them.

vLLM stores some tensors packed (q, k and v projections in one `qkv_proj`, gate and up in `gate_up_proj`,
its model's `packed_modules_mapping`), and in its own dtype (bfloat16 when it serves a float32 checkpoint
and is not told otherwise). So each trainer tensor is compared with its rows of vLLM's tensor, both cast to
vLLM's dtype, through a fingerprint: the sum of the tensor's rows weighted by a fixed random sign per row
(one float64 per tensor, computed in a single pass over the weights; nothing is copied or kept).
"""

from __future__ import annotations

import zlib
from typing import Any


def served_model(trainer: Any) -> Any | None:
    """The model vLLM serves in this process (TRL's colocate mode), or None (no vLLM, or vLLM in a server)."""
    generation = getattr(trainer, "vllm_generation", None)
    if generation is None or getattr(generation, "mode", None) != "colocate":
        return None
    try:
        return generation.llm.llm_engine.model_executor.driver_worker.model_runner.model
    except AttributeError:  # another vLLM layout: nothing hypotrack can read
        return None


def trainer_tensors(model: Any) -> dict[str, Any]:
    """The trainer's weights as TRL syncs them to the generator, by the generator's names: LoRA adapters merged
    into their base weights (the active adapters' deltas added), peft's wrapping taken off the names."""
    from hypotrack.hooks._util import lora_layers, policy_adapters, unwrap

    model = unwrap(model)
    policy = policy_adapters(model)  # TRL merges the policy's adapters (not a frozen reference copy)
    deltas: dict[str, Any] = {}
    for layer_name, layer in lora_layers(model):
        if getattr(layer, "disable_adapters", False):
            continue
        delta = None
        for adapter in layer.lora_A.keys():
            if adapter in layer.lora_B and (policy is None or adapter in policy):
                part = layer.get_delta_weight(adapter).detach()
                delta = part if delta is None else delta + part
        if delta is not None:
            deltas[_generator_name(f"{layer_name}.base_layer.weight")] = delta
    tensors: dict[str, Any] = {}
    for name, param in model.named_parameters():
        if "lora_" in name or "original_module" in name:
            continue  # adapters are merged, not served; a module to save serves its trained copy
        served = _generator_name(name)
        value = param.detach()
        tensors[served] = value + deltas[served] if served in deltas else value
    return tensors


def _generator_name(name: str) -> str:
    """A trainer parameter's name as TRL hands it to vLLM (peft's prefixes and base_layer taken off)."""
    for prefix in ("base_model.model.", "module."):
        name = name.removeprefix(prefix)
    return name.replace(".base_layer.", ".").replace("modules_to_save.default.", "")


def served_tensors(served: Any, shapes: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Each trainer tensor name -> the rows of the generator's parameter that hold it (packed ones split)."""
    packed = getattr(served, "packed_modules_mapping", None) or {}
    found: dict[str, Any] = {}
    for name, param in served.named_parameters():
        module, _, leaf = name.rpartition(".")
        parent, _, last = module.rpartition(".")
        parts = packed.get(last)
        if not parts:
            found[name] = param.detach()
            continue
        offset = 0
        for part in parts:
            member = f"{parent}.{part}.{leaf}" if parent else f"{part}.{leaf}"
            if member not in shapes:
                break
            rows = shapes[member][0]
            found[member] = param.detach()[offset:offset + rows]
            offset += rows
    return found


def fingerprint(name: str, tensor: Any, dtype: Any) -> float:
    """The tensor cast to ``dtype``, its rows summed and weighted by a random sign fixed by its name."""
    import torch

    value = tensor.to(dtype).double()
    rows = value.reshape(value.shape[0], -1).sum(dim=1) if value.dim() > 1 else value
    generator = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    signs = torch.randint(0, 2, (rows.shape[0],), generator=generator).double().mul_(2).sub_(1)
    return float((rows.cpu() * signs).sum())


def fingerprints(tensors: dict[str, Any], dtype: Any) -> dict[str, float]:
    return {name: fingerprint(name, tensor, dtype) for name, tensor in tensors.items()}


def served_dtype(served: Any) -> Any:
    return next(served.parameters()).dtype


def stale_share(served: Any, start: dict[str, float], model: Any) -> float | None:
    """Of the tensors training has moved (in the generator's precision), the share whose served copy is nearer
    their values at the start than the trainer's current ones: 0 when the generator is current, 1 when it never
    received an update. None while nothing has moved."""
    dtype = served_dtype(served)
    now_tensors = trainer_tensors(model)
    now = fingerprints(now_tensors, dtype)
    generator = served_tensors(served, {name: tuple(t.shape) for name, t in now_tensors.items()})
    moved = stale = 0
    for name, value in now.items():
        if name not in generator or name not in start or value == start[name]:
            continue
        moved += 1
        served_value = fingerprint(name, generator[name], dtype)
        stale += abs(served_value - value) > abs(served_value - start[name])
    return stale / moved if moved else None
