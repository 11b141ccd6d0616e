"""Read a training console log: what a run printed, as a user keeps it (`python train.py | tee train.log`).

- transformers' Trainer prints each logged step as a Python dict, `{'loss': 0.01, 'reward': 0.5, ...,
  'epoch': 0.02}` (transformers 4.5x writes the numbers as text: `'loss': '0.01'`), among tqdm's progress
  bars, warnings and the script's own prints. The dict's step is its own where it holds one (ms-swift prints
  `'global_step/max_steps': '10/500'`), else the one its line names before it (OpenRLHF's `Global step 12: {...}`),
  else the training bar's printed just before it (`  5/100 [00:10<...]`), else counted in logging_steps. A script
  that trains twice (an SFT warm-up, then GRPO) prints both: the last GRPO training is read, and the report says so;
- verl prints `step:12 - critic/score/mean:0.51 - actor/entropy:1.2 - ...` once a step;
- a hand-written loop prints a table (by hand, tabulate or rich): a header row of column names, one of them the
  step, and a row of numbers a step beneath it, the cells split by `|` or a box line, `Step | Reward |  KL` then
  `  12 |  0.250 | 0.01`; its column names are read as keys (lower case, spaces as `_`: `Grad Norm` is
  grad_norm), where neither of the above is found;
- a hand-written loop prints a progress line a step, `  12/100 | loss=0.0123 | reward=0.250`, `step 12
  loss=0.01 reward=0.25` or `Epoch:[1/1](12/500), Reward: 0.31, KL_ref: 0.002, Avg Len: 129`: its step, then its
  key=value or `Name: value` pairs, read where none of the above is found. The step is `step 12`, or a count out of
  a total printed before the pairs (one after them, `Rewards: [1, 0] (1/2 rendered)`, is not the step), the run's
  steps where the line also counts epochs (`[1/1](12/500)`: the larger total). A name of
  words is read lower case with `_` for its spaces (`Avg Response Len` is avg_response_len), and as keys.py reads
  a hand-written loop's names (`avg_loss` is the loss, `acc` an accuracy, `KL_ref` the kl); a count out of a total
  (`correct=3/4`) is its share, and a list (`rewards=[0, 1]`, `rewards=['0.80', '0.01']`, or an array as torch and
  numpy print it, `rewards: tensor([1., -1.])` as simple_GRPO does, wrapped over several lines) its mean. A list of
  rewards is the completions' own: its spread is the step's reward_std, and where every such list of the log holds
  at most GROUP_LIST_MAX rewards it is read as one group (a hand-written loop prints the group it just scored), tied
  when every reward in it is the same (frac_reward_zero_std 1, else 0);
- a hand-written loop prints a step as a block of lines, `Step 12: sampled 8 prompts` or `=== ROLLOUT DETAILS
  (Step 12) ===`, then one quantity a line (`  Loss: 0.04`, `Rewards: min=0.2, mean=0.5, std=0.4`), read where none
  of the above is found (_step_blocks);
- a hand-written loop prints the same pairs every step with no step on the line (`rl_loss: 0.01, l2_norm: 0.14,
  token_entropy: 0.82`): those lines, in order, are its steps, read where none of the above is found.
"""

from __future__ import annotations

import ast
import json
import re
import statistics
from collections import Counter

from hypotrack.errors import HypotrackError

from .console_prefixes import LOGGER_PREFIX, plain_text, without_progress_bars
from .keys import END_OF_TRAINING, EVAL_PREFIXES, canonical_name, evaluation_body, hand_written, loop_key
from .read_html_table import has_progress_table, read_progress_table
from .runlog import HAND_WRITTEN, PRIOR_TRAINING, PRIOR_TRAINING_SAID, STEPS_ASSUMED, RunLog
from .values import STEP_KEYS, non_empty, number, step_key, step_number

