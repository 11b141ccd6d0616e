"""Prompts for a run: from a toy task, a datasets spec or a user loader, truncated on the data side.

GRPOConfig no longer has max_prompt_length, so truncation happens here, where it
can be measured: every row gets `prompt_full_length` and `prompt_truncated`, and
when the experiment declares where the answer lives (`data.answer_span`: the two
columns with its character offsets in the prompt, or `data.answer_text_column`:
text that must survive) every row gets `answer_survived`, which the truncation
hook (h04) reports.

The last `data.eval_size` rows are held out: never trained on, they are what the
evaluation before and after training (evaluation.py) scores.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from hypotrack.errors import HypotrackError
from hypotrack.imports import import_object


def load_rows(data: dict[str, Any], seed: int, search_dir: str | Path | None):
    """The raw datasets.Dataset named by an experiment's data section (training rows, then held-out rows)."""
    dataset, source = _load(data, seed, search_dir)
    if len(dataset) == 0:
        raise HypotrackError(f"{source} gave no rows: a run needs prompts to train on")
    return dataset


def _load(data: dict[str, Any], seed: int, search_dir: str | Path | None):
    """(the dataset, how to name where it came from in an error)."""
    import datasets

    size = int(data.get("size") or 256) + int(data.get("eval_size") or 0)
    if data.get("task"):
        from hypotrack.toy.lab import TASKS, load_dataset

        if data["task"] not in TASKS:
            raise HypotrackError(f"data.task {data['task']!r} is not a toy-lab task (known: {', '.join(TASKS)})")
        return load_dataset(data["task"], size, seed), f"toy task {data['task']!r}"
    if data.get("loader"):
        loader = import_object(data["loader"], search_dir, "dataset loader")
        params = inspect.signature(loader).parameters
        kwargs = {k: v for k, v in (("n", size), ("seed", seed)) if k in params}
        try:
            dataset = loader(**kwargs)
        except Exception as exc:  # noqa: BLE001 - user code
            raise HypotrackError(f"dataset loader {data['loader']!r} raised {type(exc).__name__}: {exc}") from None
        if not isinstance(dataset, datasets.Dataset):
            raise HypotrackError(f"dataset loader {data['loader']!r} returned {type(dataset).__name__}, "
                                 "not a datasets.Dataset")
        return dataset, f"dataset loader {data['loader']!r}"
    spec = data["dataset"]
    name, config, split = ([*spec.split(","), "", ""])[:3]
    local = Path(name).expanduser()
    try:
        if local.is_dir() and any((local / name).exists() for name in ("dataset_info.json", "state.json", "dataset_dict.json")):
            dataset = datasets.load_from_disk(str(local))
            if isinstance(dataset, datasets.DatasetDict):
                dataset = dataset[split or "train"]
        else:
            dataset = datasets.load_dataset(name, config or None, split=split or "train")
    except Exception as exc:  # noqa: BLE001 - the hub, files and builders fail in many ways
        raise HypotrackError(f"dataset {spec!r} could not be loaded: {type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    return dataset, f"dataset {spec!r}"


def split_heldout(dataset, data: dict[str, Any]):
    """(training rows, held-out rows or None): the last eval_size rows are held out, the first `size` train.

    A dataset too small to spare them (fewer than twice eval_size rows) gives up a quarter of its rows
    instead, and one under 8 rows keeps them all for training (no held-out evaluation)."""
    size, eval_size = int(data.get("size") or len(dataset)), int(data.get("eval_size") or 0)
    if eval_size and len(dataset) < 2 * eval_size:
        eval_size = len(dataset) // 4 if len(dataset) >= 8 else 0
    if not eval_size:
        return dataset.select(range(min(size, len(dataset)))), None
    heldout = dataset.select(range(len(dataset) - eval_size, len(dataset)))
    return dataset.select(range(min(size, len(dataset) - eval_size))), heldout


def prepare_prompts(dataset, tokenizer, data: dict[str, Any]):
    """Rename the prompt column, truncate to max_prompt_length tokens, add the truncation columns."""
    column = data.get("prompt_column") or "prompt"
    if column not in dataset.column_names:
        raise HypotrackError(f"the dataset has no column {column!r} (columns: {', '.join(dataset.column_names)}); "
                             "set data.prompt_column")
    if column != "prompt":
        if "prompt" in dataset.column_names:
            dataset = dataset.remove_columns("prompt")
        dataset = dataset.rename_column(column, "prompt")
    span, text_column = data.get("answer_span"), data.get("answer_text_column")
    declared = {"data.answer_span": span or [], "data.answer_text_column": [text_column] if text_column else [],
                "data.reference_column": [data["reference_column"]] if data.get("reference_column") else []}
    for key, names in declared.items():
        for name in names:
            if name not in dataset.column_names:
                raise HypotrackError(f"{key} names the column {name!r}, which the dataset does not have "
                                     f"(columns: {', '.join(dataset.column_names)})")
    if not isinstance(dataset[0]["prompt"], str):
        return dataset  # conversational prompts: TRL applies the chat template; no data-side truncation
    max_len = data.get("max_prompt_length")
    side = data.get("truncation_side") or "left"

    def truncate(row: dict[str, Any]) -> dict[str, Any]:
        text = row["prompt"]
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = encoded["offset_mapping"]
        full = len(offsets)
        out: dict[str, Any] = {"prompt_full_length": full, "prompt_truncated": False}
        kept_start, kept_end = 0, len(text)
        if max_len and full > max_len:
            kept = offsets[-max_len:] if side == "left" else offsets[:max_len]
            kept_start, kept_end = kept[0][0], kept[-1][1]
            out["prompt"] = text[kept_start:kept_end]
            out["prompt_truncated"] = True
        if span:
            start, end = row[span[0]], row[span[1]]
            out["answer_survived"] = None if start is None else bool(kept_start <= start and end <= kept_end)
        elif text_column:
            needle = row[text_column]
            out["answer_survived"] = None if not needle else str(needle) in text[kept_start:kept_end]
        return out

    return dataset.map(truncate, desc="truncating prompts" if max_len else None)
