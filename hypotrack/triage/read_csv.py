"""Read a CSV exported from a tracker: a step column and one column per metric, or the long form with step,
key (or metric, or tag) and value columns.

Its delimiter is the one csv.Sniffer finds among DELIMITERS in its first lines: a comma, else the semicolon a
spreadsheet writes in a locale whose decimal mark is the comma (its "0,25" is then read as 0.25), a tab (a .tsv, a
loop's tab-separated print) or a bar.

Several runs in one file are kept apart, one RunLog each: W&B's "<run> - <key>" headers (its __MIN / __MAX
columns are dropped), or a text column that names the run (run, name, experiment, ...; or any text column
that tells apart the rows logged at the same step). A step logged twice within one run is a resumed run.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from hypotrack.cut_short import csv_unfinished_line, cut_short
from hypotrack.errors import HypotrackError

from .runlog import STEPS_ASSUMED, RunLog
from .values import STEP_KEYS, decode_text, non_empty, number, refuse_wrapped, step_key

# Columns that name the run a row belongs to, in exports of several runs.
RUN_COLUMNS = ("run", "run_name", "run name", "run_id", "name", "experiment", "experiment_name", "exp_name",
               "exp", "group")
W_AND_B_SEPARATOR = " - "
# The long form's column of metric names: a tracker's, or TensorBoard's dataframe export (run, tag, step, value).
LONG_FORM_NAMES = ("key", "metric", "tag")
DELIMITERS = ",;\t|"
SNIFFED_LINES = 5
# A number written with a decimal comma, in a file whose cells a semicolon separates.
DECIMAL_COMMA = re.compile(r"[-+]?\d*,\d+(?:[eE][-+]?\d+)?")


def read_csv(path: Path) -> list[RunLog]:
    """Every run the export holds (most hold one)."""
    decoded: list[str] = []  # what decode_text says of a file that is not UTF-8
    rows, text, last_row_line = _rows(path, decoded)
    unfinished = csv_unfinished_line(text, rows, last_row_line)
    if unfinished and len(rows) == 2:
        raise HypotrackError(f"{path}: {cut_short(unfinished)} (its only row is incomplete)")
    if unfinished:  # a run killed while writing its last row, or a copy taken while it was written
        rows = rows[:-1]
        decoded.append(f"the file ends inside its last row (line {unfinished}), as a run still writing it leaves it: "
                       "the rows before it are read")
    return read_rows(path, rows, decoded)


def read_rows(path: Path, rows: list[list[str]], said: list[str], kind: str = "csv") -> list[RunLog]:
    """Every run a table holds, its header first among ``rows`` and each cell as text (a number as a CSV writes it);
    ``said``: what reading the file found, for each run's report."""
    header = [column.strip() for column in rows[0]]
    step_column = step_key(header)
    step_at = header.index(step_column) if step_column is not None else None
    if step_at is None and all(number(cell) is not None for cell in header):
        raise HypotrackError(f"{path}: no header line: its first line holds numbers ({', '.join(rows[0][:6])}"
                             f"{' ...' if len(rows[0]) > 6 else ''}), so no column says which metric it is; add the "
                             "line of column names the script that wrote it leaves out (step,loss,reward,... in the "
                             "order it writes them) and pass the file again")
    body = [(line, row) for line, row in enumerate(rows[1:], start=2) if any(cell.strip() for cell in row)]
    if step_at is None:  # a loop that writes a row a step and no step column: its rows are its steps, in order
        said = [*said, f"no step column ({', '.join(STEP_KEYS[:4])}, ...) in its header ({', '.join(header[:6])}"
                       f"{', ...' if len(header) > 6 else ''}): its rows read as steps 1, 2, ... in the order the file "
                       "holds them"]
        return _read_body(path, header, None, body, list(range(1, len(body) + 1)), said, kind, [])
    # A row with no step at all is no step: a loop's end-of-run summary ("completed,grpo,,,44.5,...").
    stepless = [line for line, row in body if step_at >= len(row) or not row[step_at].strip()]
    body = [(line, row) for line, row in body if line not in stepless]
    steps = []
    for line_number, row in body:
        step = number(row[step_at])
        if step is None:
            raise HypotrackError(f"{path}:{line_number}: the step column {header[step_at]!r} holds "
                                 f"{row[step_at]!r}, not a step number")
        steps.append(int(step))
    return _read_body(path, header, step_at, body, steps, said, kind, stepless)