# A tqdm bar's position: "  5/100 [00:10<03:10, ...]".
BAR = re.compile(r"(\d+)/(\d+) \[")
# A step the dict's own line names before it, "✨ Global step 12: {'policy_loss': ...}" (OpenRLHF's trainer logs each
# step so) or "Step 12/500 {...}", or the dict itself (_named_step): it places its dict as a bar would, as a count
# of no total (NAMED_TOTAL).
# slime and Miles name theirs so too: "[2026-07-20 17:53:24] data.py:193 - rollout 3: {'rollout/raw_reward': ...}",
# "step 3: {'train/loss': ...}", "perf 3: {'rollout/response_len/mean': ...}" (a rollout's, a step's, a rollout's
# statistics and timings: one step's dicts, merged).
DICT_STEP = re.compile(r"\b(?:step|rollout|perf)\s*[=:#]?\s*(\d+)(?:/\d+)?[^\w{]*$", re.IGNORECASE)
NAMED_TOTAL = 0
# A Python dict of str keys as print() writes it; values never hold braces. transformers' Trainer adds the epoch to
# every dict it logs, so a printed dict counts as a training step where it has the epoch, a step or a quantity of the
# update (STEP_KEYS_ANY less the reward): a dict of rewards alone is one completion's scores, which a loop prints
# beside each sample it shows (`Metrics: {'format_reward': 1.0, 'reward': 1.0}`). A loop that prints json.dumps of its
# metrics after a prefix of its own (`METRICS {"step": 3, ...}`, a logger's timestamp) prints the same dict as JSON.
PRINTED_DICT = re.compile(r"\{['\"][^{}\n]*\}")
# A dict printed over several lines (pprint's and rich's of a long one, json.dumps with an indent): its first line opens
# it, the lines after it hold its items, one closes it; joined into one line where it closes within DICT_LINES.
DICT_OPENS = re.compile(r"\{[ \t]*$|\{['\"][^{}\n]*,[ \t]*$", re.MULTILINE)
DICT_LINES = 200
# ... or a terminal's capture (script, a cluster job's output, a copied screen) cut every line at the terminal's width,
# mid-name or mid-number: a dict that opens on a line of that width and goes on over lines as wide (one a column
# short, where the cut fell on a space the capture trimmed) is joined as it was printed. The width is a terminal's.
DICT_CUT_OPENS = re.compile(r"\{['\"][^{}\n]*$", re.MULTILINE)
TERMINAL_WIDTH_MIN = 60
# print() writes float('nan') and float('inf') bare, which literal_eval does not read; numpy 2 writes its scalars as
# their repr, np.float64(0.25).
BARE_NONFINITE = re.compile(r"(?<=[:,\[] )(-?(?:nan|inf))(?=[,}\]])")
NUMPY_SCALAR = re.compile(r"\bnp\.\w+\(([^()]*)\)")
# A logged number as a line prints it: 0.5, -3e-05, .25, nan, inf.
NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf)"
VERL_STEP = re.compile(r"\bstep:(\d+) - (.*)$")
# verl under numpy 2 prints a numpy scalar as its repr: `val-core/gsm8k/reward/mean@1:np.float64(0.41)`.
VERL_PAIR = re.compile(rf"([^\s:]+):\s*(?:np\.\w+\()?({NUMBER})\)?(?=\s|$)")
# A hand-written loop's progress line: its step ("12/100", "step 12", "step=12", "Iteration 12") and key=value pairs,
# among them a metric every trainer logs: "[run]  12/100 | loss=0.0123 | reward=0.250".
LOOP_STEP = re.compile(r"\b(?:step|iteration|iter)\s*[=:]?\s*(\d+)\b", re.IGNORECASE)
LOOP_COUNT = re.compile(r"(?<![\w./])(\d+)/(\d+)(?![\w./])")
# a list as print() writes it ([0.5, 1.0], ['0.80', '0.01']), numpy ([0.5 1. ]) or torch (tensor([0.5, 1.]), followed
# by its device or dtype where they are not the default: simple_GRPO prints each batch's "rewards: tensor([...])")
LOOP_LIST = (rf"(?:(?:tensor|array)\(\s*)?\[\s*(?:['\"]?{NUMBER}['\"]?(?:\s*,\s*|\s+))*['\"]?{NUMBER}['\"]?\s*\]"
             r"(?:\s*,\s*\w+\s*=\s*[\w.'\":]+)*\)?")
PRINTED_ARRAY = re.compile(r"\b(?:tensor|array)\(\[")
# a list of numbers printed over several lines (torch and numpy wrap an array at 75-80 columns), to join into one line:
# brackets holding numbers, separators and line breaks alone, read line by line (a pattern whose parts could each take
# a line break would try every split of an unclosed bracket's lines: minutes on a long log)
ARRAY_CHARACTERS = r"[\d.eE+\-, \t'\"naif]"
WRAPPED_ARRAY = re.compile(rf"(?:\b(?:tensor|array)\()?\[(?:{ARRAY_CHARACTERS}*\r?\n)+{ARRAY_CHARACTERS}*\]")
# a value may be a count of a total ("3/8") or a percentage ("1.2%", prime-rl's truncation): read as the share
LOOP_VALUE = rf"({LOOP_LIST}|{NUMBER}(?:/\d+|%)?)(?![\w.])"
LOOP_PAIR = re.compile(rf"(?<![\w/.])([A-Za-z_][\w/.]*)\s*=\s*{LOOP_VALUE}")
# `Name: value`, the name a few words after a separator (line start, ",", "|", ";", ":", " - ", a wide gap, or the
# space after the last value): "Adv Std: 0.93", "Step 5: loss: 0.1 reward: 0.5".
LOOP_COLON_PAIR = re.compile(rf"(?:^|[,|;:]|\s[-–]\s|\s{{2}}|(?<=[\d\]])\s)\s*"
                             rf"([A-Za-z_][\w/.]*(?: [A-Za-z_][\w/.]*){{0,3}})\s*:\s*{LOOP_VALUE}")
# `Name value` with nothing between them, set apart as above ("Step 5 - Mean Reward 0.51 - Mean Response Len 120",
# "epoch 3  mean reward +0.123  lr 0.0010"): read only on a line with no "=" or ":" pairs, where prose would be.
LOOP_SPACED_PAIR = re.compile(rf"(?:^|[,|;:]|\s[-–]\s|\s{{2}}|(?<=[\d\]])\s)\s*"
                              rf"([A-Za-z_][\w/.]*(?: [A-Za-z_][\w/.]*){{0,3}}) {LOOP_VALUE}"
                              r"(?=\s*[,|;]|\s+[-–]\s|\s{2}|\s*$)")
