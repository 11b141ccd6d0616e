"""Shared helpers of the parity checks: model resolution/loading, a tiny fallback model, a TRL-shaped batch.

Imports torch/transformers lazily inside functions so that `hypotrack.parity.cli` can import this
module without paying for torch.
"""
from __future__ import annotations

import struct
from pathlib import Path

DEFAULT_PROMPTS = [
    "12+7=",
    "What is 3*4? ",
    "Q: 45-19 A:",
    "9+9+1=",
    "The answer to 8*7 is ",
    "100-1=",
]


def resolve_model_path(model: str | Path | None) -> str:
    """The toy lab's model for None, "toy" or "toy:<task>"; otherwise a model directory (it must hold config.json)."""
    from hypotrack.toy.lab import resolve_model, toy_task

    if toy_task(None if model is None else str(model)) is None:
        p = Path(model)
        if p.exists() and not (p / "config.json").exists():
            raise FileNotFoundError(f"{p} has no config.json: not a model directory loadable with from_pretrained")
    return resolve_model(None if model is None else str(model))


def set_threads(n: int = 1) -> None:
    import torch

    torch.set_num_threads(n)


def load_model(model_path: str, dtype=None, device: str = "cpu", **config_overrides):
    """AutoModelForCausalLM in eval mode; config_overrides (e.g. attention_dropout=0.1) go to from_pretrained."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        model_path, dtype=dtype or torch.float32, **config_overrides
    )
    return model.to(device).eval()


def load_tokenizer(model_path: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def default_prompts(model_path: str, n: int, seed: int) -> list[str]:
    """Prompts for the probes: the toy arith task if available, else a fixed generic list."""
    try:
        from hypotrack.toy.lab import load_dataset

        ds = load_dataset("arith", n, seed)
        prompts = [p if isinstance(p, str) else p[-1]["content"] for p in ds["prompt"]]
        return prompts[:n]
    except Exception:  # noqa: BLE001 - a model the toy's data does not fit gets fixed prompts
        return [DEFAULT_PROMPTS[i % len(DEFAULT_PROMPTS)] for i in range(n)]


def hex32(x: float) -> str:
    """Big-endian hex of the float32 bit pattern (seed 002 style)."""
    return struct.pack(">f", float(x)).hex()


# --------------------------------------------------------------------------------------------------
# tiny fallback model (tests, and users without the toy lab)
# --------------------------------------------------------------------------------------------------
TINY_CHARS = " \n0123456789+-*/=?.:abcdefghijklmnopqrstuvwxyzAQW"


def build_tiny_model(out_dir: str | Path, seed: int = 0, **config_overrides) -> str:
    """Write a tiny random Qwen2 causal LM + char-level tokenizer (pad != eos) to out_dir; return it."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials + list(dict.fromkeys(TINY_CHARS)))}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tk.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>", unk_token="<unk>",
        padding_side="left", clean_up_tokenization_spaces=False, model_max_length=512,
    )
    kw = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=256, tie_word_embeddings=True,
    )
    kw.update(config_overrides)
    cfg = Qwen2Config(
        vocab_size=len(vocab), pad_token_id=vocab["<pad>"], bos_token_id=vocab["<bos>"],
        eos_token_id=vocab["<eos>"], **kw,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id = cfg.pad_token_id
    model.generation_config.eos_token_id = cfg.eos_token_id
    model.generation_config.bos_token_id = cfg.bos_token_id
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return str(out)


# --------------------------------------------------------------------------------------------------
# a TRL-shaped rollout batch
# --------------------------------------------------------------------------------------------------
def sample_rollout(model, tokenizer, prompts: list[str], num_generations: int, max_new_tokens: int, seed: int,
                   min_len: int = 2):
    """Left-padded prompts, sampled completions (temperature 1), TRL-style completion mask.

    The completion mask covers tokens up to and including the first eos. To make masking matter on
    models that never emit eos (random tiny ones), each row is also cut at a random length in
    [min_len, max_new_tokens] (seeded), the rest becoming pad with mask 0.
    Returns (prompt_ids, prompt_mask, completion_ids, completion_mask, gen_output) where gen_output
    is the `generate` output (with `.logits`) for the sampling-logprob context.
    """
    import torch

    g = torch.Generator().manual_seed(seed)
    rep = [p for p in prompts for _ in range(num_generations)]
    tokenizer.padding_side = "left"
    enc = tokenizer(rep, return_tensors="pt", padding=True)
    prompt_ids, prompt_mask = enc["input_ids"], enc["attention_mask"]
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(
            input_ids=prompt_ids, attention_mask=prompt_mask, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
            max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens, output_logits=True,
            return_dict_in_generate=True, pad_token_id=tokenizer.pad_token_id,
        )
    completion_ids = out.sequences[:, prompt_ids.size(1):].clone()
    B, T = completion_ids.shape
    is_eos = completion_ids == tokenizer.eos_token_id
    first_eos = torch.where(is_eos.any(1), is_eos.int().argmax(1), torch.full((B,), T))
    cut = torch.randint(min_len, T + 1, (B,), generator=g)
    length = torch.minimum(first_eos + 1, cut)
    completion_mask = (torch.arange(T).unsqueeze(0) < length.unsqueeze(1)).long()
    completion_ids = completion_ids.masked_fill(completion_mask == 0, tokenizer.pad_token_id)
    return prompt_ids, prompt_mask, completion_ids, completion_mask, out
