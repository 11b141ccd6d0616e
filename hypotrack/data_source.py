"""Where an arm's rows come from (a toy task, a datasets spec or a user loader) and how many are held out.

Both sides read data: the runner's preflight loads it before anything is recorded, to check the
columns and sizes the experiment names, and the worker loads it to train. They share this module
so that the check sees exactly the rows training will see.

The last `data.eval_size` rows are held out: never trained on, they are what the evaluation before
and after training scores.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from hypotrack.errors import HypotrackError, first_line
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
                             f"{first_line(exc) if str(exc) else ''}") from None
    return dataset, f"dataset {spec!r}"


def heldout_count(rows: int, eval_size: int) -> int:
    """How many of ``rows`` are held out for ``eval_size``: all of them when there are at least as many left
    to train on; otherwise a quarter of the rows, and none under 8 rows."""
    if eval_size and rows < 2 * eval_size:
        return rows // 4 if rows >= 8 else 0
    return eval_size


def split_heldout(dataset, data: dict[str, Any]):
    """(training rows, held-out rows or None): the last eval_size rows are held out, the first `size` train."""
    size = int(data.get("size") or len(dataset))
    eval_size = heldout_count(len(dataset), int(data.get("eval_size") or 0))
    if not eval_size:
        return dataset.select(range(min(size, len(dataset)))), None
    heldout = dataset.select(range(len(dataset) - eval_size, len(dataset)))
    return dataset.select(range(min(size, len(dataset) - eval_size))), heldout