# Lines of a loop's pairs without a step are read as its steps where the same names recur at least this often.
STEPLESS_MIN = 6
# `name: {'k': v, ...}`, a dict a loop prints as one of its values; where it holds a count, its "total_" sums are means.
LOOP_DICT_PAIR = re.compile(rf"([A-Za-z_]\w*)\s*:\s*({PRINTED_DICT.pattern})")
COUNT_KEYS = ("total_num", "num", "count", "n")
SUM_PREFIX = "total_"
# A printed list of at most this many rewards is one group's (num_generations is 2-16 in the runs users keep).
GROUP_LIST_MAX = 16
# A loop that prints a step as a block of lines: a line that opens the step ("Step 12: sampled 8 prompts",
# "=== ROLLOUT DETAILS (Step 12) ===", "GRPO Iteration 12"), then one quantity a line beneath it ("  Loss: 0.04",
# "Rewards: min=0.2, mean=0.5, std=0.4"), after a logger's prefix where it prints one ("... | INFO | ").
BLOCK_OPENS = re.compile(r"^\W*(?:[A-Za-z]+\s+){0,3}\(?(?:step|iteration|iter|update)\s*(\d+)\b", re.IGNORECASE)
# ... or a line that says a training step of so many is done, wherever it says it (AReaL's StatsLogger: "Epoch 1/10
# Step 3/934 Train step 3/9340 done.", then the step's statistics as a grid of name and value cells, four pairs a row:
# "│ ppo_actor/task_reward/avg │ 4.1e-01 │ rollout/reward │ 4.1e-01 │ ...").
BLOCK_DONE = re.compile(r"\btrain(?:ing)? step (\d+)/\d+ done\b", re.IGNORECASE)
BLOCK_EVALUATION = re.compile(r"\b(?:eval\w*|validat\w*|test)\b", re.IGNORECASE)
# A quantity's line may open with a bullet ("  • Avg Reward: 0.41", as NeMo-RL prints a step's results).
BULLET = r"(?:[•·▪‣*-]\s+)?"
BLOCK_QUANTITY = re.compile(rf"^\s*{BULLET}([A-Za-z][\w ]{{0,40}}?)\s*:\s*{LOOP_VALUE}\s*$")
BLOCK_STATISTICS = re.compile(rf"^\s*{BULLET}([A-Za-z][\w ]{{0,40}}?)\s*:\s*((?:[A-Za-z]\w*\s*=\s*{NUMBER}[,;\s]*)+)$")
# A heading inside a step's block ("📊 Validation Results:", "⏱️  Timing:"): the quantities beneath one that names an
# evaluation are the evaluation's, until the next heading.
BLOCK_HEADING = re.compile(r"^\W*([A-Za-z][A-Za-z ]{0,40}?)\s*:\s*$")
# ... or a YAML mapping's key, the quantities indented beneath it nested in it (EasyR1 prints a step as "Step 3" and
# its metrics as YAML: "reward:", then "  overall: 0.41" is reward/overall).
BLOCK_SECTION = re.compile(r"^(\s*)([a-z_][a-z0-9_-]*):\s*$")
# A printed table's cells, split by "|" or a box-drawing line (rich, tabulate); a timestamp or logger prefix is a cell.
TABLE_BARS = "|│┃"
TABLE_CELLS = re.compile(rf"\s*[{TABLE_BARS}]\s*")
ALIGNED_NAME = re.compile(r"[A-Za-z_][\w/.\-]*")  # a column's name in a table aligned by spaces
# What a table's step column is headed.
TABLE_STEP_NAMES = frozenset(name.lower() for name in STEP_KEYS) | {"iter", "it"}
# Dicts that are not a training step: evaluation passes and the end-of-training summary; a printed config
# or generation settings dict holds none of the keys every trainer's step log has.
NOT_A_STEP = (*EVAL_PREFIXES, END_OF_TRAINING)
# What this module reads, for the messages that say a file holds none of it.
CONSOLE_FORMATS = ("the {'loss': ..., 'reward': ...} dicts transformers' Trainer prints (and slime's 'rollout N: {...}' "
                   "lines), verl's 'step:N - key:value' lines, the progress table it draws in a notebook, a table "
                   "headed 'Step | Reward | ...' or aligned by spaces (a printed DataFrame), a loop's 'step 12 | "
                   "loss=... | reward=...' or 'step 12, Reward: ..., KL: ...' lines, a step's block of 'Name: value' "
                   "lines (NeMo-RL's), or its 'loss: ..., reward: ...' lines repeated every step")
STEP_KEYS_ANY = ("loss", "reward", "grad_norm", "learning_rate", "kl", "entropy")


def looks_like_console(text: str) -> bool:
    text = _on_one_line(plain_text(text)[0])
    if PRINTED_DICT.search(text) or VERL_STEP.search(text) or has_progress_table(text):
        return True
    lines = without_progress_bars(text)[0].splitlines()
    return bool(any(_loop_line(line) for line in lines) or _holds_table(lines)
                or bool(_step_blocks(lines)) or bool(_stepless_rows(lines)))


def _holds_table(lines: list[str]) -> bool:
    """A table drawn with bars has a header; one aligned by spaces, a row of numbers under it too."""
    if any(_table_header(_table_cells(line)) is not None for line in lines if any(bar in line for bar in TABLE_BARS)):
        return True
    found = RunLog(source="", kind="console")
    _read_tables("\n".join(lines), found)
    return bool(found.series)


