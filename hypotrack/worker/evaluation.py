"""The held-out evaluation: the policy before and after training, on rows it never trained on.

Before the first step and after the last, the arm generates one completion per held-out prompt,
greedy and sampled (at the run's temperature), and scores them with the run's own reward
functions, called the way TRL calls them. Logged as `eval/task_reward/<decoding>` (the task
reward by role), `eval/reward/<decoding>` (the weighted sum TRL trains on) at step 0 and at the
last step, and their `<decoding>_gain` (after minus before) at the last step, in every arm, so
a criterion or the treatment effect can read whether training made the model better at the task.

Generation runs outside the trainer (hooks do not see it) under its own RNG state, so the training
trajectory is the same with or without the evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DECODINGS = ("greedy", "sampled")


@dataclass
class EvalSetup:
    rows: Any  # datasets.Dataset of held-out rows, prompts prepared like the training prompts
    rewards: list[Callable[..., list[float | None]]]
    weights: list[float]
    task_index: int
    max_new_tokens: int
    temperature: float
    seed: int
    batch_size: int = 32


def evaluate(model, tokenizer, setup: EvalSetup) -> dict[str, float]:
    """{"eval/task_reward/greedy": ..., "eval/reward/greedy": ..., and the same for sampled}."""
    import torch

    out: dict[str, float] = {}
    was_training = model.training
    model.eval()
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(setup.seed)
            for decoding in DECODINGS:
                completions, completion_ids = _sample(model, tokenizer, setup, sample=decoding == "sampled")
                task, combined = _score(setup, completions, completion_ids)
                out[f"eval/task_reward/{decoding}"] = task
                out[f"eval/reward/{decoding}"] = combined
    finally:
        if was_training:
            model.train()
    return out


def gains(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """after - before for each evaluation figure, as `<figure>_gain`, and for the task reward also relative to
    where it started, as `<figure>_rel_gain` (-0.5: training lost half of what the model could do)."""
    out = {f"{key}_gain": after[key] - before[key] for key in after if key in before}
    for key in after:
        if key.startswith("eval/task_reward/") and key in before and before[key]:
            out[f"{key}_rel_gain"] = (after[key] - before[key]) / abs(before[key])
    return out


def _prompt_texts(tokenizer, prompts: list) -> list[str]:
    if prompts and not isinstance(prompts[0], str):  # conversational: the chat template TRL would apply
        return [tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=False) for p in prompts]
    return list(prompts)


def _sample(model, tokenizer, setup: EvalSetup, sample: bool):
    """Completion texts (in the prompts' format) and token ids for every held-out row."""
    prompts = list(setup.rows["prompt"])
    texts = _prompt_texts(tokenizer, prompts)
    chat = bool(prompts) and not isinstance(prompts[0], str)  # the chat template already holds special tokens
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    completions, ids_out = [], []
    try:
        for start in range(0, len(texts), setup.batch_size):
            batch = tokenizer(texts[start:start + setup.batch_size], return_tensors="pt", padding=True,
                              add_special_tokens=not chat).to(model.device)
            kwargs: dict[str, Any] = dict(max_new_tokens=setup.max_new_tokens, pad_token_id=tokenizer.pad_token_id)
            if sample:
                kwargs.update(do_sample=True, temperature=setup.temperature, top_p=1.0, top_k=0)
            else:
                kwargs.update(do_sample=False)
            generated = model.generate(**batch, **kwargs)[:, batch["input_ids"].size(1):]
            for row in generated.tolist():
                if tokenizer.eos_token_id in row:
                    row = row[:row.index(tokenizer.eos_token_id) + 1]
                ids_out.append(row)
                text = tokenizer.decode(row, skip_special_tokens=True)
                completions.append(text if isinstance(prompts[0], str) else [{"role": "assistant", "content": text}])
    finally:
        tokenizer.padding_side = side
    return completions, ids_out


def _score(setup: EvalSetup, completions: list, completion_ids: list) -> tuple[float, float]:
    """(mean task reward, mean weighted reward): TRL's call signature, None scores left out of the means."""
    columns = {k: list(setup.rows[k]) for k in setup.rows.column_names if k not in ("prompt", "completion")}
    per_function = []
    for func in setup.rewards:
        scores = func(prompts=list(setup.rows["prompt"]), completions=completions, completion_ids=completion_ids,
                      **columns)
        per_function.append([None if s is None else float(s) for s in scores])
    task_scores = [s for s in per_function[setup.task_index] if s is not None and s == s]
    combined = []
    for row in zip(*per_function):
        if all(s is None or s != s for s in row):
            continue
        combined.append(sum(w * s for w, s in zip(setup.weights, row) if s is not None and s == s))
    task = sum(task_scores) / len(task_scores) if task_scores else float("nan")
    total = sum(combined) / len(combined) if combined else float("nan")
    return task, total
