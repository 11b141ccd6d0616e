"""Tiny Qwen2-architecture causal LM for the toy lab.

A real `Qwen2ForCausalLM` (same code path as production models in TRL/peft, e.g. q_proj/v_proj names
for LoRA), just small enough (~0.1M parameters) that a GRPO step runs in tens of ms on one CPU core.
"""
from __future__ import annotations

from pathlib import Path

# Sized for speed first: GRPO step time is dominated by per-token generation overhead, and the
# tasks only need short-range copying, which 2-3 layers of width 64 learn in seconds.
MODEL_KWARGS = dict(
    hidden_size=64,
    intermediate_size=192,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=1024,  # musique-mini prompts reach ~600 characters
    rope_theta=10000.0,
    tie_word_embeddings=True,
    use_sliding_window=False,
)

# The toy lab's model shapes. "wide" is the smallest the toy's tasks stay competent at that vLLM's CPU
# attention can serve: its kernels take a head size of 32 or more, and vLLM's Qwen2 derives the head size
# as hidden_size / heads (a config's own head_dim is not read), so four heads need a width of 128.
ARCHITECTURES: dict[str, dict] = {
    "base": MODEL_KWARGS,
    "wide": dict(MODEL_KWARGS, hidden_size=128, intermediate_size=384),
}


def build_config(tokenizer, architecture: str = "base", **overrides):
    from transformers import Qwen2Config

    kw = {**ARCHITECTURES[architecture], **overrides}
    return Qwen2Config(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **kw,
    )


def build_model(tokenizer, seed: int = 0, architecture: str = "base", **overrides):
    """Randomly initialised Qwen2ForCausalLM; the seed makes the init reproducible."""
    import torch
    from transformers import Qwen2ForCausalLM

    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(build_config(tokenizer, architecture, **overrides))
    # Generation defaults that TRL reads (eos list, pad) must match the tokenizer.
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model


def save_model(model, out_dir: str | Path) -> None:
    model.save_pretrained(str(out_dir))
