"""Read the metrics a loop saved as one JSON object that is not a trainer_state.json: the tables in it.

A loop that `json.dump`s its run at the end keeps its steps in whatever shape it built them: one list of values per
metric ({"reward": [...], "loss": [...]}, with a "step" list beside them or not), a list of per-step records under a
key ({"config": {...}, "history": [{"step": 1, "reward": ...}, ...]}), one list per pass ({"train": [...], "eval":
[...]}), at the top level or inside an object ({"results": {"metrics": {...}}}). Every such table down to TABLE_DEPTH
levels is read: records as read_jsonl reads a JSON list of them, lists of values at the table's own step list where it
has one of the same length, else as steps 1, 2, ... (STEPS_ASSUMED). A table under a key that names an evaluation pass
keeps its metrics under eval/, apart from training's; where two training tables log the same name, each keeps its
own under its key (rollout/reward, train/reward). The object's settings (its "config", "args", ...) are the run's
params. An object with no table in it is one record, as before, and one with no number in it either is said to be so.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from hypotrack.errors import HypotrackError

from .keys import END_OF_TRAINING
from .read_jsonl import EVALUATION_PASSES, SETTINGS, read_records, record_settings
from .runlog import STEPS_ASSUMED, RunLog
from .values import non_empty, number, step_key

# How many objects down a table is looked for: {"results": {"train": {"history": [...]}}} is three.
TABLE_DEPTH = 3
# A table has at least this many steps: a list of two values is a pair (a range, a shape), not a run's history.
MIN_TABLE_STEPS = 3
# ... but a list of per-step records is a history at any length (a run stopped after its first steps): read where
# the object holds no longer table, so that a short list of records beside a run's history is no second table.
MIN_SHORT_RECORDS = 1


@dataclass(frozen=True)
class Table:
    where: tuple[str, ...]  # the keys that lead to it
    records: list | None = None  # a list of per-step records
    columns: dict[str, list] | None = None  # an object's lists of numbers, one metric's values each

    @property
    def name(self) -> str:
        return "/".join(self.where)

    @property
    def evaluation(self) -> bool:
        return any(key.strip().lower() in EVALUATION_PASSES or key.lower().startswith("eval") for key in self.where)

    def size(self) -> int:
        if self.records is not None:
            return len(self.records)
        return max(len(values) for values in self.columns.values())


def read_object(path: Path, content: dict) -> RunLog:
    """A JSON object that is not a trainer_state: the tables in it, else the object as one record."""
    tables = tables_in(content)
    if tables:
        return read_tables(path, content, tables)
    keys = ", ".join(map(str, list(content)[:8])) + (", ..." if len(content) > 8 else "")
    if END_OF_TRAINING in content:
        raise HypotrackError(f"{path}: transformers' end-of-training summary ({keys}): the run's totals, not its "
                             "history; pass the trainer_state.json beside it (or the output folder that holds it), "
                             "its TensorBoard event files or the console log it printed")
    return read_records(path, [content], no_metric=(
        f"{path}: one JSON object with no metric in it: no number under its keys ({keys}), nor a list of per-step "
        f"records or of {MIN_TABLE_STEPS} values or more; pass the log the run wrote as it trained (its "
        "trainer_state.json or output folder, its TensorBoard event files, a JSONL of its steps)"))


def tables_in(content: dict) -> list[Table]:
    """The tables of a JSON object, outermost first; none where it holds none (it is then one record)."""
    return _tables(content, (), 0, MIN_TABLE_STEPS) or _tables(content, (), 0, MIN_SHORT_RECORDS, columns=False)


def read_tables(path: Path, content: dict, tables: list[Table]) -> RunLog:
    """One run from the tables found in ``content`` (tables_in)."""
    parts = [(table, _read_table(path, table)) for table in tables]
    logged = Counter(key for table, part in parts if not table.evaluation for key in {*part.series, *part.nonfinite})
    shared = {key for key, count in logged.items() if count > 1}
    log = RunLog(source=str(path), kind="jsonl")
    for table, part in parts:
        log.take_metrics(part, partial(_metric_name, table, shared))
        log.said += [said for said in part.said if said not in log.said]
        for key, value in part.params.items():
            log.params.setdefault(key, value)
    for key, value in record_settings([content]).items():
        log.params.setdefault(key, value)
    if [table.where for table in tables] != [()]:  # not only the plain {metric: [values]} object
        log.said.insert(0, _where_said(path, tables))
    return non_empty(log.sort())


def _metric_name(table: Table, shared: set[str], key: str) -> str:
    if table.evaluation:  # its records may say so themselves ("type": "eval"), read as eval/ already
        return key if key.startswith("eval/") else f"eval/{key}"
    return f"{table.name}/{key}" if key in shared else key


def _tables(value: object, where: tuple[str, ...], depth: int, fewest: int, columns: bool = True) -> list[Table]:
    """Tables of at least ``fewest`` steps; lists of values too where ``columns``."""
    if isinstance(value, list):
        return [Table(where, records=value)] if where and _is_record_table(value, fewest) else []
    if not isinstance(value, dict):
        return []
    lists = _numeric_lists(value) if columns else {}
    found = [Table(where, columns=lists)] if lists else []
    if depth < TABLE_DEPTH:
        for key, item in value.items():
            if not (key in SETTINGS and isinstance(item, dict)):
                found += _tables(item, (*where, str(key)), depth + 1, fewest, columns)
    return found


def _is_record_table(items: list, fewest: int) -> bool:
    """Per-step records: most items are objects, and they hold numbers."""
    records = [item for item in items if isinstance(item, dict)]
    return (len(records) >= fewest and len(records) * 2 >= len(items)
            and any(number(value) is not None for record in records for value in record.values()))


def _numeric_lists(columns: dict) -> dict[str, list]:
    """The object's lists of numbers (None where a step had no value), each one metric's values."""
    return {str(key): values for key, values in columns.items()
            if isinstance(values, list) and len(values) >= MIN_TABLE_STEPS
            and all(value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
                    for value in values)
            and any(value is not None for value in values)}


def _read_table(path: Path, table: Table) -> RunLog:
    if table.records is not None:
        return read_records(path, table.records)
    log = RunLog(source=str(path), kind="jsonl")
    lists = dict(table.columns)
    step_name = step_key(list(lists))
    steps = lists.pop(step_name) if step_name else None
    for key, values in lists.items():
        own_steps = steps if steps is not None and len(steps) == len(values) else range(1, len(values) + 1)
        for step, value in zip(own_steps, values):
            if step is not None:  # a step list with a gap has no step for that value
                log.add(key, int(step), value)
        if own_steps is not steps:
            log.params[STEPS_ASSUMED] = "1"
    if log.params.get(STEPS_ASSUMED):
        where = f" under {table.name!r}" if table.where else ""
        log.said.append(f"{path.name} holds one list of values per metric{where}, without steps: read as steps 1, 2, "
                        "...")
    return log


def _where_said(path: Path, tables: list[Table]) -> str:
    def one(table: Table) -> str:
        kind = f"{table.size()} records" if table.records is not None else f"lists of {table.size()} values"
        where = f"under {table.name!r}" if table.where else "at its top level"
        return f"{where} ({kind}{', an evaluation pass: kept apart as eval/' if table.evaluation else ''})"
    return f"{path.name} is one JSON object holding its steps {'; '.join(one(table) for table in tables)}: read from there"