def console_log(text: str, source: str, logging_steps: int | None = None,
                nothing: str = "a text file with no logged training step in it") -> RunLog:
    """The run a console's text logged; ``nothing`` says what the text is where it holds no step."""
    log = RunLog(source=source, kind="console")
    text, taken_off = plain_text(text)
    text = _on_one_line(text)
    if not _read_verl(text, log):
        _read_trainer_dicts(text, log, logging_steps)
    if not log.series and not log.nonfinite:
        read_progress_table(text, log)
    if not log.series and not log.nonfinite:
        # what a hand-written loop prints is read by where its lines start, which a progress bar's redraws hide
        lined, bars = without_progress_bars(text)
        for read, printed in HAND_WRITTEN_READERS:
            read(lined, log)
            if log.series or log.nonfinite:
                _hand_written_log(log, printed)
                if bars:
                    redrawn = "the progress bars redrawn after carriage returns"
                    taken_off = " and ".join(filter(None, [taken_off, redrawn]))
                break
    if not log.series and not log.nonfinite:
        raise HypotrackError(f"{source}: {nothing} (none of {CONSOLE_FORMATS}); "
                             "pass the run's trainer_state.json, its TensorBoard folder or a tracker's CSV export "
                             "instead")
    if taken_off:
        log.said.append(f"read without {taken_off}")
    return non_empty(log.sort())


def _on_one_line(text: str) -> str:
    """The text with each list of numbers and each dict printed over several lines joined into one line."""
    return _dicts_on_one_line(_arrays_on_one_line(text))


def _arrays_on_one_line(text: str) -> str:
    """The text with each list of numbers printed over several lines joined into its first line."""
    return WRAPPED_ARRAY.sub(lambda found: re.sub(r"\s*\n\s*", " ", found.group(0)), text)


def _dicts_on_one_line(text: str) -> str:
    """The text with each dict printed over several lines joined into one line, as print() writes a short one."""
    if not DICT_OPENS.search(text) and not DICT_CUT_OPENS.search(text):
        return text
    lines = text.split("\n")
    joined: list[str] = []
    at = 0
    while at < len(lines):
        cut, opens = bool(DICT_CUT_OPENS.search(lines[at])), bool(DICT_OPENS.search(lines[at]))
        end = _closing_line(lines, at) if cut or opens else None
        if end is not None and cut and _cut_at_a_width(lines[at:end]):
            width = max(len(line) for line in lines[at:end])
            joined.append("".join(line + ("" if len(line) == width else " ") for line in lines[at:end]) + lines[end])
        elif end is not None and opens:
            head, items = lines[at].rstrip(), " ".join(part.strip() for part in lines[at + 1:end + 1])
            joined.append(head + ("" if head.endswith("{") else " ") + items)
        else:
            joined.append(lines[at])
            at += 1
            continue
        at = end + 1
    return "\n".join(joined)


def _cut_at_a_width(lines: list[str]) -> bool:
    """Whether a dict's lines before its last were cut at one terminal width: each as wide as the widest, or a column
    short."""
    width = max(len(line) for line in lines)
    return width >= TERMINAL_WIDTH_MIN and all(len(line) in (width, width - 1) for line in lines)


def _closing_line(lines: list[str], opened: int) -> int | None:
    """The line that closes the dict ``lines[opened]`` opens: the first brace after it, within DICT_LINES lines, where
    it closes one; None where another dict opens first or none closes."""
    for at in range(opened + 1, min(len(lines), opened + DICT_LINES + 2)):
        if "{" in lines[at]:
            return None
        if "}" in lines[at]:
            return at
    return None


def _hand_written_log(log: RunLog, printed: str) -> None:
    """Mark a log a hand-written loop printed (runlog.HAND_WRITTEN), and read the sign of its kl.

    A loop's kl is its own estimator, not TRL's k3 (which cannot go below 0): often the mean log-ratio of the sampled
    tokens (k1), below 0 at a step whenever they are likelier under the reference, and often written as log ref -
    log policy (MiniMind's trainers log the mean of ref_per_token_logps - per_token_logps, the term their k3 penalty
    is built from), whose mean over a run is minus the KL. So a kl whose mean over the run is below 0 (by more than two
    standard errors) is read with its sign turned, and said: its sign tells the loop's convention, not a broken KL."""
    log.params[HAND_WRITTEN] = "1"
    named = [name for name in log.series if canonical_name(name) == "kl"]  # the loop's own name (kl_avg, KL_ref)
    values = [value for name in named for _, value in log.series[name]]
    if len(values) < 3 or min(values) >= 0:
        return
    mean, error = statistics.fmean(values), statistics.stdev(values) / len(values) ** 0.5
    if mean + 2 * error >= 0:
        log.said.append(f"the loop's {printed} log a kl below 0 at some steps (lowest {min(values):.3g}), as the mean "
                        "log-ratio (k1) a hand-written loop may log does whenever the sampled completions are likelier "
                        "under the reference: read as logged")
        return
    for name in named:
        log.series[name] = [(step, -value) for step, value in log.series[name]]
    log.said.append(f"the loop's {printed} log a kl whose mean over the run is below 0 ({mean:.3g}): read as the "
                    "log-ratio log reference - log policy (mean minus the KL), as loops that build a k3 penalty from it "
                    "log it, so with its sign turned; a sign convention is all it shows, not a broken KL")


def _read_verl(text: str, log: RunLog) -> bool:
    found = False
    for line in re.split(r"[\r\n]+", text):
        match = VERL_STEP.search(line)
        if not match:
            continue
        step = int(match.group(1))
        for key, value in VERL_PAIR.findall(match.group(2)):
            log.add(key, step, float(value))
            found = True
    return found


