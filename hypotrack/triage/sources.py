"""Read a run's logged metrics from where the user has them.

- an MLflow run: its id (32 hex digits) or a `runs:/<id>` URI, on the tracking URI given (else MLflow's
  default); read through hypotrack.tracking, so MLflow is imported only for this kind of source;
- a training output folder (TRL / transformers' `output_dir`): its `trainer_state.json`, else the one
  in its newest `checkpoint-N/`; or that JSON file itself (`log_history` holds every logged step);
- a CSV exported from a tracker: a step column (step, global_step, train/global_step, _step or
  trainer/global_step) and one column per metric, or the long form with step, key (or metric) and
  value columns. W&B exports' "<run> - <key>" headers and their __MIN / __MAX columns are understood.

Every problem is a HypotrackError that names the source and what is wrong with it.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path

from hypotrack.cut_short import csv_unfinished_line, cut_short, json_unfinished_line
from hypotrack.errors import HypotrackError

from .runlog import RunLog

RUN_ID = re.compile(r"^[0-9a-f]{32}$")
STEP_COLUMNS = ("step", "global_step", "train/global_step", "_step", "trainer/global_step")
STATE_FILE = "trainer_state.json"


def read_source(source: str, tracking_uri: str | None = None) -> RunLog:
    path = Path(source).expanduser()
    if path.is_dir():
        return read_trainer_state(_state_file(path))
    if path.is_file():
        if path.suffix.lower() == ".csv":
            return read_csv(path)
        if path.suffix.lower() == ".json":
            return read_trainer_state(path)
        raise HypotrackError(f"{path}: not a source triage reads (a training output folder, its {STATE_FILE}, "
                             "a .csv export, or an MLflow run id)")
    run_id = source[len("runs:/"):].split("/", 1)[0] if source.startswith("runs:/") else source
    if RUN_ID.match(run_id):
        return read_mlflow(run_id, tracking_uri)
    raise HypotrackError(f"{source!r} is neither an existing folder or file nor an MLflow run id (32 hex digits, or "
                         "runs:/<run id>)")


def _state_file(folder: Path) -> Path:
    direct = folder / STATE_FILE
    if direct.is_file():
        return direct
    checkpoints = [(int(m.group(1)), p) for p in folder.glob(f"checkpoint-*/{STATE_FILE}")
                   if (m := re.match(r"checkpoint-(\d+)$", p.parent.name))]
    if checkpoints:
        return max(checkpoints)[1]  # the newest checkpoint's log holds every earlier step too
    raise HypotrackError(f"{folder}: no {STATE_FILE} in the folder or in a checkpoint-N/ folder under it (TRL writes "
                         "one with every checkpoint; trainer.save_state() writes one at the end)")


def read_trainer_state(path: Path) -> RunLog:
    try:
        text = path.read_text(encoding="utf-8")
        state = json.loads(text)
    except OSError as exc:
        raise HypotrackError(f"{path}: cannot read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        line = json_unfinished_line(text, exc.pos)
        raise HypotrackError(f"{path}: not valid JSON: {cut_short(line)}" if line else
                             f"{path}: not valid JSON ({exc})") from None
    except ValueError as exc:  # not UTF-8
        raise HypotrackError(f"{path}: not valid JSON ({exc})") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise HypotrackError(f"{path}: no log_history list (is it a transformers trainer_state.json?)")
    log = RunLog(source=str(path), kind="trainer_state")
    series = log.series
    for entry in history:  # a long run logs thousands of entries: this loop is the reader's whole cost
        step = entry.get("step") if isinstance(entry, dict) else None
        if type(step) is not int:
            continue
        for key, value in entry.items():
            if type(value) in (float, int):
                if math.isfinite(value):
                    series.setdefault(key, []).append((step, float(value)))
                else:  # JSON's Infinity / NaN, as transformers writes a diverged loss
                    log.nonfinite.setdefault(key, []).append((step, float(value)))
            elif isinstance(value, str):
                _refuse_wrapped(value, f"{path}: {key!r} at step {step}")
    for key in ("logging_steps", "max_steps", "train_batch_size"):
        if state.get(key) is not None:
            log.params[key] = str(state[key])
    return _non_empty(log.sort())


def read_csv(path: Path) -> RunLog:
    try:
        text = decode_text(path.read_bytes())
        reader = csv.reader(io.StringIO(text, newline=""))
        rows, last_row_line = [], 1
        for row in iter_rows(reader):
            rows.append(row[1])
            last_row_line = row[0]
    except OSError as exc:
        raise HypotrackError(f"{path}: cannot read ({exc.strerror})") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise HypotrackError(f"{path}: not a readable CSV file ({exc})") from None
    if not rows:
        raise HypotrackError(f"{path}: the file is empty")
    unfinished = csv_unfinished_line(text, rows, last_row_line)
    if unfinished:
        raise HypotrackError(f"{path}: {cut_short(unfinished)} (its last row is incomplete: remove it to read the "
                             "rows before it)")
    header = [_column_name(column) for column in rows[0]]
    lowered = [column.lower() for column in header]
    step_at = next((lowered.index(name) for name in STEP_COLUMNS if name in lowered), None)
    if step_at is None:
        raise HypotrackError(f"{path}: no step column ({', '.join(STEP_COLUMNS)}) in the header line: "
                             f"{', '.join(rows[0][:8])}{' ...' if len(rows[0]) > 8 else ''}")
    log = RunLog(source=str(path), kind="csv")
    long_form = next((lowered.index(n) for n in ("key", "metric") if n in lowered), None)
    value_at = lowered.index("value") if "value" in lowered else None
    for line_number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        step = _number(row[step_at] if step_at < len(row) else "")
        if step is None:
            raise HypotrackError(f"{path}:{line_number}: the step column {header[step_at]!r} holds "
                                 f"{(row[step_at] if step_at < len(row) else '')!r}, not a step number")
        if long_form is not None and value_at is not None:
            log.add(row[long_form], int(step), _number(row[value_at]) if value_at < len(row) else None)
            continue
        for index, cell in enumerate(row):
            if index != step_at and index < len(header) and header[index]:
                value = _number(cell)
                if value is None:
                    _refuse_wrapped(cell, f"{path}:{line_number}: column {header[index]!r}")
                log.add(header[index], int(step), value)
    return _non_empty(log.sort())


def iter_rows(reader) -> Iterator[tuple[int, list[str]]]:  # noqa: ANN001 - a csv reader
    """(the line the row starts on, the row) for each row of ``reader``."""
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        yield start, row


def _column_name(column: str) -> str:
    """W&B exports name columns "<run name> - <key>" and add "<key>__MIN" / "__MAX" columns (dropped: '')."""
    name = column.strip()
    if name.endswith(("__MIN", "__MAX")):
        return ""
    return name.rsplit(" - ", 1)[-1].strip()


def decode_text(data: bytes) -> str:
    """A CSV export's text: UTF-8 (with or without a byte-order mark) or UTF-16 (Excel's "Unicode text")."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16")
    if len(data) >= 4 and data[1] == 0 and data[3] == 0:  # UTF-16 without its mark: ASCII headers, every 2nd byte 0
        return data.decode("utf-16-le")
    return data.decode("utf-8-sig")


