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


class InProcess:
    """A generator in this process (TRL's colocate mode): its model is read directly."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.dtype = next(model.parameters()).dtype

    def fingerprints(self, shapes: dict[str, tuple[int, ...]]) -> dict[str, float]:
        return local_fingerprints(self.model, shapes)

    def copy_output_head(self) -> None:
        copy_output_head(self.model)

    def tie_output_head(self) -> None:
        tie_output_head(self.model)

    def sampling_defaults(self) -> dict[str, float]:
        """Nothing: TRL hands its colocated engine every sampling setting (SamplingParams' own defaults for the rest),
        so the model's generation config never reaches it."""
        return {}


class Server:
    """A generator in a vLLM server (TRL's server mode): read through the methods hypotrack's worker extension
    adds to it (hypotrack/vllm_worker.py), called over the server's `/collective_rpc`."""

    def __init__(self, client: Any) -> None:
        import torch

        self.client = client
        self.dtype = getattr(torch, self.call("hypotrack_served_dtype"))

    def call(self, method: str, **kwargs: str) -> Any:
        return self.client._post(f"{self.client.base_url}/collective_rpc",
                                 json={"method": method, "kwargs": kwargs})["results"][0]

    def fingerprints(self, shapes: dict[str, tuple[int, ...]]) -> dict[str, float]:
        import json

        return self.call("hypotrack_fingerprints", shapes=json.dumps({name: list(s) for name, s in shapes.items()}))

    def copy_output_head(self) -> None:
        self.call("hypotrack_copy_output_head")

    def tie_output_head(self) -> None:
        self.call("hypotrack_tie_output_head")

    def sampling_defaults(self) -> dict[str, float]:
        """The sampling settings the server fills a request's unset ones with: the served model's generation config,
        read as vLLM's server reads it when it starts (transformers' GenerationConfig of the model it serves, by the
        name the server gives it); {} where the model has none."""
        from transformers import GenerationConfig

        try:
            return GenerationConfig.from_pretrained(self.client.model).to_diff_dict()
        except (OSError, ValueError):
            return {}


def served_generator(trainer: Any) -> InProcess | Server | None:
    """The generator TRL's vLLM generation samples from, or None (no vLLM, or one hypotrack cannot read: another
    vLLM layout, or a server started without hypotrack's worker extension)."""
    generation = getattr(trainer, "vllm_generation", None)
    mode = getattr(generation, "mode", None)
    try:
        if mode == "colocate":
            return InProcess(generation.llm.llm_engine.model_executor.driver_worker.model_runner.model)
        if mode == "server" and getattr(generation, "vllm_client", None) is not None:
            return Server(generation.vllm_client)
    except Exception:  # noqa: BLE001 - an engine laid out otherwise, a server without the extension: no reading
        return None
    return None


def copy_output_head(served: Any) -> None:
    """Give a served model whose output head is its tied embedding a head of its own, copied as it stands now
    (a weight sync writes the embedding and no longer reaches the head)."""
    import torch

    head, embedding = _head_and_embedding(served)
    if head is not None and head.weight is embedding.weight:
        head.weight = torch.nn.Parameter(embedding.weight.detach().clone(), requires_grad=False)


def tie_output_head(served: Any) -> None:
    """Point a served model's separate copy of its tied head back at the embedding (undoes copy_output_head)."""
    head, embedding = _head_and_embedding(served)
    tied = getattr(getattr(served, "config", None), "tie_word_embeddings", False)
    if head is not None and tied and head.weight is not embedding.weight:
        head.weight = embedding.weight


def _head_and_embedding(served: Any) -> tuple[Any, Any]:
    head = getattr(served, "lm_head", None)
    embedding = getattr(getattr(served, "model", None), "embed_tokens", None)
    if getattr(head, "weight", None) is None or getattr(embedding, "weight", None) is None:
        return None, None
    return head, embedding


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
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None and head.weight is model.get_input_embeddings().weight:
        tensors["lm_head.weight"] = head.weight.detach()  # tied: one parameter, which the generator serves twice
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
    head = getattr(served, "lm_head", None)
    if "lm_head.weight" in shapes and "lm_head.weight" not in found and getattr(head, "weight", None) is not None:
        found["lm_head.weight"] = head.weight.detach()  # a tied head is not among the named parameters
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


def local_fingerprints(served: Any, shapes: dict[str, tuple[int, ...]]) -> dict[str, float]:
    """The fingerprints of a served model in this process, by trainer tensor name, in the model's own dtype."""
    dtype = next(served.parameters()).dtype
    return fingerprints(served_tensors(served, shapes), dtype)


def stale_share(generator: InProcess | Server, start: dict[str, float], model: Any) -> float | None:
    """Of the tensors training has moved (in the generator's precision), the share whose served copy is nearer
    their values at the start than the trainer's current ones: 0 when the generator is current, 1 when it never
    received an update. None while nothing has moved."""
    now_tensors = trainer_tensors(model)
    now = fingerprints(now_tensors, generator.dtype)
    served = generator.fingerprints({name: tuple(t.shape) for name, t in now_tensors.items()})
    moved = stale = 0
    for name, value in now.items():
        if name not in served or name not in start or value == start[name]:
            continue
        moved += 1
        stale += abs(served[name] - value) > abs(served[name] - start[name])
    return stale / moved if moved else None
