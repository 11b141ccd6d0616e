"""How often does h02's prompt-echo detector flag a healthy completion? Measured, not assumed.

    python tests/tools/echo_false_positives.py [--rows 2000]

1. Toy lab: the warm-started arith and musique-mini models sample completions (temperature 1,
   the experiments' completion budget) for held-out prompts, exactly as GRPO's rollouts do at step 0;
   the rule of `hooks.token_masking.echo_length` is applied with the old (any prompt suffix of >= 4
   tokens) and the current settings.
2. Healthy (prompt, completion) text pairs written the way users lay prompts out: the prompt ends
   with a cue ("...\nAnswer:") and a quarter of the completions restate it ("Answer: Paris"), others
   restate the question or answer directly, as real models do. Tokenized by the toy lab's
   character-level tokenizer and by a byte-level BPE tokenizer trained here on the same text.
Prints the share of rows flagged under each rule.
"""

from __future__ import annotations

import argparse
import random

from hypotrack.hooks.token_masking import echo_length

OLD = dict(min_echo=4, fraction=0.0)  # the toy experiment's former setting: any suffix of 4+ tokens
CURRENT = dict(min_echo=8, fraction=0.5)


def _rate(pairs, rule) -> float:
    return sum(echo_length(p, c, **rule) > 0 for p, c in pairs) / max(len(pairs), 1)


def toy_pairs(task: str, rows: int) -> list[tuple[list[int], list[int]]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hypotrack.toy.lab import ensure_model, load_dataset

    path = ensure_model(task)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    prompts = load_dataset(task, rows, seed=12345)["prompt"]
    specials = set(tokenizer.all_special_ids)
    tokenizer.padding_side = "left"
    pairs = []
    torch.manual_seed(0)
    for start in range(0, len(prompts), 256):
        batch = tokenizer(prompts[start:start + 256], return_tensors="pt", padding=True)
        with torch.no_grad():
            out = model.generate(**batch, do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=6,
                                 pad_token_id=tokenizer.pad_token_id)
        for ids, mask, gen in zip(batch["input_ids"].tolist(), batch["attention_mask"].tolist(),
                                  out[:, batch["input_ids"].size(1):].tolist()):
            pairs.append(([t for t, m in zip(ids, mask) if m and t not in specials], gen))
    return pairs


def healthy_text_pairs(rows: int) -> list[tuple[str, str]]:
    from hypotrack.toy.lab import load_dataset

    rng = random.Random(0)
    facts = [("capital of France", "Paris"), ("author of Hamlet", "Shakespeare"), ("largest planet", "Jupiter"),
             ("boiling point of water at sea level", "100 degrees Celsius"), ("chemical symbol for gold", "Au")]
    pairs_text = []
    for i in range(rows):
        what, answer = facts[i % len(facts)]
        question = f"Question: What is the {what}? Think step by step, then answer.\nAnswer:"
        style = i % 4
        if style == 0:
            completion = f" The {what} is {answer}."
        elif style == 1:
            completion = f" What is the {what}? It is {answer}."  # restates the question: healthy, not an echo
        elif style == 2:
            completion = f"\nAnswer: {answer}"  # restates the cue the prompt ends with
        else:
            completion = f" {answer}"
        pairs_text.append((question, completion))
    for task in ("arith", "musique-mini"):
        for row in load_dataset(task, rows // 2, seed=7):
            pairs_text.append((row["prompt"], " " + str(row["answer"])))
    rng.shuffle(pairs_text)
    return pairs_text


def char_pairs(texts: list[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    from transformers import AutoTokenizer

    from hypotrack.toy.lab import ensure_model

    tokenizer = AutoTokenizer.from_pretrained(ensure_model("arith"))
    return [(tokenizer(p, add_special_tokens=False)["input_ids"], tokenizer(c, add_special_tokens=False)["input_ids"])
            for p, c in texts]


def bpe_pairs(texts: list[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    pairs_text = texts
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([p + c for p, c in pairs_text], trainer)
    return [(tokenizer.encode(p).ids, tokenizer.encode(c).ids) for p, c in pairs_text]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    args = parser.parse_args()
    texts = healthy_text_pairs(args.rows)
    sets = {"toy arith (sampled, step 0)": toy_pairs("arith", args.rows),
            "toy musique-mini (sampled, step 0)": toy_pairs("musique-mini", args.rows),
            "user layouts, character-level tokenizer": char_pairs(texts),
            "user layouts, byte-level BPE": bpe_pairs(texts)}
    for name, pairs in sets.items():
        print(f"{name:40s} rows {len(pairs):5d}  flagged: old rule {_rate(pairs, OLD):.4f}, "
              f"current rule {_rate(pairs, CURRENT):.4f}")


if __name__ == "__main__":
    main()
