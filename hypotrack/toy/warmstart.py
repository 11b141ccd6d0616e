"""Supervised warm start: makes the tiny model partially competent, then caches model + tokenizer.

GRPO needs a baseline reward well inside (0, 1): a random model never gets reward (no signal) and a
fully trained one has nothing to learn. The recipe below (steps per task) is tuned so that sampling
at the GRPO temperature gives a baseline reward of roughly 0.3-0.6 (see presets.py / calibrate.py).
Builds are deterministic for a seed, serialized by a file lock, and published atomically.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Bump when anything that changes the built weights changes (recipe, tasks, model, tokenizer):
# the version is part of the cache path, so old builds are simply ignored.
VERSION = "ws10"

# Per-task supervised recipe. Few steps on purpose: the model must stay imperfect.
# musique-mini: the reading skill emerges between 150 and 175 steps (before that the model names one
# of the four capitals at chance, and GRPO on a model mid-emergence is erratic: at 160 steps one seed
# started at 0.06). At 180 steps the model reads but samples the wrong capital about half the time,
# which GRPO sharpens: 6 of 6 seeds gained +0.18 to +0.40 in 100 steps (presets.py).
# arith-wide: four times the parameters learn more slowly at arith's rate (0.17 greedy accuracy after 550 steps);
# at half the rate and twice the steps it reaches arith's own (0.90 against 0.87 on 300 held-out problems).
RECIPES = {
    "arith": dict(steps=550, batch_size=64, lr=3e-3, n_train=20000),
    "musique-mini": dict(steps=180, batch_size=32, lr=3e-3, n_train=20000, short=True),
    "arith-wide": dict(task="arith", architecture="wide", steps=1100, batch_size=64, lr=1.5e-3, n_train=20000),
    # letters-wide learns its completions' letter shares and their length (letters.py): its target is the dataset's
    # column of warm-start completions, not the letter asked. Its letters' logits are held near LOGIT_LEVEL, where a
    # real model's top logits sit: bfloat16's spacing there is 0.125, so a trainer and a vLLM engine that each round
    # them disagree by about 0.01 nats a token, as on real models (trl#5814: 0.012). A toy model left to itself puts
    # them near 2, where the same rounding costs 0.002. The offset is the same for every letter, so it changes no
    # probability; its output layer is its own, since an offset shared through tied embeddings makes every input
    # token look alike and the model never learns which letter was asked.
    "letters-wide": dict(task="letters", architecture="wide", steps=450, batch_size=32, lr=3e-3, n_train=20000,
                         target="completion", untied=True, logit_level=24.0),
}
LOGIT_LEVEL_WEIGHT = 0.01  # the warm start's pull of the letters' mean logit toward a recipe's logit_level
DATA_SEED_OFFSET = 1000  # warm-start rows come from a different seed than GRPO rows


def cache_root(cache_dir: str | Path | None = None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("HYPOTRACK_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "hypotrack"


def model_dir(name: str, seed: int = 0, cache_dir: str | Path | None = None) -> Path:
    return cache_root(cache_dir) / "toy" / f"{name}-{VERSION}-seed{seed}"


def _encode(tokenizer, prompts, answers, prompt_loss: bool = False):
    """Left-padded batch (as GRPO sees it); loss on answer tokens + eos (and on the prompt if asked:
    next-character loss on long prompts with repeated codes teaches copying much faster)."""
    import torch

    ids, labels = [], []
    for p, a in zip(prompts, answers):
        p_ids = tokenizer(p)["input_ids"]  # starts with bos, like TRL's prompt encoding
        a_ids = tokenizer(a, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        ids.append(p_ids + a_ids)
        labels.append(([-100] + p_ids[1:] if prompt_loss else [-100] * len(p_ids)) + a_ids)
    width = max(map(len, ids))
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([[pad] * (width - len(x)) + x for x in ids])
    attn = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids])
    lab = torch.tensor([[-100] * (width - len(x)) + y for x, y in zip(ids, labels)])
    return input_ids, attn, lab


def train(name: str, seed: int = 0, steps: int | None = None, log_every: int = 0):
    """Return (model, tokenizer) after the toy model's supervised recipe (steps overridable for tuning)."""
    import torch

    from . import lab
    from .model import build_model
    from .tokenizer import build_tokenizer

    recipe = RECIPES[name]
    task = recipe.get("task", name)
    steps = recipe["steps"] if steps is None else steps
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, seed=seed, architecture=recipe.get("architecture", "base"),
                        **({"tie_word_embeddings": False} if recipe.get("untied") else {}))
    if recipe.get("short"):  # musique-mini: filler-free rows teach the same skill ~3x cheaper
        from .musique_mini import build_dataset

        data = build_dataset(recipe["n_train"], seed + DATA_SEED_OFFSET, short=True)
    else:
        data = lab.load_dataset(task, recipe["n_train"], seed + DATA_SEED_OFFSET)
    prompts, answers = list(data["prompt"]), list(data[recipe.get("target", "answer")])
    g = torch.Generator().manual_seed(seed)
    if "logit_level" in recipe:  # the tokens whose logits are held at the level, read once
        from .letters import ALPHABET

        leveled = tokenizer.convert_tokens_to_ids(list(ALPHABET))
    opt = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=0.0)
    model.train()
    for step in range(steps):
        idx = torch.randint(len(prompts), (recipe["batch_size"],), generator=g).tolist()
        input_ids, attn, lab_ = _encode(tokenizer, [prompts[i] for i in idx], [answers[i] for i in idx],
                                          recipe.get("prompt_loss", False))
        out = model(input_ids=input_ids, attention_mask=attn, labels=lab_)
        loss = out.loss
        if "logit_level" in recipe:
            loss = loss + LOGIT_LEVEL_WEIGHT * (_logit_mean(out.logits, lab_, leveled) - recipe["logit_level"]) ** 2
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if log_every and step % log_every == 0:
            print(f"step {step} loss {loss.item():.3f}", flush=True)
    model.eval()
    return model, tokenizer


def _logit_mean(logits, labels, token_ids):
    """The mean logit of ``token_ids`` at the positions the loss reads."""
    return logits[:, :-1][labels[:, 1:] != -100][:, token_ids].mean()


def build(name: str, seed: int = 0, cache_dir: str | Path | None = None) -> Path:
    """Build the warm-started toy model once (lock + temp dir + rename) and return its directory."""
    from filelock import FileLock

    final = model_dir(name, seed, cache_dir)
    if (final / "config.json").exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock"):
        if (final / "config.json").exists():  # another process built it while we waited
            return final
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # deterministic and polite on shared CI cores
        try:
            t0 = time.perf_counter()
            model, tokenizer = train(name, seed)

            def save(folder: Path) -> None:
                model.save_pretrained(str(folder))
                tokenizer.save_pretrained(str(folder))
                (folder / "WARMSTART").write_text(
                    f"model={name} seed={seed} version={VERSION} seconds={time.perf_counter() - t0:.1f}\n")

            publish_folder(final, save)
        finally:
            torch.set_num_threads(threads)
    return final


def publish_folder(final: Path, fill: Callable[[Path], None]) -> Path:
    """``final``, filled by ``fill`` in a staging folder beside it and renamed into place: readers see all its files
    or none. Where another process published it first, its folder is kept and this one's dropped."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=final.name + ".tmp-", dir=final.parent))
    try:
        fill(staging)
        os.replace(staging, final)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not final.is_dir():
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final
