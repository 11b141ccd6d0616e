"""Read a Jupyter notebook saved with its outputs (a Colab or Kaggle run of TRL or Unsloth, as users commit it): what
its cells printed and drew (the Trainer's progress table, printed dicts, a loop's lines), in the cells' order, read
as a console log is (read_console.py)."""

from __future__ import annotations

from pathlib import Path

from hypotrack.errors import HypotrackError

from .read_console import console_log
from .read_state import load_json
from .runlog import RunLog

NOTEBOOK = ".ipynb"
# What an output holds, in the order read: the Trainer's table is HTML; printed text is a stream or plain text.
MIME_TYPES = ("text/html", "text/plain")


def read_notebook(path: Path) -> RunLog:
    cut_note: list[str] = []  # a notebook cut short is read up to its last whole cell
    notebook = load_json(path, cut_note)
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise HypotrackError(f"{path}: a .ipynb file with no cells: not a Jupyter notebook")
    text = "\n".join(_outputs(cells))
    if not text.strip():
        raise HypotrackError(f"{path}: a notebook saved without its cells' outputs, so it keeps no logged step: save "
                             "it after the training cell ran, or pass the run's trainer_state.json")
    log = console_log(text, str(path), nothing="a notebook whose cells' outputs hold no logged training step")
    log.said += [*cut_note, f"read the outputs of {path.name}'s cells"]
    return log


def _outputs(cells: list) -> list[str]:
    texts = []
    for cell in cells:
        for output in cell.get("outputs", []) if isinstance(cell, dict) else []:
            if not isinstance(output, dict):
                continue
            if output.get("output_type") == "stream":
                texts.append(_text(output.get("text")))
            data = output.get("data") or {}
            texts.extend(_text(data[mime]) for mime in MIME_TYPES if mime in data)
    return texts


def _text(value: object) -> str:
    """An output's text: nbformat keeps it as a string or as a list of lines."""
    return "".join(value) if isinstance(value, list) else value if isinstance(value, str) else ""
