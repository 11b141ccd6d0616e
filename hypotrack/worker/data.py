"""Prompts for a run: from a toy task, a datasets spec or a user loader, truncated on the data side.

GRPOConfig no longer has max_prompt_length, so truncation happens here, where it
can be measured: every row gets `prompt_full_length` and `prompt_truncated`, and
when the experiment declares where the answer lives (`data.answer_span`: the two
columns with its character offsets in the prompt, or `data.answer_text_column`:
text that must survive) every row gets `answer_survived`, which the truncation
hook (h04) reports.

Loading the rows and holding out the last `data.eval_size` of them (the evaluation before and
after training scores those) is hypotrack/data_source.py's, shared with the runner's preflight.
"""

from __future__ import annotations

from typing import Any

from hypotrack.data_source import load_rows, split_heldout  # noqa: F401 - the worker's data entry points
from hypotrack.errors import HypotrackError


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
