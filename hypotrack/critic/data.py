"""Critic training data: value targets from the task's rewards, plus random-token probe sequences.

Real data: prompts from the task, one completion each sampled from the policy (the same checkpoint,
as a causal LM), scored with the task's reward functions (TRL signature, summed). Rewards are terminal
and gamma = 1, so the return at every completion token is the completion's reward; the value loss
is taken over completion tokens only. Sequences are stored right-padded (prompt + completion, no
left padding) so positions are the same as in an unpadded forward pass.

Seeds (seed hierarchy): everything here uses the data seed, which inherits the main seed.
"""
from __future__ import annotations

import contextlib
import inspect
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch

from hypotrack.imports import import_object


@contextlib.contextmanager
def quiet_transformers():
    """Silence transformers' load reports and progress bars (the expected 'score MISSING' notice)."""
    from transformers.utils import logging as hf_logging

    old = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(old)
        if bars:
            hf_logging.enable_progress_bar()


@dataclass
class CriticTask:
    """Prompts, their extra columns (passed to reward functions) and the reward functions."""

    prompts: list
    columns: dict[str, list] = field(default_factory=dict)
    reward_funcs: list[Callable] = field(default_factory=list)


def load_task(settings, n: int, data_seed: int) -> CriticTask:
    """Resolve settings.dataset / task and settings.reward_funcs into a CriticTask with n prompts."""
    if settings.dataset:
        loader = import_object(settings.dataset, what="critic dataset loader")
        params = inspect.signature(loader).parameters
        kw = {k: v for k, v in (("n", n), ("seed", data_seed)) if k in params}
        ds = loader(**kw)
    else:
        from hypotrack.toy.lab import load_dataset

        ds = load_dataset(settings.task, n, data_seed)
    if "prompt" not in ds.column_names:
        raise ValueError(f"the critic dataset needs a 'prompt' column; it has {ds.column_names}")
    if settings.reward_funcs:
        paths = list(settings.reward_funcs)
    else:
        from hypotrack.toy.lab import reward_functions

        paths = reward_functions(settings.task)
    funcs = [import_object(p, what="reward function") for p in paths]
    rows = min(len(ds), n)
    idx = [i % len(ds) for i in range(n)] if rows < n else list(range(n))  # cycle a small dataset
    cols = {c: [ds[c][i] for i in idx] for c in ds.column_names}
    return CriticTask(prompts=cols.pop("prompt"), columns=cols, reward_funcs=funcs)


@dataclass
class SequenceData:
    """Right-padded sequences with the tokens that carry value loss / are compared."""

    input_ids: torch.Tensor  # (N, T) long
    attention_mask: torch.Tensor  # (N, T) long
    loss_mask: torch.Tensor  # (N, T) float: completion tokens (real) or all tokens (random)
    returns: torch.Tensor  # (N, T) float: value target per token
    rewards: torch.Tensor  # (N,) float
    completions: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def select(self, idx: torch.Tensor) -> "SequenceData":
        """Rows idx, trimmed to their longest sequence (same trim for every backend)."""
        am = self.attention_mask[idx]
        t = int(am.sum(1).max())
        return SequenceData(
            self.input_ids[idx, :t], am[:, :t], self.loss_mask[idx, :t], self.returns[idx, :t], self.rewards[idx]
        )


def load_tokenizer(model_path: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_path))
    if tok.pad_token_id is None:  # common for user models: pad with eos (masks keep it out of the loss)
        tok.pad_token = tok.eos_token
    return tok


