"""The arm's model and tokenizer, loaded with from_pretrained (a toy-lab model is built on first use)."""

from __future__ import annotations

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
        dtype = torch.float32 if not torch.cuda.is_available() else "auto"
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HypotrackError(f"model {spec.model!r} could not be loaded: {first}") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def build_peft_config(spec: ArmSpec):
    """peft's LoraConfig for a LoRA arm; None for full fine-tuning."""
    if not spec.peft:
        return None
    from peft import LoraConfig

    fields = {k: v for k, v in spec.lora.items() if k != "enabled"}
    return LoraConfig(task_type="CAUSAL_LM", **fields)