def _read_body(path: Path, header: list[str], step_at: int | None, body: list[tuple[int, list[str]]],
               steps: list[int], said: list[str], kind: str, stepless: list[int]) -> list[RunLog]:
    """The runs of a table's rows, each at its step (``step_at``'s column, else its position: STEPS_ASSUMED)."""
    lowered = [column.lower() for column in header]
    long_form = next((lowered.index(n) for n in LONG_FORM_NAMES if n in lowered), None)
    value_at = lowered.index("value") if "value" in lowered else None
    run_at = _run_column(header, lowered, body, steps, step_at, skip={long_form, value_at})
    if step_at is None and run_at is not None:  # each run's rows are its steps, counted apart
        counted: Counter[str] = Counter()
        steps = []
        for _, row in body:
            run = row[run_at].strip() if run_at < len(row) else ""
            counted[run] += 1
            steps.append(counted[run])
    logs: dict[str, RunLog] = {}

    def log_of(run: str) -> RunLog:
        if run not in logs:
            logs[run] = RunLog(source=f"{path} [run {run}]" if run else str(path), kind=kind, run=run)
        return logs[run]

    columns = [_split_column(column) for column in header]
    for (line_number, row), step in zip(body, steps):
        row_run = row[run_at].strip() if run_at is not None and run_at < len(row) else ""
        if long_form is not None and value_at is not None:
            log_of(row_run).add(row[long_form], step, number(row[value_at]) if value_at < len(row) else None)
            continue
        for index, cell in enumerate(row):
            if index in (step_at, run_at) or index >= len(header) or not columns[index][1]:
                continue
            run, key = columns[index]
            value = number(cell)
            if value is None:
                refuse_wrapped(cell, f"{path}:{line_number}: column {header[index]!r}")
                continue
            log_of(run or row_run).add(key, step, value)
    if not logs:
        others = [column for index, column in enumerate(header) if index != step_at]
        besides = f" besides its step {header[step_at]!r}" if step_at is not None else ""
        raise HypotrackError(f"{path}: no column of numbers{besides} (its {'other ' if besides else ''}columns: "
                             f"{', '.join(others[:8])}{' ...' if len(others) > 8 else ''}), so no metric to read")
    for log in logs.values():
        log.said += said
        if step_at is None:
            log.params[STEPS_ASSUMED] = "1"
        if stepless:
            log.said.append(f"{len(stepless)} row(s) with an empty {header[step_at]!r} (line {stepless[0]}"
                            f"{' ...' if len(stepless) > 1 else ''}) are no step, such as a summary at the end: "
                            "left out")
    return [non_empty(log.sort()) for log in logs.values()]


def _rows(path: Path, said: list[str]) -> tuple[list[list[str]], str, int]:
    try:
        text = decode_text(path.read_bytes(), said)
        delimiter = _delimiter(text)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        rows, last_row_line = [], 1
        for line, row in iter_rows(reader):
            rows.append(row if delimiter != ";" else
                        [cell.replace(",", ".") if DECIMAL_COMMA.fullmatch(cell.strip()) else cell for cell in row])
            last_row_line = line
    except OSError as exc:
        raise HypotrackError(f"{path}: cannot read ({exc.strerror})") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise HypotrackError(f"{path}: not a readable CSV file ({exc})") from None
    if not rows:
        raise HypotrackError(f"{path}: the file is empty")
    return rows, text, last_row_line


def _delimiter(text: str) -> str:
    """The delimiter of the file's first lines (a comma where they do not tell); only those lines are split off, a
    large export is not split whole for them."""
    head = "\n".join(line.rstrip("\r") for line in text.split("\n", SNIFFED_LINES)[:SNIFFED_LINES])
    try:
        return csv.Sniffer().sniff(head, delimiters=DELIMITERS).delimiter
    except csv.Error:
        return ","


def iter_rows(reader) -> Iterator[tuple[int, list[str]]]:
    """(the line the row starts on, the row) for each row of ``reader``."""
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        yield start, row


def _split_column(column: str) -> tuple[str, str]:
    """(run, key) of a header cell: W&B names columns "<run> - <key>" and adds "<key>__MIN" / "__MAX" (key '')."""
    name = column.strip()
    if name.endswith(("__MIN", "__MAX")):
        return "", ""
    if W_AND_B_SEPARATOR in name:
        run, key = name.rsplit(W_AND_B_SEPARATOR, 1)
        return run.strip(), key.strip()
    return "", name


def _run_column(header: list[str], lowered: list[str], body: list[tuple[int, list[str]]], steps: list[int],
                step_at: int | None, skip: set[int | None]) -> int | None:
    """The column that names each row's run: a column so named that holds text, else the one text column that
    tells apart rows logged at the same step (two runs side by side, not one run resumed)."""
    def text_only(index: int) -> bool:
        cells = [row[index].strip() for _, row in body if index < len(row) and row[index].strip()]
        return bool(cells) and all(number(cell) is None for cell in cells)

    candidates = [i for i in range(len(header)) if i != step_at and i not in skip and text_only(i)]
    named = [i for i in candidates if lowered[i] in RUN_COLUMNS]
    if named:
        return named[0]
    if len(set(steps)) == len(steps):
        return None  # no step logged twice: one run, whatever its text columns say
    for index in candidates:
        keyed = [(row[index].strip() if index < len(row) else "", step) for (_, row), step in zip(body, steps)]
        if len(set(keyed)) == len(keyed) and len({run for run, _ in keyed}) > 1:
            return index
    return None
