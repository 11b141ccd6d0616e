"""Read a transformers `trainer_state.json`: the `log_history` TRL's GRPOTrainer (any release) and Unsloth's
trainers write with every checkpoint, one entry per logged step."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypotrack.cut_short import cut_short, json_read_whole_values, json_unfinished_line
from hypotrack.errors import HypotrackError

from .runlog import RunLog
from .values import decode_text, non_empty, refuse_wrapped

STATE_FILE = "trainer_state.json"
# What the state itself says of the run's setup (the rest of the settings are in training_args.bin).
STATE_PARAMS = ("logging_steps", "max_steps", "train_batch_size")


def load_json(path: Path, said: list[str] | None = None) -> object:
    """A JSON file's content, in the encodings decode_text reads (a Windows editor's byte-order mark, UTF-16).

    Where ``said`` is given (a log of the run's metrics), a file cut short is read up to its last whole value and
    ``said`` gets the sentence that says so: a run killed while writing it, or a copy taken while it was written,
    still holds every step before the cut. Settings are never read from a part of their file."""
    try:
        text = decode_text(path.read_bytes(), said)
        return json.loads(text)
    except OSError as exc:
        raise HypotrackError(f"{path}: cannot read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        line = json_unfinished_line(text, exc.pos)
        whole = json_read_whole_values(text) if line and said is not None else None
        if whole is not None:
            said.append(f"{path.name} ends in the middle of a value, as a run killed while writing it leaves it, "
                        f"or a copy taken while it was written: read up to its last whole value (from line {whole[1]} "
                        "on it is left out)")
            return whole[0]
        raise HypotrackError(f"{path}: not valid JSON: {cut_short(line)}" if line else
                             f"{path}: not valid JSON ({exc})") from None
    except ValueError as exc:  # neither UTF-8 nor UTF-16
        raise HypotrackError(f"{path}: not valid JSON ({exc})") from None


def is_trainer_state(content: object) -> bool:
    return isinstance(content, dict) and isinstance(content.get("log_history"), list)


def read_trainer_state(path: Path, content: object = None) -> RunLog:
    said: list[str] = []
    state = load_json(path, said) if content is None else content
    if not is_trainer_state(state):
        raise HypotrackError(f"{path}: no log_history list (is it a transformers trainer_state.json?)")
    log = RunLog(source=str(path), kind="trainer_state", said=said)
    series = log.series
    for entry in state["log_history"]:  # a long run logs thousands of entries: this loop is the reader's whole cost
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
                refuse_wrapped(value, f"{path}: {key!r} at step {step}")
    for key in STATE_PARAMS:
        if state.get(key) is not None:
            log.params[key] = str(state[key])
    return non_empty(log.sort())