def _prompt_texts(tokenizer, prompts: Sequence) -> list[str]:
    if prompts and isinstance(prompts[0], list):  # conversational format
        return [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    return [str(p) for p in prompts]


@torch.no_grad()
def sample_completions(
    policy, tokenizer, prompts: Sequence, *, max_new_tokens: int, temperature: float, seed: int
) -> tuple[list[list[int]], list[list[int]], list[str]]:
    """One sampled completion per prompt; returns (prompt ids, completion ids incl. eos, texts)."""
    texts = _prompt_texts(tokenizer, prompts)
    old_side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        enc = tokenizer(texts, return_tensors="pt", padding=True)
    finally:
        tokenizer.padding_side = old_side
    eos = tokenizer.eos_token_id
    torch.manual_seed(int(seed))
    out = policy.generate(
        **enc,
        do_sample=True,
        temperature=temperature,
        top_k=0,
        top_p=1.0,
        max_new_tokens=max_new_tokens,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=eos,
    )
    plen = enc["input_ids"].shape[1]
    prompt_ids, completion_ids, completion_texts = [], [], []
    for row, mask, gen in zip(enc["input_ids"], enc["attention_mask"], out[:, plen:]):
        prompt_ids.append(row[mask.bool()].tolist())
        ids = gen.tolist()
        if eos is not None and eos in ids:
            ids = ids[: ids.index(eos) + 1]  # the eos token is part of the completion
        if not ids:
            ids = [eos if eos is not None else tokenizer.pad_token_id]
        completion_ids.append(ids)
        completion_texts.append(tokenizer.decode(ids, skip_special_tokens=True))
    return prompt_ids, completion_ids, completion_texts


def score(task: CriticTask, completions: list[str], completion_ids: list[list[int]]) -> torch.Tensor:
    """Sum of the reward functions (TRL signature); None / NaN from a function counts as 0."""
    if not task.reward_funcs:
        raise ValueError("the critic task has no reward functions")
    comps: list = completions
    if task.prompts and isinstance(task.prompts[0], list):
        comps = [[{"role": "assistant", "content": c}] for c in completions]
    total = torch.zeros(len(completions), dtype=torch.float64)
    for f in task.reward_funcs:
        vals = f(prompts=task.prompts, completions=comps, completion_ids=completion_ids, **task.columns)
        if len(vals) != len(completions):
            raise ValueError(f"reward function {f.__name__} returned {len(vals)} values for {len(completions)} completions")
        r = torch.tensor([float("nan") if v is None else float(v) for v in vals], dtype=torch.float64)
        total += torch.nan_to_num(r, nan=0.0)
    return total.float()


def pack(prompt_ids, completion_ids, rewards: torch.Tensor, pad_id: int, completions=None) -> SequenceData:
    """Right-pad prompt+completion; loss mask and returns on completion tokens (gamma=1, terminal reward)."""
    n = len(prompt_ids)
    t = max(len(p) + len(c) for p, c in zip(prompt_ids, completion_ids))
    ids = torch.full((n, t), pad_id, dtype=torch.long)
    am = torch.zeros((n, t), dtype=torch.long)
    lm = torch.zeros((n, t), dtype=torch.float32)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids)):
        ids[i, : len(p) + len(c)] = torch.tensor(p + c)
        am[i, : len(p) + len(c)] = 1
        lm[i, len(p) : len(p) + len(c)] = 1.0
    returns = lm * rewards.view(-1, 1)
    return SequenceData(ids, am, lm, returns, rewards.clone(), list(completions or []))


def build_real_data(model_path: str, tokenizer, task: CriticTask, settings, data_seed: int):
    """Sample + score completions; returns (train, eval) SequenceData, split as in settings."""
    from transformers import AutoModelForCausalLM

    with quiet_transformers():
        policy = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.float32)
    policy.eval()
    p_ids, c_ids, texts = sample_completions(
        policy, tokenizer, task.prompts,
        max_new_tokens=settings.max_new_tokens, temperature=settings.temperature, seed=data_seed,
    )
    del policy
    rewards = score(task, texts, c_ids)
    n = settings.num_sequences
    train = pack(p_ids[:n], c_ids[:n], rewards[:n], tokenizer.pad_token_id, texts[:n])
    held = pack(p_ids[n:], c_ids[n:], rewards[n:], tokenizer.pad_token_id, texts[n:])
    return train, held


def random_token_data(tokenizer, vocab_size: int, n: int, length: int, seed: int) -> SequenceData:
    """Uniform random non-special tokens; every token is compared (no padding)."""
    special = set(tokenizer.all_special_ids or [])
    allowed = torch.tensor([i for i in range(min(len(tokenizer), vocab_size)) if i not in special])
    g = torch.Generator().manual_seed(int(seed) + 1)  # not the sampling stream of the real data
    ids = allowed[torch.randint(len(allowed), (n, length), generator=g)]
    ones = torch.ones((n, length), dtype=torch.long)
    return SequenceData(ids, ones, ones.float(), torch.zeros((n, length)), torch.zeros(n))


def order_generator(data_seed: int, backend: str) -> torch.Generator:
    """Each backend's own shuffling generator: reproducible, but different between backends, as two
    production workers whose DataLoaders draw their shuffle seed from differently-advanced RNGs."""
    return torch.Generator().manual_seed(int(data_seed) * 1_000_003 + zlib.crc32(backend.encode()))


def batch_indices(n: int, batch_size: int, shuffle: bool, generator: torch.Generator | None) -> Iterator[torch.Tensor]:
    """Endless stream of index batches, epoch after epoch; the same order every epoch without shuffle."""
    while True:
        order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
        for start in range(0, n, batch_size):
            yield order[start : start + batch_size]
