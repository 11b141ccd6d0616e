"""Character-level tokenizer for the toy lab.

Built locally with `tokenizers` (no hub access) and wrapped as a PreTrainedTokenizerFast so that TRL and
`AutoTokenizer.from_pretrained(dir)` treat it exactly like a real model's tokenizer.

It is spelled the way Qwen2's own tokenizer is (byte-level BPE: a space is the token "Ġ", a newline "Ċ"), with no
merges, so every character is one token. The toy model is a Qwen2, and transformers 5.24 and later load any Qwen2
checkpoint's tokenizer as Qwen2Tokenizer whatever its files declare, rebuilding the byte-level pre-tokenizer: a
vocabulary of plain characters then loses every space and newline (the reading task's prompts became
unreadable). In Qwen2's spelling both classes give the same ids, and the ids are the ones the plain characters had.
"""
from __future__ import annotations

import string
from pathlib import Path

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = [PAD, BOS, EOS, UNK]
# Every character the toy tasks can emit; fixed order keeps token ids stable across builds.
CHARS = " \n" + string.ascii_lowercase + string.ascii_uppercase + string.digits + ".,:;?!'=+-*/()[]#"


def byte_level_spelling() -> dict[str, str]:
    """Each byte's character in byte-level BPE (GPT-2's table, which Qwen2 uses): printable ASCII is itself, the
    rest (space, newline, ...) moves to characters from 256 on."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1), *range(ord("\xae"), 256)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): chr(b) for b in printable} | {chr(b): chr(256 + i) for i, b in enumerate(others)}


def build_tokenizer():
    """Return a PreTrainedTokenizerFast with one token per character, pad != eos, bos prepended."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    spelled = byte_level_spelling()
    vocab = {tok: i for i, tok in enumerate(SPECIALS + [spelled[c] for c in CHARS])}
    # No merges: each character (spaces and newlines included) stays its own token.
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    # Back from the byte-level spelling, without inserting spaces, so decode(encode(s)) == s.
    tok.decoder = decoders.ByteLevel()
    # A bos token starts every encoded text (TRL encodes prompts with default add_special_tokens=True).
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, vocab[BOS])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        padding_side="left",  # GRPO left-pads prompts for generation
        truncation_side="left",  # keep the question (at the end) when a prompt is cut
        clean_up_tokenization_spaces=False,
        model_max_length=2048,
    )


def save_tokenizer(out_dir: str | Path):
    tok = build_tokenizer()
    tok.save_pretrained(str(out_dir))
    return tok
