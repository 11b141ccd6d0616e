"""Read metrics a script wrote as JSON records: one object per line (JSONL, W&B's wandb-history.jsonl,
custom metric logs), or a JSON file holding a list of such objects.

Each record is one logged step: its step is the first of values.STEP_KEYS it holds (the trainer's global
step before a tracker's row counter), else its position in the file. A record that says it is an evaluation
pass ("type": "eval") keeps its metrics under eval/, apart from training's. Objects nested in a record are read
with their keys joined by '/' ({"train": {"reward": 1}} is train/reward), except a record's envelope: the object a
logger wraps the step's metrics in beside its step (verl's file logger writes {"step": 3, "data": {"critic/score/mean":
...}}), whose keys are the metrics' own names, and the settings a loop writes beside it ({"config": {...}, "metrics":
{...}}), read as the run's params.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypotrack.errors import HypotrackError

from .keys import END_OF_TRAINING
from .runlog import RunLog
from .values import STEP_KEYS, decode_text, non_empty, number, refuse_wrapped, step_key, step_number


def read_records(path: Path, records: list | None = None, no_metric: str = "") -> RunLog:
    """``records`` when the caller already parsed a JSON list; else the file's lines, one object each. ``no_metric``:
    what the error says of the file where no record holds a number (its caller knows what the file is)."""
    log = RunLog(source=str(path), kind="jsonl")
    if records is None:
        records = _lines(path, log.said)
    counted = 0
    flats = [(position, dict(_flatten(_open_envelope(record)))) for position, record in enumerate(records, start=1)
             if isinstance(record, dict)]
    steps = [step_key([key for key, value in flat.items() if step_number(value) is not None]) for _, flat in flats]
    stepless = [flat for (_, flat), key in zip(flats, steps) if key is None]
    if stepless and len(stepless) < len(flats) / 2:
        # Among records that carry a step, one without is no step (as the CSV reader leaves out a row with none).
        log.said.append(f"{len(stepless)} of the {len(flats)} records carry no step where the others do (the first "
                        f"holds {', '.join(list(stepless[0])[:6])}{', ...' if len(stepless[0]) > 6 else ''}): no step, "
                        "such as a loop's end-of-run summary: left out")
        flats, steps = zip(*[(found, key) for found, key in zip(flats, steps) if key is not None])
    for (position, flat), key_of_step in zip(flats, steps):
        if END_OF_TRAINING in flat:  # transformers' end-of-training summary (ms-swift writes it as a record): no step
            continue
        if _is_evaluation(flat):  # a held-out pass logged among the training rows: kept apart, as eval/<key>
            flat = {key if key in STEP_KEYS or key == key_of_step else f"eval/{key}": value for key, value in flat.items()}
        if key_of_step is None:
            counted += 1
        step = int(step_number(flat[key_of_step]) or 0) if key_of_step else position  # chosen for its number
        for key, value in flat.items():
            if key in STEP_KEYS or key == key_of_step:
                continue
            as_number = number(value)
            if as_number is None and isinstance(value, str):
                refuse_wrapped(value, f"{path}: record {position}, {key!r}")
            log.add(key, step, as_number)
    for key, value in record_settings(records).items():
        log.params.setdefault(key, value)
    if counted:
        log.said.append(f"{counted} record(s) carry no step ({', '.join(STEP_KEYS)}): read at their position in the "
                        "file")
    if not log.series and not log.nonfinite:
        raise HypotrackError(no_metric or f"{path}: JSON records with no numeric metric in them")
    return non_empty(log.sort())


# A record that says what kind of pass it is (a hand-written loop's "type": "eval" among its "rollout" and "train"
# records) under one of these keys, with one of these values, is an evaluation pass.
PASS_KEYS = ("type", "split", "mode", "phase", "stage")
EVALUATION_PASSES = frozenset({"eval", "evaluation", "test", "val", "valid", "validation"})


# Keys a logger wraps a step's metrics in (verl's FileLogger: "data"; a loop's "metrics" beside its "config").
ENVELOPES = ("data", "metrics", "scalars")
# Objects a loop writes into every record that hold its settings, not the step's metrics.
SETTINGS = ("config", "args", "hparams", "hyperparameters")


def _open_envelope(record: dict) -> dict:
    """The record without its settings (read as params by record_settings), and with its envelope's metrics at its top
    level where it has one envelope and nothing else nested."""
    kept = {key: value for key, value in record.items() if not (key in SETTINGS and isinstance(value, dict))}
    nested = [key for key, value in kept.items() if isinstance(value, dict)]
    if len(nested) != 1 or nested[0] not in ENVELOPES:
        return kept
    return {**{key: value for key, value in kept.items() if key != nested[0]}, **kept[nested[0]]}


def record_settings(records: list) -> dict[str, str]:
    """The run's settings where its records carry them (the first record's): beta, learning_rate, ..."""
    first = next((record for record in records if isinstance(record, dict)), {})
    found = next((first[key] for key in SETTINGS if isinstance(first.get(key), dict)), {})
    return {key: str(value) for key, value in found.items() if isinstance(value, (str, int, float, bool))}


def _is_evaluation(record: dict) -> bool:
    return any(str(record.get(key, "")).strip().lower() in EVALUATION_PASSES for key in PASS_KEYS)


def _lines(path: Path, said: list[str]) -> list:
    try:
        text = decode_text(path.read_bytes(), said)
    except (OSError, UnicodeDecodeError) as exc:  # UTF-16 cut in the middle of a character
        raise HypotrackError(f"{path}: cannot read ({exc})") from None
    records = []
    lines = text.splitlines()
    for number_of_line, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number_of_line == len(lines):  # a run killed while writing its last line: the lines before are whole
                said.append(f"the file ends inside its last record (line {number_of_line}), as a run still writing "
                            "it leaves it: the records before it are read")
                break
            raise HypotrackError(f"{path}:{number_of_line}: not a JSON object ({line.strip()[:60]!r}); a JSONL "
                                 "metrics file holds one object per line") from None
    return records


def _flatten(record: dict, prefix: str = "") -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out += _flatten(value, f"{name}/")
        else:
            out.append((name, value))
    return out
