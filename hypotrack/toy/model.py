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


def build_config(tokenizer, **overrides):
    from transformers import Qwen2Config

    kw = {**MODEL_KWARGS, **overrides}
    return Qwen2Config(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **kw,
    )


def build_model(tokenizer, seed: int = 0, **overrides):
    """Randomly initialised Qwen2ForCausalLM; the seed makes the init reproducible."""
    import torch
    from transformers import Qwen2ForCausalLM

    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(build_config(tokenizer, **overrides))
    # Generation defaults that TRL reads (eos list, pad) must match the tokenizer.
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model


def save_model(model, out_dir: str | Path) -> None:
    model.save_pretrained(str(out_dir))