def _read_tables(text: str, log: RunLog) -> None:
    """Every row of numbers under a table header whose columns name the step; a row has the header's cells.

    A table drawn with bars ('Step | Reward | ...') is read wherever its rows are; one aligned by spaces alone (a
    printed pandas DataFrame, np.savetxt's '# step reward kl' header) only in rows of numbers right under its header,
    as prose may name a step among three words. A DataFrame prints its index before each row: one integer more than
    the header's cells."""
    header: list[str | None] | None = None
    step_at, aligned = 0, False
    for line in re.split(r"[\r\n]+", text):
        barred = any(bar in line for bar in TABLE_BARS)
        cells = _table_cells(line) if barred else _aligned_cells(line)
        if len(cells) < 3:
            if aligned:
                header = None  # an aligned table ends at its first line that is no row of it
            continue
        found = _table_header(cells) if barred else _aligned_header(cells)
        if found is not None:
            header, step_at, aligned = [loop_key(cell) or None for cell in cells], found, not barred
            continue
        if header is None or barred == aligned:
            continue
        if aligned:
            if len(cells) == len(header) + 1 and cells[0].isdigit():
                cells = cells[1:]  # a DataFrame's index
            if len(cells) != len(header) or any(number(cell) is None for cell in cells):
                header = None  # an aligned table ends at its first line that is no row of it
                continue
        step = _table_step(cells[step_at], aligned) if len(cells) == len(header) else None
        if step is None:
            continue
        for name, cell in zip(header, cells):
            value = number(cell)
            if name and name not in TABLE_STEP_NAMES and value is not None:
                log.add(name, step, value)


def _table_step(cell: str, aligned: bool) -> int | None:
    """A row's step: the digits of a table drawn by hand, or any whole number at least 0 in one aligned by spaces
    (np.savetxt writes a step as 1.000000000000000000e+00)."""
    if not aligned:
        return int(cell) if cell.isdigit() else None
    step = number(cell)
    return int(step) if step is not None and step >= 0 and step.is_integer() else None  # inf and nan are no step


def _table_cells(line: str) -> list[str]:
    return TABLE_CELLS.split(line.strip().strip(TABLE_BARS + " "))


def _aligned_cells(line: str) -> list[str]:
    return line.strip().lstrip("#").split()


def _table_header(cells: list[str]) -> int | None:
    """Where the step column is, when ``cells`` head a table: one of them names the step, and at least three are
    names rather than numbers (a timestamp prefix is one)."""
    steps = [i for i, cell in enumerate(cells) if cell.lower() in TABLE_STEP_NAMES]
    if len(steps) == 1 and len(cells) >= 3 and sum(number(cell) is None for cell in cells) >= 3:
        return steps[0]
    return None


def _aligned_header(cells: list[str]) -> int | None:
    """The same, for a header aligned by spaces: every cell a metric's name."""
    if all(ALIGNED_NAME.fullmatch(cell) for cell in cells):
        return _table_header(cells)
    return None


def _loop_line(line: str) -> tuple[int, list[tuple[str, list[float]]]] | None:
    """(step, pairs) of a hand-written loop's progress line, each value as the numbers it holds (one, or a list's),
    or None."""
    found = _loop_pairs(line)
    if found is None:
        return None
    start, pairs = found
    step = _loop_step(line, start)
    return None if step is None else (step, pairs)


def _loop_pairs(line: str) -> tuple[int, list[tuple[str, list[float]]]] | None:
    """Where a loop's line starts its pairs, and the pairs, where one of them is a quantity every trainer logs."""
    found = [(match.start(), match.group(1), match.group(2)) for match in LOOP_PAIR.finditer(line)]
    found += [(match.start(1), loop_key(match.group(1)), match.group(2))
              for match in LOOP_COLON_PAIR.finditer(line)]
    found = found or [(match.start(1), loop_key(match.group(1)), match.group(2))
                      for match in LOOP_SPACED_PAIR.finditer(line)]
    if not found:
        return None
    pairs = [(key, _loop_value(value)) for _, key, value in sorted(found)]
    for match in LOOP_DICT_PAIR.finditer(line):
        pairs += _totals(loop_key(match.group(1)), _parse_dict(match.group(2)) or {})
    if not any(_read_quantity(key) for key, _ in pairs):
        return None
    return min(start for start, _, _ in found), pairs


def _read_quantity(key: str) -> bool:
    """A quantity triage reads, or its evaluation's (eval_acc)."""
    body = evaluation_body(key)
    return bool(body in STEP_KEYS_ANY or body.startswith("rewards/") or hand_written(body) or canonical_name(body))


def _totals(name: str, printed: dict) -> list[tuple[str, list[float]]]:
    """A dict a loop prints as one of its values: each number as name/key, except sums over a count, which are
    means (`reward_data: {'total_num': 256, 'total_reward': 144.0}` is a reward of 144 / 256)."""
    numbers = {key: value for key, value in printed.items() if isinstance(value, (int, float))
               and not isinstance(value, bool)}
    count = next((numbers[key] for key in COUNT_KEYS if numbers.get(key)), None)
    if count is None:
        return [(f"{name}/{key}", [float(value)]) for key, value in numbers.items()]
    return [(key[len(SUM_PREFIX):], [value / count]) for key, value in numbers.items()
            if key.startswith(SUM_PREFIX) and key not in COUNT_KEYS]


def _loop_step(line: str, pairs_start: int) -> int | None:
    """A progress line's step: `step 12` (`step=12:` among its pairs too), else the count out of the largest total
    printed before its pairs."""
    named = LOOP_STEP.search(line)
    if named:
        return int(named.group(1))
    counts = [(int(total), int(count)) for count, total in LOOP_COUNT.findall(line[:pairs_start])]
    return max(counts)[1] if counts else None


def _is_list(value: str) -> bool:
    """A value LOOP_VALUE matched is a list (or a printed array), not one number."""
    return value.startswith("[") or bool(PRINTED_ARRAY.match(value))


