"""The data an experiment names, read before anything is recorded: every column and size it names, checked
against the rows training would get, and reported at the experiment's file:line.

The rows come from hypotrack/data_source.py, the worker's own loader: a user loader is called as
the worker calls it, a local dataset is read, a toy task draws a few rows, and a hub dataset is
looked up by its metadata (features and split sizes) without downloading it. A size is refused
only when the file (or a flag) asks for it: a default adapts to the data, as the worker adapts it.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from hypotrack.data_source import heldout_count, load_rows
from hypotrack.definitions.models import DataSpec
from hypotrack.definitions.yamlio import YamlDoc, YamlSyntaxError, dotted, read_yaml
from hypotrack.errors import HypotrackError
from hypotrack.imports import import_object
from hypotrack.protocol import ArmSpec

# What TRL's GRPOTrainer passes every reward function besides the dataset's columns (trl 1.16,
# its reward seam), and the columns the worker adds to each row (worker/data.py).
TRL_REWARD_ARGUMENTS = {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
                        "environments"}
WORKER_COLUMNS = {"prompt_full_length", "prompt_truncated", "answer_survived"}
# The keys of `data:` that name columns of the rows.
COLUMN_KEYS = ("prompt_column", "answer_span", "answer_text_column", "reference_column")


class DataFacts:
    """What preflight knows of the rows: their columns and count (None where unknown), and how to name them."""

    def __init__(self, source: str, columns: list[str] | None, rows: int | None) -> None:
        self.source, self.columns, self.rows = source, columns, rows


def check_data(specs: list[ArmSpec]) -> None:
    """Raise HypotrackError, naming the experiment's file and line, for the first column or size the data lacks."""
    seen: set[str] = set()
    for spec in specs:
        key = json.dumps([spec.data, spec.rewards, spec.experiment_dir, spec.experiment_name], sort_keys=True,
                         default=str)
        if key in seen:
            continue
        seen.add(key)
        lines = ExperimentLines(spec)
        facts = _facts(spec, lines)
        if facts.columns is not None:
            _check_columns(spec, facts, lines)
            _check_reward_arguments(spec, facts, lines)
        if facts.rows is not None:
            _check_sizes(spec, facts, lines)


class ExperimentLines:
    """``file:line: key`` of a key in the arm's experiment file, for messages; just the key without the file."""

    def __init__(self, spec: ArmSpec) -> None:
        folder = Path(spec.experiment_dir)
        path = next((folder / f"{spec.experiment_name}{suffix}" for suffix in (".yaml", ".yml")
                     if (folder / f"{spec.experiment_name}{suffix}").exists()), None)
        self.doc: YamlDoc | None = None
        if path is not None:
            try:
                self.doc = read_yaml(path)
            except (OSError, YamlSyntaxError):
                self.doc = None

    def where(self, *loc: Any) -> str:
        if self.doc is None:
            return dotted(loc)
        return f"{self.doc.path}:{self.doc.line_of(loc)}: {dotted(loc)}"

    def written(self, *loc: Any) -> bool:
        """Whether the file gives this key itself (else its value is a default or came from a flag)."""
        return self.doc is not None and tuple(loc) in self.doc.lines


def _facts(spec: ArmSpec, lines: ExperimentLines) -> DataFacts:
    data = spec.data
    try:
        if data.get("task"):  # a toy task draws as many rows as it is asked for: a few show its columns
            rows = load_rows({**data, "size": 4, "eval_size": 0}, spec.seed, spec.experiment_dir)
            return DataFacts(f"toy task {data['task']!r}", rows.column_names, None)
        if data.get("dataset") and not _is_local(data["dataset"]):
            return _hub_facts(data["dataset"])
        rows = load_rows(data, spec.seed, spec.experiment_dir)
    except HypotrackError as exc:
        source = "loader" if data.get("loader") else "dataset"
        raise HypotrackError(f"{lines.where('data', source)}: {exc}") from None
    source = f"dataset loader {data['loader']!r}" if data.get("loader") else f"dataset {data['dataset']!r}"
    return DataFacts(source, rows.column_names, len(rows))


def _is_local(dataset: str) -> bool:
    name = dataset.split(",")[0]
    return Path(name).expanduser().exists() or name.startswith((".", "/", "~"))


