"""What launchers and terminals add to a console log's lines, taken off before its lines are read.

A training script's own prints are what the console readers read; a multi-process launcher, a cluster's scheduler or a
logging setup puts something in front of every line (torchrun's `[default0]:`, `srun --label`'s `0: `, a DeepSpeed or
pdsh host's `worker-0: `, MPI's `[1,0]<stdout>:`, Docker Compose's `trainer-1  | `, `kubectl logs --timestamps`' ISO
time, a logger's time and level), a coloured terminal wraps text in ANSI escape codes, and a progress bar's redraws
after a carriage return share the line a script printed. Left on, they hide where a line starts (a step block's
`Step 12`, a table's `Step | Reward`) or add a table cell. ANSI codes and Ray's `(TaskRunner pid=123)` say what they
are wherever they appear, and are always taken off; progress bars are, for the readers that read where a line starts
(without_progress_bars). A launcher's prefix is taken off where PREFIXED_SHARE of the lines or more carry one (a
launcher prefixes every line it relays), and where its form could be the script's own (a bare number, a word with a
digit in it), only where that many carry the very same one, so that a loop that starts each line with its step is
never cut.
"""

from __future__ import annotations

import re

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# A script that prints in Chinese or Japanese may write its separators in their full-width forms ("奖励：0.41", "loss，
# reward"): read as the ASCII characters they stand for (U+FF01-U+FF5E are U+0021-U+007E moved by 0xFEE0), as the
# readers expect them.
FULL_WIDTH = re.compile("[\uff01-\uff5e]")
RAY_PREFIX = re.compile(r"^\((?:[\w.-]+ )?pid=\d+(?:, ip=[\w.:-]+)?\) ?", re.MULTILINE)
# A logger's prefix: a time, a name, a level word and its separator ("2025-03-01 12:00:00,123 - INFO - ", loguru's
# "2025-03-01 12:00:00.123 | INFO     | train:step:42 - "); the block reader also takes it off line by line, where only
# some lines carry it (a script that prints and logs each line).
LOGGER_PREFIX = re.compile(r"^.{0,80}?\b(?:DEBUG|INFO|SUCCESS|WARNING|WARN|ERROR)\b\s*[|:\]-]\s?"
                           r"(?:[\w.<>-]+:[\w.<>-]+:\d+ - )?")
# A launcher's prefix, by what writes it, and whether most lines must carry the very same one: a prefix that names a
# rank or a service is read by its form (every rank's lines are the launcher's), while a bare number or a word with a
# digit in it must be the same on most lines (a loop that starts each line with its step, "12: loss=...", is not cut).
LAUNCHER_PREFIXES = {
    "a logger's": (LOGGER_PREFIX, False),
    "torchrun's": (re.compile(r"^\[(?:default|rank)\d+\]:"), False),
    "MPI's": (re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:"), False),
    "Docker Compose's": (re.compile(r"^[\w.-]+[-_]\d+ +\| "), False),
    "a timestamp": (re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})? "), False),
    "srun --label's": (re.compile(r"^ *\d+: "), True),
    "a host's (DeepSpeed, pdsh)": (re.compile(r"^[A-Za-z][\w.-]*\d[\w.-]*: "), True),
}
# A progress bar's redraw: tqdm's percentage, bar, count and times (" 40%|████  | 4/10 [00:08<00:12, 2.00s/it]"), or
# its count and times where it has no total ("5it [00:10, 2.00it/s]"). One that carries a postfix (tqdm's set_postfix:
# "loss=0.3, reward=0.5") is a loop's log, kept.
PROGRESS_BAR = re.compile(r" *\d+%\|[^|\r\n]*\| *[\d.]+[kMG]?/[\d.]+[kMG]? *(?:\[[^\]\r\n]*\])?"
                          r"| *[\d.]+[kMG]?it \[[^\]\r\n]*\]")
PREFIXED_SHARE = 0.8
SAMPLED_LINES = 2000  # the lines whose prefixes decide: a launcher's is on the first ones as on all


def plain_text(text: str) -> tuple[str, str]:
    """The text without ANSI codes and its launcher's prefix, its full-width separators read as ASCII, and what was
    taken off ('' where nothing was)."""
    taken: list[str] = []
    if FULL_WIDTH.search(text):
        text = FULL_WIDTH.sub(lambda found: chr(ord(found.group()) - 0xFEE0), text)
    if "\x1b" in text:
        text = ANSI_ESCAPE.sub("", text)
        taken.append("the terminal colour codes")
    if "pid=" in text and RAY_PREFIX.search(text):
        text = RAY_PREFIX.sub("", text)
        taken.append("Ray's '(name pid=N)' prefixes")
    lines = text.split("\n")
    sampled = [line for line in lines if line.strip()][:SAMPLED_LINES]
    for who, (prefix, same) in LAUNCHER_PREFIXES.items():
        found = [match.group() for line in sampled if (match := prefix.match(line))]
        if not found:
            continue
        example = max(set(found), key=found.count)
        if (found.count(example) if same else len(found)) < PREFIXED_SHARE * len(sampled):
            continue
        cut = [len(match.group()) if (match := prefix.match(line)) and (not same or match.group() == example) else 0
               for line in lines]
        text = "\n".join(line[at:] for line, at in zip(lines, cut))
        taken.append(f"{who} prefix on every line ({example.strip()!r})")
        break
    return text, " and ".join(taken)


def without_progress_bars(text: str) -> tuple[str, bool]:
    """The text without the progress bars carriage returns interleave with the lines a script printed. A bar (tqdm's)
    redraws itself after `\\r` and clears itself the same way before a line is printed, so a captured log holds its
    every redraw on the printed line's line, before it, after it, or joined to it (a line printed right after a
    redraw). What a carriage return separates is kept as a line each, without its bars. True where a bar was taken.
    For the readers that read a line by where it starts (a table, a step block); the printed dicts' reader reads the
    bars, whose counts pin down the steps its dicts were printed at."""
    if "\r" not in text:
        return text, False
    lines, taken = [], False
    for line in text.split("\n"):
        if "\r" in line.rstrip("\r"):  # CRLF line ends are no redraw
            kept = []
            for part in line.split("\r"):
                rest = PROGRESS_BAR.sub(lambda bar: bar.group() if "=" in bar.group() else "", part)
                taken = taken or rest != part
                if rest.strip():
                    kept.append(rest)
            line = "\n".join(kept)
        lines.append(line)
    return "\n".join(lines), taken