def _loop_value(text: str) -> list[float]:
    """The numbers a value LOOP_VALUE matched holds: a list's (inside its brackets: not an array's device), a count
    over its total as the share, or one number (values.number reads a percentage as its share)."""
    if _is_list(text):
        return [float(found) for found in re.findall(NUMBER, text[text.index("["):text.rindex("]")])]
    count, _, total = text.partition("/")
    if total:
        return [float(count) / float(total) if float(total) else float(count)]
    value = number(text)
    assert value is not None, text  # LOOP_VALUE matched a number, with or without its %
    return [value]


def _read_loop_lines(text: str, log: RunLog) -> None:
    lines = [found for found in map(_loop_line, re.split(r"[\r\n]+", text)) if found]
    _add_pairs(lines, log)


def _add_pairs(lines: list[tuple[int, list[tuple[str, list[float]]]]], log: RunLog) -> None:
    """Each (step, pairs) a loop printed: a value's mean, and where it is a list of rewards, its spread and (where every
    such list of the log is a group's: GROUP_LIST_MAX) whether the group tied."""
    reward_lists = [values for _, pairs in lines for key, values in pairs
                    if hand_written(key) == "reward" and len(values) > 1]
    groups = bool(reward_lists) and max(map(len, reward_lists)) <= GROUP_LIST_MAX
    for step, pairs in lines:
        for key, values in pairs:
            log.add(key, step, statistics.fmean(values))
            if len(values) > 1 and hand_written(key) == "reward":
                log.add("reward_std", step, statistics.pstdev(values))
                if groups:
                    log.add("frac_reward_zero_std", step, float(len(set(values)) == 1))


def _step_blocks(lines: list[str]) -> list[tuple[int, dict[str, float]]]:
    """(step, quantities) of each step a loop printed as a block of lines. A name printed more than once in one
    block is a completion's or a sample's (`[Sample 3] Reward: 1.0` lines), not the step's, and is left out, as is a
    printed list (a group's scores); an
    evaluation's block (its opening line names an evaluation) keeps its quantities under eval/, where heldout.py
    reads them. A log gives blocks only where some block holds a quantity triage reads as the step's."""
    blocks: list[tuple[int, dict[str, list[float]]]] = []
    previous = ""
    evaluation = False
    printed, counted_before = 0, 0  # the step the last opening line printed; the steps before its count started over
    sections: list[tuple[int, str]] = []  # the YAML keys (indent, name) the next line may nest in
    for raw in lines:
        line = LOGGER_PREFIX.sub("", raw, count=1).rstrip()
        if not line.strip() or line == previous:  # a logger that also echoes each line to the console
            continue
        previous = line
        opens = BLOCK_OPENS.match(line) or BLOCK_DONE.search(line)
        if opens:
            if int(opens.group(1)) < printed:  # a count within the epoch, started over (NeMo-RL's "Step 1/40")
                counted_before = blocks[-1][0]
            printed = int(opens.group(1))
            step = counted_before + printed
            evaluation, sections = bool(BLOCK_EVALUATION.search(line)), []
            if not blocks or blocks[-1][0] != step:
                blocks.append((step, {}))
            continue
        if not blocks:
            continue
        sections = [(indent, name) for indent, name in sections if indent < len(line) - len(line.lstrip())]
        if section := BLOCK_SECTION.match(line):
            sections.append((len(section.group(1)), section.group(2)))
            continue
        if heading := BLOCK_HEADING.match(line):
            evaluation = bool(BLOCK_EVALUATION.search(heading.group(1)))
            continue
        quantities = blocks[-1][1]
        path = "".join(f"{name}/" for _, name in sections)
        prefix = path if path.startswith(EVAL_PREFIXES) else ("eval/" if evaluation else "") + path
        # a line with a bar that is no grid of names and values is read as any other line
        if grid := _grid_pairs(_table_cells(line)) if any(bar in line for bar in TABLE_BARS) else []:
            for name, value in grid:
                quantities.setdefault(prefix + name, []).append(value)
        elif (found := BLOCK_QUANTITY.match(line)) and not _is_list(found.group(2)):
            quantities.setdefault(prefix + loop_key(found.group(1)), []).extend(_loop_value(found.group(2)))
        elif found := BLOCK_STATISTICS.match(line):
            for name, value in re.findall(rf"([A-Za-z]\w*)\s*=\s*({NUMBER})", found.group(2)):
                quantities.setdefault(f"{prefix}{loop_key(found.group(1))}_{name.lower()}", []).append(float(value))
    read = [(step, {key: values[0] for key, values in quantities.items() if len(values) == 1})
            for step, quantities in blocks]
    if not any(key in STEP_KEYS_ANY or _read_quantity(key) for _, quantities in read for key in quantities):
        return []
    return [(step, quantities) for step, quantities in read if quantities]


def _grid_pairs(cells: list[str]) -> list[tuple[str, float]]:
    """A grid row's (name, value) pairs where its cells alternate a name and a number (a dict printed in columns, as
    AReaL's StatsLogger prints a step's statistics), else none."""
    cells = [cell for cell in cells if cell]  # a short last row is padded with empty cells
    names, values = cells[0::2], [number(cell) for cell in cells[1::2]]
    alternate = len(names) == len(values) and all(number(name) is None for name in names)
    if not cells or not alternate or None in values:
        return []
    return list(zip(names, values))


