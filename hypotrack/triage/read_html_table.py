"""Read the progress table transformers' Trainer draws in a notebook (its NotebookProgressCallback; Unsloth's shows
every logged metric in it): an HTML table headed `Step | Training Loss | reward | ... | completions / mean_length`,
one row a logged step, kept in a notebook's saved outputs and in a notebook converted to Markdown or HTML.

The table is redrawn at every log, so a notebook keeps it once, at its last state; where a text holds several, the
last is read (the training that ran last). Its column names are the logged keys with " / " for "/", except the
loss's: "Training Loss" is the training loss, "Validation Loss" the evaluation's. A cell "No Log" is a metric not
logged at that step.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from .runlog import PRIOR_TRAINING, PRIOR_TRAINING_SAID, RunLog
from .values import number

TABLE = re.compile(r"<table\b.*?</table>", re.IGNORECASE | re.DOTALL)
STEP = "step"
# The names the table gives the losses -> the keys the Trainer logged them under.
LOSSES = {"training loss": "loss", "validation loss": "eval_loss"}


def has_progress_table(text: str) -> bool:
    return any(_is_progress(rows) for rows in map(_rows, TABLE.findall(text)))


def read_progress_table(text: str, log: RunLog) -> bool:
    """The last progress table in ``text`` into ``log``; whether there was one."""
    tables = [rows for rows in map(_rows, TABLE.findall(text)) if _is_progress(rows)]
    if not tables:
        return False
    header, *body = tables[-1]
    earlier = [rows for rows in tables[:-1] if not _has_reward(rows[0])]
    if earlier and _has_reward(header):
        log.params[PRIOR_TRAINING] = "1"
        log.said.append(f"the notebook's progress table of {len(earlier[-1]) - 1} logged steps without a reward, "
                        f"before the GRPO one, is an earlier training (a supervised stage): {PRIOR_TRAINING_SAID}")
    keys = [LOSSES.get(name.lower(), re.sub(r"\s*/\s*", "/", name)) for name in header]
    for row in body:
        step = number(row[0]) if row else None
        if step is None:
            continue
        for key, cell in zip(keys[1:], row[1:]):
            log.add(key, int(step), number(cell))  # "No Log" is no number: not logged at that step
    log.said.append(f"read the progress table the Trainer drew in the notebook ({len(body)} logged steps)")
    return True


def _has_reward(header: list[str]) -> bool:
    return any(name.lower().startswith("reward") for name in header)


def _is_progress(rows: list[list[str]]) -> bool:
    return len(rows) > 1 and len(rows[0]) > 1 and rows[0][0].lower() == STEP


def _rows(table: str) -> list[list[str]]:
    cells = _Cells()
    cells.feed(table)
    cells.close()
    return [row for row in cells.rows if row]


class _Cells(HTMLParser):
    """A table's rows as the text of their cells (th and td alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("th", "td") and self.rows:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