# A number written as an object's text: `tensor(0.4500)`, `tensor(0.45, device='cuda:0')`, `np.float64(0.3)`.
WRAPPED_NUMBER = re.compile(r"^\s*(tensor|(np|numpy|torch)\.\w+)\(\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*[,)]")


def _refuse_wrapped(text: str, where: str) -> None:
    """A metric logged as the text of a tensor or numpy scalar would be dropped as "not a number": name it."""
    if WRAPPED_NUMBER.match(text):
        raise HypotrackError(f"{where} holds {text.strip()[:60]!r}: a number logged as the text of a tensor or numpy "
                             "value, which triage cannot read. Log float(value) (or value.item()) instead")


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except (TypeError, ValueError):
        return None


def read_mlflow(run_id: str, tracking_uri: str | None) -> RunLog:
    from hypotrack.tracking import RunNotFound, read_run

    try:
        series, params, uri = read_run(run_id, tracking_uri)
    except RunNotFound as exc:
        raise HypotrackError(str(exc)) from None
    log = RunLog(source=f"runs:/{run_id} on {uri}", kind="mlflow", params=params)
    for key, points in series.items():
        for step, value in points:
            log.add(key, step, value)
    return _non_empty(log.sort())


def _non_empty(log: RunLog) -> RunLog:
    if not log.series:
        raise HypotrackError(f"{log.source}: no numeric metrics logged")
    return log