def _read_stepless_lines(text: str, log: RunLog) -> None:
    """A loop's lines of the same pairs printed at every step without its step (`rl_loss: 0.01, l2_norm: 0.14,
    token_entropy: 0.82`): the names printed together most often, at least STEPLESS_MIN times, read in order as steps
    1, 2, ... (the first may not be the run's step 1: STEPS_ASSUMED)."""
    rows = _stepless_rows(re.split(r"[\r\n]+", text))
    steps = 0
    numbered = []
    for pairs, training in rows:
        steps += training
        numbered.append((max(steps, 1), pairs))
    _add_pairs(numbered, log)
    if rows:
        log.params[STEPS_ASSUMED] = "1"
        log.said.append(f"the loop prints {', '.join(key for key, _ in rows[0][0])} without a step: its {steps} such "
                        "lines are read in order as steps 1, 2, ..., and an evaluation it prints between them at the "
                        "step before it")


def _stepless_rows(lines: list[str]) -> list[tuple[list[tuple[str, list[float]]], bool]]:
    """The lines that print the names printed together most often, where that is STEPLESS_MIN or more (True: a
    training step), with the evaluations printed among them (False: every name an evaluation's, eval_acc)."""
    found = [pairs for _, pairs in filter(None, map(_loop_pairs, lines))]
    counts = Counter(tuple(key for key, _ in pairs) for pairs in found)
    if not counts or counts.most_common(1)[0][1] < STEPLESS_MIN:
        return []
    names = counts.most_common(1)[0][0]
    rows = []
    for pairs in found:
        keys = tuple(key for key, _ in pairs)
        if keys == names or all(key.lower().startswith(EVAL_PREFIXES) for key in keys):
            rows.append((pairs, keys == names))
    return rows


def _read_step_blocks(text: str, log: RunLog) -> None:
    for step, quantities in _step_blocks(re.split(r"[\r\n]+", text)):
        for key, value in quantities.items():
            log.add(key, step, value)


def _read_trainer_dicts(text: str, log: RunLog, logging_steps: int | None) -> None:
    entries: list[tuple[tuple[int, int] | None, dict]] = []
    # An evaluation pass's dict ({'eval_loss': ..., 'eval_reward': ...}), with how many step dicts came before it:
    # it is logged at the step of the last of them (transformers evaluates after that step's log).
    evaluations: list[tuple[int, dict]] = []
    last_bar: tuple[int, int] | None = None
    for piece in re.split(r"[\r\n]+", text):
        for match in re.finditer(rf"{BAR.pattern}|{PRINTED_DICT.pattern}", piece):
            token = match.group()
            if token.startswith("{"):
                values = _parse_dict(token)
                named = values and _named_step(values, piece[:match.start()])
                if values and (_is_step(values) or named and _of_the_step(values)):
                    entries.append((named or last_bar, values))
                elif values and _is_evaluation(values):
                    evaluations.append((len(entries), values))
            else:
                last_bar = (int(match.group(1)), int(match.group(2)))
    if not entries:
        return
    entries, evaluations = _merged_by_step(entries, evaluations, log)
    read = _last_training(entries, log)
    first = next(i for i, entry in enumerate(entries) if entry is read[0])
    entries = read
    steps = _steps(entries)
    if steps is None:
        every, how = _logging_interval(entries, logging_steps)
        steps = [every * (i + 1) for i in range(len(entries))]
        if how == "assumed":
            log.params[STEPS_ASSUMED] = "1"
        else:
            log.params["logging_steps"] = str(every)
        log.said.append(f"the console log's {len(entries)} logged steps carry no step number the progress bar pins "
                        f"down (a buffered output prints them in bursts): read as steps {every}, {2 * every}, ... "
                        f"(logging_steps {every}, {how})")
    for step, (_, values) in zip(steps, entries):
        for key, raw in values.items():
            value = number(raw)
            if value is not None:
                log.add(key, step, value)
    for before, values in evaluations:
        if first < before <= first + len(entries):  # an evaluation of the training read
            for key, raw in values.items():
                value = number(raw)
                if key.startswith(EVAL_PREFIXES) and value is not None:
                    log.add(key, steps[before - first - 1], value)


def _named_step(values: dict, before: str) -> tuple[int, int] | None:
    """The step a printed dict names, as a count of no total (NAMED_TOTAL): the dict's own step key (ms-swift prints
    'global_step/max_steps': '10/500'), else the step its line names before it (OpenRLHF's 'Global step 12: {...}')."""
    own = step_key([key for key, value in values.items() if step_number(value) is not None])
    if own is not None:
        return int(step_number(values[own]) or 0), NAMED_TOTAL
    named = DICT_STEP.search(before)
    return (int(named.group(1)), NAMED_TOTAL) if named else None


def _merged_by_step(entries: list[tuple[tuple[int, int] | None, dict]], evaluations: list[tuple[int, dict]],
                    log: RunLog) -> tuple:
    """Where every dict names its step, the dicts of one step as one (slime prints a rollout's and its update's apart,
    Miles each update twice), in the order of their steps; an evaluation stays after the step it followed. A step
    whose metric comes again with another value, after other steps, was logged again by a run resumed from a
    checkpoint: its last values are read, and the step is noted in ``log.repeated`` as any source's repeated step."""
    if not all(named is not None and named[1] == NAMED_TOTAL for named, _ in entries):
        return entries, evaluations
    merged: dict[int, dict] = {}
    previous = None
    for (step, _), values in entries:
        again = step in merged and step != previous
        known = merged.setdefault(step, {})
        if again and any(known.get(key, raw) != raw for key, raw in values.items()):
            log.repeated.append(step)
        known.update(values)
        previous = step
    steps = sorted(merged)
    after = [(sum(1 for step in steps if step <= entries[before - 1][0][0]) if before else 0, values)
             for before, values in evaluations]
    return [((step, NAMED_TOTAL), merged[step]) for step in steps], after


