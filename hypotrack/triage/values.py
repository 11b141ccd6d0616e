"""What every reader of a run's logs shares: how a logged cell becomes a number, the columns that hold the step,
and the one message for a source that holds no numbers at all."""

from __future__ import annotations

import codecs
import re

from hypotrack.errors import HypotrackError

from .runlog import RunLog

# Step columns and keys, in the order a source is searched for one: a tracker's own counter (_step, W&B's row
# number) comes after the trainer's global step, which is what the hypotheses' step windows mean.
STEP_KEYS = ("step", "global_step", "train/global_step", "trainer/global_step", "training/global_step",
             "_step", "Step", "global_step/max_steps",  # ms-swift's, written "10/500"
             "current_steps",  # LLaMA-Factory's trainer_log.jsonl
             "grpo_step", "iteration", "progress/step", "update")  # the last four: hand-written loops
# Else a loop's own counter named for what it counts: outer_step, rl_step, train_step (never step_time or
# time_per_step, which are durations).
LOOP_STEP_KEY = re.compile(r"^(?:[a-z]+_)?step$", re.IGNORECASE)


def step_key(keys: list[str]) -> str | None:
    """The key (or column) that holds the step: the first of STEP_KEYS present, else a loop's own counter."""
    lowered = {key.lower(): key for key in keys}
    named = next((lowered[name.lower()] for name in STEP_KEYS if name.lower() in lowered), None)
    return named or next((key for key in keys if LOOP_STEP_KEY.match(key.strip())), None)


# A step written as a count out of a total, "10/500" (step_number).
STEP_OUT_OF_TOTAL = re.compile(r"^\s*(\d+)\s*/\s*\d+\s*$")
# A number written as an object's text: `tensor(0.4500)`, `tensor(0.45, device='cuda:0')`, `np.float64(0.3)`.
WRAPPED_NUMBER = re.compile(r"^\s*(tensor|(np|numpy|torch)\.\w+)\(\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*[,)]")


def refuse_wrapped(text: str, where: str) -> None:
    """A metric logged as the text of a tensor or numpy scalar would be dropped as "not a number": name it."""
    if WRAPPED_NUMBER.match(text):
        raise HypotrackError(f"{where} holds {text.strip()[:60]!r}: a number logged as the text of a tensor or numpy "
                             "value, which triage cannot read. Log float(value) (or value.item()) instead")


def number(cell: object) -> float | None:
    """A cell as a float: numbers, and numbers written as text ('0.55', as transformers 4.5x prints them; '85.0%', as a
    spreadsheet or a loop writes a share, is 0.85)."""
    if isinstance(cell, bool):
        return None
    if isinstance(cell, (int, float)):
        return float(cell)
    share = isinstance(cell, str) and cell.strip().endswith("%")
    try:
        return float(cell.strip()[:-1]) / 100 if share else float(cell)
    except (TypeError, ValueError):
        return None


def step_number(cell: object) -> float | None:
    """A step's cell as a number: a number, or a count out of a total written as text ("10/500", as ms-swift logs
    its global_step/max_steps), whose count is the step."""
    value = number(cell)
    if value is None and isinstance(cell, str) and (count := STEP_OUT_OF_TOTAL.match(cell)):
        return float(count.group(1))
    return value


def non_empty(log: RunLog) -> RunLog:
    if not log.series:
        raise HypotrackError(f"{log.source}: no numeric metrics logged")
    return log


# Text in no Unicode encoding comes from a Windows program: Excel saves a "CSV" in the system's code page, and a
# Windows path in a trainer_state.json (C:\Users\José\...) or a console's `µs` is written in it. Windows-1252
# reads all but five of the 256 bytes, Latin-1 every one, so no log is refused for its encoding.
LEGACY_ENCODINGS = (("cp1252", "Windows-1252"), ("latin-1", "Latin-1"))
# A character UTF-8 decoded, other than the one it puts for a byte it cannot: the file is UTF-8 with stray bytes.
DECODED_NON_ASCII = re.compile(r"[^\x00-\x7f\ufffd]")


def decode_text(data: bytes, said: list[str] | None = None) -> str:
    """A text file's content, whatever bytes it holds (one bad byte never hides the rest of a log): UTF-8 (with or
    without a byte-order mark) or UTF-16 (Excel's "Unicode text").

    Text that is not UTF-8 is still read, and ``said`` (where given: a log of the run's metrics) gets the sentence
    that says how: UTF-8 with a few bytes that are not (a log cut in the middle of a character, a line another program
    wrote) keeps them as replacement characters; text with no UTF-8 character at all is read as Windows-1252."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16")
    if len(data) >= 4 and data[1] == 0 and data[3] == 0:  # UTF-16 without its mark: ASCII headers, every 2nd byte 0
        return data.decode("utf-16-le")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        first = f"byte 0x{data[exc.start]:02x} at position {exc.start}"
        lenient = data.decode("utf-8-sig", errors="replace")
        if DECODED_NON_ASCII.search(lenient) or exc.start >= len(data) - 3:  # stray bytes in UTF-8, or a cut character
            if said is not None:
                said.append(f"{lenient.count(chr(0xFFFD))} byte(s) of the file are not UTF-8 (the first: {first}): "
                            "read as replacement characters, the rest as UTF-8")
            return lenient
    for codec, name in LEGACY_ENCODINGS:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            continue
        if said is not None:
            said.append(f"the file is not UTF-8 (its {first} begins no UTF-8 character): read as {name}, as "
                        "Windows programs write text (Excel saving a CSV, a Windows path in a trainer_state.json)")
        return text
    raise AssertionError("Latin-1 decodes every byte")
