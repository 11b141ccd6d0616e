"""Character-level tokenizer for the toy lab.

Built locally with `tokenizers` (no hub access) and wrapped as a PreTrainedTokenizerFast so that TRL and
`AutoTokenizer.from_pretrained(dir)` treat it exactly like a real model's tokenizer.
"""
from __future__ import annotations

import string
from pathlib import Path

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = [PAD, BOS, EOS, UNK]
# Every character the toy tasks can emit; fixed order keeps token ids stable across builds.
CHARS = " \n" + string.ascii_lowercase + string.ascii_uppercase + string.digits + ".,:;?!'=+-*/()[]#"


def build_tokenizer():
    """Return a PreTrainedTokenizerFast with one token per character, pad != eos, bos prepended."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIALS + list(CHARS))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    # Each character (spaces and newlines included) is its own pre-token, hence its own token.
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    # Fuse concatenates tokens without inserting spaces, so decode(encode(s)) == s.
    tok.decoder = decoders.Fuse()
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