def _last_training(entries: list[tuple[tuple[int, int] | None, dict]], log: RunLog) -> list:
    """The step dicts of the last GRPO training the log holds (else of its last training). A script that trains
    twice prints both (an SFT warm-up, then GRPO; two GRPO runs): a new training starts where the dicts change
    kind (GRPO's or not) or where the epoch starts over."""
    trainings: list[list] = [[entries[0]]]
    for entry in entries[1:]:
        before, values = trainings[-1][-1][1], entry[1]
        epochs = number(before.get("epoch")), number(values.get("epoch"))
        restarted = None not in epochs and epochs[1] < epochs[0]
        if restarted or _is_grpo(values) != _is_grpo(before):
            trainings.append([])
        trainings[-1].append(entry)
    if len(trainings) == 1:
        return entries
    grpo = [training for training in trainings if _is_grpo(training[0][1])]
    chosen = (grpo or trainings)[-1]
    others = ", ".join(f"{len(t)} logged steps{' of GRPO' if _is_grpo(t[0][1]) else ' of another training'}"
                       for t in trainings if t is not chosen)
    at = trainings.index(chosen)
    supervised_first = bool(grpo) and at > 0 and not _is_grpo(trainings[at - 1][0][1])
    log.said.append(f"the console log holds {len(trainings)} trainings (a new one starts where the epoch starts over "
                    f"or GRPO's own metrics start or stop being logged): read the last {'GRPO ' if grpo else ''}one, "
                    f"{len(chosen)} logged steps; not read: {others}"
                    + (f"; the one without GRPO's metrics just before it is a supervised stage: {PRIOR_TRAINING_SAID}"
                       if supervised_first else ""))
    if supervised_first:
        log.params[PRIOR_TRAINING] = "1"
    return chosen


def _is_grpo(values: dict) -> bool:
    """A GRPO step's dict: its rewards, or a quantity only GRPO logs. TRL logs the rewards at the steps that generate;
    an update between generations (num_iterations above 1, steps_per_generation above the accumulation steps) logs
    its kl and clip ratios without them, which no supervised stage logs."""
    keys = [key.removeprefix("train/") for key in values]
    return any(key in ("reward", "kl") or key.startswith(("rewards/", "clip_ratio")) for key in keys)


def _is_evaluation(values: dict) -> bool:
    return any(key.startswith(EVAL_PREFIXES) for key in values) and END_OF_TRAINING not in values


def _is_step(values: dict) -> bool:
    keys = [key.removeprefix("train/") for key in values]
    of_a_step = "epoch" in keys or any(key in STEP_KEYS for key in keys)
    updated = any(key in STEP_KEYS_ANY and key != "reward" for key in keys)
    return (not all(key.startswith(NOT_A_STEP) for key in keys) and (of_a_step or updated)
            and any(key in STEP_KEYS_ANY or key.startswith("rewards/") for key in keys))


def _of_the_step(values: dict) -> bool:
    """A dict its line names a step for holds the step's statistics where it has a quantity triage reads besides a
    reward (a rollout's response length, an update's loss): a loop's `Step 3: {'reward': 1.0}` beside a sample it
    shows is that sample's score."""
    names = [canonical_name(key) for key in values]
    return any(name is not None and name != "reward" and not name.startswith("rewards/") for name in names)


def _logging_interval(entries: list[tuple[tuple[int, int] | None, dict]], logging_steps: int | None) -> tuple[int, str]:
    """logging_steps: the run's own (training_args.bin), else the steps the training bar counted over the dicts
    printed, when that divides evenly, else 1."""
    if logging_steps:
        return logging_steps, "from the run's training_args.bin"
    bars = [bar for bar, _ in entries if bar is not None]
    if bars:
        total = Counter(bar[1] for bar in bars).most_common(1)[0][0]
        counted = max(bar[0] for bar in bars if bar[1] == total)
        if counted == total and counted % len(entries) == 0:
            return counted // len(entries), f"{len(entries)} printed steps over the {counted} the training bar counted"
    return 1, "assumed"


def _parse_dict(token: str) -> dict | None:
    try:
        value = ast.literal_eval(BARE_NONFINITE.sub(r"'\1'", NUMPY_SCALAR.sub(r"\1", token)))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        try:  # JSON's true, false, null, NaN and Infinity, which are no Python literals
            value = json.loads(token)
        except ValueError:
            return None
    return value if isinstance(value, dict) and all(isinstance(k, str) for k in value) else None


def _steps(entries: list[tuple[tuple[int, int] | None, dict]]) -> list[int] | None:
    """The training bar's count before each dict (or the step its own line names), when they give one increasing step
    per dict."""
    totals = Counter(bar[1] for bar, _ in entries if bar is not None)
    if not totals:
        return None
    training_total = totals.most_common(1)[0][0]
    if any(bar is None or bar[1] != training_total for bar, _ in entries):
        return None
    steps = [bar[0] for bar, _ in entries]
    if any(b <= a for a, b in zip(steps, steps[1:])):
        return None
    return steps


# A hand-written loop's prints, by what each reader reads, in the order they are tried: the first that reads a step wins.
HAND_WRITTEN_READERS = ((_read_tables, "a table"), (_read_loop_lines, "progress lines"),
                        (_read_step_blocks, "step blocks"), (_read_stepless_lines, "lines without a step"))