def _hub_facts(dataset: str) -> DataFacts:
    """A hub dataset's features and split size from its metadata; None for what the metadata does not say."""
    name, config, split = ([*dataset.split(","), "", ""])[:3]
    source = f"dataset {dataset!r}"
    try:
        from datasets import ReadInstruction, load_dataset_builder

        info = load_dataset_builder(name, config or None).info
    except Exception:  # noqa: BLE001 - reported by preflight's own lookup; nothing more to learn here
        return DataFacts(source, None, None)
    columns = list(info.features) if info.features else None
    rows = None
    if info.splits:
        try:
            sizes = {key: value.num_examples for key, value in info.splits.items()}
            spans = ReadInstruction.from_spec(split or "train").to_absolute(sizes)
            rows = sum(span.to_index - span.from_index for span in spans)
        except Exception:  # noqa: BLE001 - a split the metadata does not describe: the count stays unknown
            rows = None
    return DataFacts(source, columns, rows)


def _names(data: dict[str, Any], key: str) -> list[str]:
    value = data.get(key)
    if key == "prompt_column":
        return [value or "prompt"]
    if not value:
        return []
    return list(value) if isinstance(value, list) else [value]


def _check_columns(spec: ArmSpec, facts: DataFacts, lines: ExperimentLines) -> None:
    for key in COLUMN_KEYS:
        for name in _names(spec.data, key):
            if name not in facts.columns:
                raise HypotrackError(f"{lines.where('data', key)}: names the column {name!r}, which the "
                                     f"{facts.source} does not have (columns: {', '.join(facts.columns)})")


def _check_reward_arguments(spec: ArmSpec, facts: DataFacts, lines: ExperimentLines) -> None:
    """A reward function's required arguments must be ones TRL passes: its own, or a column of the rows."""
    prompt = _names(spec.data, "prompt_column")[0]
    passed = (set(facts.columns) - {prompt, "prompt", "completion"}) | WORKER_COLUMNS | TRL_REWARD_ARGUMENTS
    written = lines.doc.data.get("rewards") if lines.doc is not None and isinstance(lines.doc.data, dict) else None
    for path in spec.rewards:
        try:
            parameters = inspect.signature(import_object(path, spec.experiment_dir, "reward function")).parameters
        except (TypeError, ValueError):  # a builtin or C callable: no signature to read
            continue
        missing = [p.name for p in parameters.values() if p.default is inspect.Parameter.empty
                   and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in passed]
        if missing:
            index = written.index(path) if isinstance(written, list) and path in written else None
            where = lines.where("rewards", index) if index is not None else lines.where("rewards")
            raise HypotrackError(f"{where}: reward function {path!r} takes the argument {missing[0]!r}, which is "
                                 f"not a column of the {facts.source} (columns: {', '.join(facts.columns)}) nor one "
                                 f"TRL passes ({', '.join(sorted(TRL_REWARD_ARGUMENTS))}); TRL would stop at the "
                                 "first step with a TypeError. Add the column, or give the argument a default")


def _check_sizes(spec: ArmSpec, facts: DataFacts, lines: ExperimentLines) -> None:
    rows, data = facts.rows, spec.data
    eval_size, size = int(data.get("eval_size") or 0), int(data.get("size") or 0)
    held = heldout_count(rows, eval_size)
    if held != eval_size and _asked(lines, data, "eval_size"):
        raise HypotrackError(f"{lines.where('data', 'eval_size')}: {eval_size} held-out rows, and the "
                             f"{facts.source} gives {rows}: holding out {eval_size} needs at least {2 * eval_size} "
                             f"(as many left to train on), so the evaluation would quietly use {held}. Give "
                             f"eval_size {rows // 2} or less, or 0 for no held-out evaluation")
    if size > rows - held and _asked(lines, data, "size"):
        of_them = f", {held} of them held out (eval_size)" if held else ""
        raise HypotrackError(f"{lines.where('data', 'size')}: {size} training rows, and the {facts.source} gives "
                             f"{rows}{of_them}: {rows - held} are left to train on. Give size {rows - held} or less")


def _asked(lines: ExperimentLines, data: dict[str, Any], key: str) -> bool:
    """A size the file or a flag asked for (refused when the data cannot give it); a default adapts instead."""
    return lines.written("data", key) or data.get(key) != DataSpec.model_fields[key].default
