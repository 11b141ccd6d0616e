"""Prompts for a run: from a toy task, a datasets spec or a user loader, truncated on the data side.

GRPOConfig no longer has max_prompt_length, so truncation happens here, where it
can be measured: every row gets `prompt_full_length` and `prompt_truncated`, and
rows that say where their answer lives (`answer_start`/`answer_end`) get
`answer_survived`, which the truncation hook (h04) reports.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from hypotrack.errors import HypotrackError
from hypotrack.imports import import_object


def load_rows(data: dict[str, Any], seed: int, search_dir: str | Path | None):
    """The raw datasets.Dataset named by an experiment's data section."""
    import datasets

    size = int(data.get("size") or 256)
    if data.get("task"):
        from hypotrack.toy.lab import TASKS, load_dataset

        if data["task"] not in TASKS:
            raise HypotrackError(f"data.task {data['task']!r} is not a toy-lab task (known: {', '.join(TASKS)})")
        return load_dataset(data["task"], size, seed)
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
        return dataset
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
    return dataset


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
    if len(dataset) > int(data.get("size") or len(dataset)):
        dataset = dataset.select(range(int(data["size"])))
    if not isinstance(dataset[0]["prompt"], str):
        return dataset  # conversational prompts: TRL applies the chat template; no data-side truncation
    max_len = data.get("max_prompt_length")
    side = data.get("truncation_side") or "left"
    has_span = "answer_start" in dataset.column_names and "answer_end" in dataset.column_names

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
        if has_span:
            start, end = row["answer_start"], row["answer_end"]
            out["answer_survived"] = None if start is None else bool(kept_start <= start and end <= kept_end)
        return out

    return dataset.map(truncate, desc="truncating prompts" if max_len else None)
