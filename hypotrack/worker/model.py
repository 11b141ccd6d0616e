"""The arm's model and tokenizer, loaded with from_pretrained (a toy-lab model is built on first use)."""

from __future__ import annotations

import json

from hypotrack.errors import HypotrackError
from hypotrack.protocol import ArmSpec, Event, EventWriter
from hypotrack.toy.lab import resolve_model


def build_model(spec: ArmSpec, events: EventWriter | None = None):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def building(text: str) -> None:  # the arm's progress line says so instead of sitting at step 0
        if events is not None:
            events.emit(Event.PHASE, text=text)

    path = resolve_model(spec.model, building)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, **_init_kwargs(spec, torch))
    except (OSError, ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HypotrackError(f"model {spec.model!r} could not be loaded: {first}") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def _init_kwargs(spec: ArmSpec, torch) -> dict:
    """from_pretrained's arguments: the settings' model_init_kwargs, as TRL passes them for a model it loads by name
    (it ignores them for a model it is handed, and the worker hands it one), with a dtype's name read as TRL reads
    it; without a dtype there, float32 on a CPU and the checkpoint's own dtype on a GPU."""
    declared = spec.grpo.get("model_init_kwargs") or {}
    kwargs = dict(json.loads(declared) if isinstance(declared, str) else declared)  # TRL takes a JSON text too
    dtype = kwargs.pop("dtype", kwargs.pop("torch_dtype", None))
    if dtype is None:
        dtype = torch.float32 if not torch.cuda.is_available() else "auto"
    elif isinstance(dtype, str) and dtype != "auto":
        dtype = getattr(torch, dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise HypotrackError(f"settings.model_init_kwargs.dtype {spec.grpo['model_init_kwargs']!r}: not a torch "
                                 "dtype's name (float32, bfloat16, float16 or auto)")
    return {**kwargs, "dtype": dtype}


def build_peft_config(spec: ArmSpec):
    """peft's LoraConfig for a LoRA arm; None for full fine-tuning."""
    if not spec.peft:
        return None
    from peft import LoraConfig

    fields = {k: v for k, v in spec.lora.items() if k != "enabled"}
    return LoraConfig(task_type="CAUSAL_LM", **fields)
