"""Find out what a source is and hand it to its reader (one reader a module beside this one).

- an MLflow run: its id (32 hex digits) or a `runs:/<id>` URI, on the tracking URI given (else MLflow's
  default); read through hypotrack.tracking, so MLflow is imported only for this kind of source;
- a training output folder (TRL / transformers' `output_dir`): its `trainer_state.json`, else the one in
  its newest `checkpoint-N/`, else the TensorBoard event files under it, else the W&B run files under it (a
  `wandb/` folder), else the console output W&B kept of each run (`files/output.log`), else the runs of an
  MLflow file store under it (an `mlruns/` folder, read through MLflow), else TensorBoard's scalar downloads in it
  (a tag a CSV file, read_scalar_csv.py) (read_state.py, read_tensorboard.py, read_wandb.py);
- a file: a trainer_state.json; TensorBoard event files; a W&B run file (`run-<id>.wandb`); a CSV export
  from a tracker (read_csv.py), W&B's with several runs kept apart; one tag TensorBoard downloaded as CSV, read with
  the same run's other downloads beside it; JSON records, one per line or as a list (read_jsonl.py); a console log
  of transformers' printed dicts or verl's step lines (read_console.py); a Jupyter notebook's saved outputs, the
  Trainer's progress table among them (read_notebook.py); any of these compressed, or a folder of them in a zip or
  tar archive (compressed.py);
- `-`: what is piped in on standard input (`kubectl logs trainer | hypotrack triage -`), read as a file is by what
  it holds.

The checkpoint's `training_args.bin` beside the log (or in its newest checkpoint), else ms-swift's `args.json`,
adds the run's settings (beta, num_generations, loss_type, logging_steps, ...) to what triage knows, read without
torch (training_args.py). A file triage cannot read gets one sentence saying what it is and what to pass instead.
Every problem is a HypotrackError that names the source and what is wrong with it.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

from hypotrack.errors import HypotrackError

from .compressed import ARCHIVE_SUFFIXES, compression, inner_name, is_archive, read_archive, read_compressed
from .heldout import heldout_score
from .keys import EVAL_PREFIXES, canonical_name
from .read_console import CONSOLE_FORMATS, console_log, looks_like_console
from .read_csv import read_csv
from .read_json_tables import read_object
from .read_jsonl import read_records
from .read_notebook import NOTEBOOK, read_notebook
from .read_parquet import PARQUET, read_parquet
from .read_scalar_csv import downloads_of_its_run, is_scalar_download, read_scalar_downloads, scalar_downloads
from .read_state import STATE_FILE, is_trainer_state, load_json, read_trainer_state
from .read_tensorboard import event_files, is_event_file, read_tensorboard
from .read_wandb import is_wandb_file, read_wandb, wandb_console_logs, wandb_files
from .runlog import RunLog
from .training_args import ARGS_FILE, JSON_ARGS_FILE, settings
from .values import decode_text, non_empty

# Keys only transformers' trainer_state.json has.
STATE_MARKS = {"global_step", "best_model_checkpoint", "is_world_process_zero", "log_history"}
RUN_ID = re.compile(r"^[0-9a-f]{32}$")
STDIN = "-"
PIPED = "standard input"
CHECKPOINT = re.compile(r"checkpoint-(\d+)$")  # the folder the Trainer saves a checkpoint in, under its output_dir
# Files a run leaves that hold no metrics: what each is, for the one sentence that says so.
NOT_METRICS = {
    ".bin": "a checkpoint's weights or training settings (training_args.bin)",
    ".safetensors": "a checkpoint's weights", ".pt": "a PyTorch checkpoint", ".pth": "a PyTorch checkpoint",
    ".ckpt": "a checkpoint", ".png": "an image", ".jpg": "an image", ".svg": "an image", ".pdf": "a PDF",
    ".yaml": "a configuration file", ".yml": "a configuration file", ".toml": "a configuration file",
    ".py": "a Python script", ".md": "a Markdown text",
}
# A spreadsheet a user kept the run's table in: its cells are the metrics, in a workbook format triage does not open.
SPREADSHEETS = {".xlsx": "an Excel workbook", ".xls": "an Excel workbook", ".ods": "an OpenDocument spreadsheet",
                ".numbers": "a Numbers spreadsheet"}
# W&B keeps each metric's last value in its run folder's files/wandb-summary.json: one record, no history.
WANDB_SUMMARY = "wandb-summary.json"
# SwanLab (report_to="swanlab") keeps a run's metrics in a binary record of its own, whose schema changes with its
# releases (swanlog/run-<time>-<id>/run-<id>.swanlab).
SWANLAB_RUN_FILE = ".swanlab"
# What a clone without Git LFS holds in place of a file the repository keeps in LFS.
LFS_POINTER = b"version https://git-lfs.github.com/spec/"
# What a folder's one log may be (a loop's metrics file, a dumped log_history, a console capture, the notebook the run
# was trained in, its outputs saved).
LOG_SUFFIXES = (".csv", ".json", ".jsonl", ".log", ".txt", ".out", NOTEBOOK, PARQUET)
# A log named for an evaluation split, and the names of the training log it pairs with (eval_metrics.jsonl,
# train_metrics.jsonl): one run's two logs, not two runs.
EVALUATION_WORDS = frozenset({"eval", "evaluation", "val", "valid", "validation", "test"})
TRAINING_WORDS = ("train", "training")
EVAL_PREFIX = "eval/"
# Logs of one run's processes log most of the same steps: at least this share of the shorter one's.
PROCESS_STEPS_SHARED = 0.8
# Text files that are not logs by their kind, yet where users paste a run's console output (notes of the run with its
# terminal capture): read as that console log when they hold one.
PASTED_LOGS = {".md"}
# How far below a folder with no log of its own triage looks for the one folder that holds logs, and the folders it
# never looks into (an environment's packages, a cache, a model's weights).
LOGS_BELOW_DEPTH = 3
NOT_LOG_NAMES = frozenset({JSON_ARGS_FILE, "config.json", "generation_config.json", "tokenizer.json", "vocab.json",
                           "special_tokens_map.json", "added_tokens.json", "chat_template.json", "merges.txt",
                           "requirements.txt", "package.json", "LICENSE.txt"})
NOT_LOG_ENDINGS = ("_config.json", ".index.json")  # tokenizer_config.json, adapter_config.json, a weights index
NOT_LOG_FOLDERS = frozenset({"venv", "env", "site-packages", "node_modules", "wandb-cache", "cache", "weights",
                             "models"})
WHAT_TO_PASS = ("pass the run's trainer_state.json (or its output folder), its TensorBoard event files, its W&B run file "
                "(run-<id>.wandb), the console log its Trainer printed, a tracker's CSV export, or an MLflow run id")


def read_runs(source: str, tracking_uri: str | None = None) -> list[RunLog]:
    """Every run ``source`` holds (a W&B export or a TensorBoard folder may hold several; most hold one)."""
    if not source.strip():  # pathlib reads "" as the current folder, which the user did not name
        raise HypotrackError("the source is empty: pass the run's log, its folder ('.' for the current one) or an "
                             "MLflow run id")
    if source == STDIN:
        return _read_piped()
    path = Path(source).expanduser()
    if path.is_dir():
        logs = _read_folder(path)
    elif path.is_file():
        logs = _read_file(path)
    else:
        run_id = source[len("runs:/"):].split("/", 1)[0] if source.startswith("runs:/") else source
        if not RUN_ID.match(run_id):
            raise HypotrackError(f"{source!r} is neither an existing folder or file nor an MLflow run id (32 hex "
                                 "digits, or runs:/<run id>)")
        return [read_mlflow(run_id, tracking_uri)]
    for log in logs:
        _add_settings(log, path)
    other_trainers = [(log, named) for log in logs if (named := _not_an_rl_run(log))]
    if len(other_trainers) == len(logs):
        raise HypotrackError(f"{source}: {other_trainers[0][1]}, not an RL run with a reward (GRPO, PPO, RLOO, ...), "
                             "which is what triage reads; pass such a run's log")
    if other_trainers:  # an export of several runs, a supervised warm-up's among them: the RL runs are read
        logs = [log for log in logs if all(log is not other for other, _ in other_trainers)]
        for log in logs:
            log.said += [f"left out run {other.run or '(unnamed)'} of {source}: {named}" for other, named in other_trainers]
    if not any(_holds_a_metric_triage_reads(log) for log in logs):
        keys = sorted({key for log in logs for key in log.series})
        shown = ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
        raise HypotrackError(f"{source}: none of its metrics is one triage reads (it logs {shown}): triage reads a "
                             "GRPO run's training metrics under TRL's names or those of verl, OpenRLHF, AReaL, slime, "
                             "NeMo-RL, prime-rl or Tinker (reward, rewards/<func>/mean, kl, grad_norm, entropy, ...), or "
                             "an evaluation's score; "
                             + WHAT_TO_PASS)
    return logs


def _read_piped() -> list[RunLog]:
    """The runs of what is piped in on standard input, read from a temporary file named for it (a pipe has no name
    to tell its format by, so its content tells it) and named as standard input in everything the report says."""
    data = sys.stdin.buffer.read()
    if not data.strip():
        raise HypotrackError(f"{STDIN}: nothing was piped in: pipe the run's log in (`cat train.log | hypotrack triage "
                             f"{STDIN}`) or pass its path")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "stdin"
        path.write_bytes(data)
        try:
            logs = _read_file(path)
        except HypotrackError as error:
            raise HypotrackError(str(error).replace(str(path), PIPED)) from None
    for log in logs:
        log.source = log.source.replace(str(path), PIPED)
        log.said = [said.replace(str(path), PIPED) for said in log.said]
    return logs


def _not_an_rl_run(log: RunLog) -> str | None:
    """What other trainer's log this is, by the keys only that trainer logs, where it holds no RL reward: DPO's
    family (DPO, ORPO, SimPO, KTO log the policy's implicit rewards of the chosen and rejected answers as
    rewards/chosen and rewards/rejected, which read as two reward functions), and supervised fine-tuning (TRL's
    SFTTrainer logs mean_token_accuracy, and no reward)."""
    keys = {key.removeprefix("train/") for key in log.series}
    if {"rewards/chosen", "rewards/rejected"} <= keys and "reward" not in keys:
        return ("a preference-optimisation run's log (DPO, ORPO, SimPO or KTO: rewards/chosen and rewards/rejected "
                "are the policy's implicit rewards of the chosen and rejected answers)")
    if "mean_token_accuracy" in keys and not any(key.startswith(("reward", "kl")) for key in keys):
        return "a supervised fine-tuning run's log (loss and mean_token_accuracy, no reward)"
    return None


def _holds_a_metric_triage_reads(log: RunLog) -> bool:
    return any(canonical_name(key) is not None for key in log.series) or heldout_score(log, None) is not None


def read_source(source: str, tracking_uri: str | None = None, run: str | None = None) -> RunLog:
    """The one run ``source`` holds, or the one named ``run`` among several."""
    logs = read_runs(source, tracking_uri)
    return pick_run(logs, source, run)


def pick_run(logs: list[RunLog], source: str, run: str | None) -> RunLog:
    names = [log.run for log in logs]
    if run is not None:
        chosen = [log for log in logs if log.run == run]
        if not chosen:
            listed = ", ".join(repr(n) for n in names if n) or "one unnamed run"
            raise HypotrackError(f"--run {run!r}: {source} holds no run of that name (it holds {listed})")
        return chosen[0]
    if len(logs) > 1:
        raise HypotrackError(f"{source} holds {len(logs)} runs ({', '.join(repr(n) for n in names)}): name one with "
                             "--run NAME, or triage them all with `hypotrack triage` (one report per run)")
    return logs[0]


def _read_folder(folder: Path) -> list[RunLog]:
    state = state_file(folder)
    if state is not None:
        return [read_trainer_state(state)]
    runs = run_folders(folder)
    if runs:  # a sweep's outputs/ folder: an output_dir a run, each with its checkpoints
        logs = [read_trainer_state(state_file(run)) for run in runs]
        for log, run in zip(logs, runs):
            log.run = run.relative_to(folder).as_posix() if len(runs) > 1 else log.run
        return logs
    if event_files(folder):
        return read_tensorboard(folder)
    if wandb_files(folder):
        return read_wandb(folder)
    stored = mlflow_file_store_runs(folder)
    if stored:
        logs = [read_mlflow(run.name, run.parent.parent.resolve().as_uri()) for run in stored]
        for log, run in zip(logs, stored):
            log.run = run.name if len(stored) > 1 else ""
        return logs
    captured = wandb_console_logs(folder)
    if captured:
        # A W&B run folder committed without its run file (a run killed early, or the file left out for its size):
        # the console output W&B captured beside it is the run's log.
        logs = []
        for path in captured:
            for log in _read_file(path):
                log.run = path.parent.parent.name if len(captured) > 1 else log.run
                log.said.append(f"read {path.relative_to(folder)}, the console output W&B kept of the run (no "
                                "run-<id>.wandb beside it)")
                logs.append(log)
        return logs
    downloads = scalar_downloads(folder)
    if downloads:  # a tag a file, as TensorBoard's "Download CSV" writes them: the curves a user kept of the run
        return read_scalar_downloads(downloads)
    readable = sorted(p.name for p in folder.iterdir() if _named_as_a_log(p))
    if len(readable) == 1:
        # A hand-written loop's or Tinker's log folder holds its one metrics file (metrics.jsonl, train.log, a dumped
        # log_history.json): the folder names the run, and its only log is what a user means by it.
        logs = _read_file(folder / readable[0])
        for log in logs:
            log.said.append(f"read {readable[0]}, the only log in {folder}")
        return logs
    if len(readable) > 1 and (logs := _each_log(folder, readable)):
        return logs
    pasted = [] if readable else [path for path in sorted(folder.iterdir()) if path.suffix.lower() in PASTED_LOGS
                                  and path.is_file() and looks_like_console(decode_text(path.read_bytes()))]
    if len(pasted) == 1:  # a terminal capture kept as a Markdown page, the folder's only log
        logs = _read_file(pasted[0])
        for log in logs:
            log.said.append(f"read {pasted[0].name}, the terminal output pasted into the only page in {folder} that "
                            "holds logged steps")
        return logs
    below = [] if readable or pasted else _folders_with_logs_below(folder)
    if len(below) == 1:  # a project's folder, its logs in logs/ or outputs/<run>/: the only folder that holds any
        try:
            logs = _read_folder(below[0])
        except HypotrackError:
            logs = []
        for log in logs:
            log.said.append(f"read {below[0].relative_to(folder)}/, the only folder under {folder} that holds logs")
        if logs:
            return logs
    hint = f" (it holds {', '.join(readable[:5])}, none of them a log triage reads)" if readable else ""
    if len(below) > 1:
        hint = (f" (the folders under it that hold logs: {', '.join(str(b.relative_to(folder)) for b in below[:5])}"
                f"{' ...' if len(below) > 5 else ''}: pass one of them)")
    swanlab = next(folder.rglob(f"*{SWANLAB_RUN_FILE}"), None)
    if not hint and swanlab is not None:
        hint = (f" (it holds SwanLab run files, such as {swanlab.relative_to(folder)}, in SwanLab's own binary record, "
                "which triage does not read)")
    raise HypotrackError(f"{folder}: no {STATE_FILE} in the folder or in a checkpoint-N/ folder under it, and no "
                         f"TensorBoard event files or W&B run files under it{hint}. TRL writes a {STATE_FILE} with "
                         "every checkpoint (trainer.save_state() writes one at the end); otherwise " + WHAT_TO_PASS)


def _folders_with_logs_below(folder: Path) -> list[Path]:
    """The folders under ``folder``, LOGS_BELOW_DEPTH levels down at most, that hold a file named as a log (what
    ``hypotrack triage .`` in a project finds in its logs/ or outputs/); a hidden folder, an environment's or a
    cache's is not looked into."""
    found, frontier = [], [folder]
    for _ in range(LOGS_BELOW_DEPTH):
        frontier = [sub for parent in frontier for sub in _entries(parent)
                    if sub.is_dir() and not sub.name.startswith((".", "__")) and sub.name not in NOT_LOG_FOLDERS]
        found += [sub for sub in frontier if any(_named_as_a_log(path) and path.is_file() for path in _entries(sub))]
    return found


def _entries(folder: Path) -> list[Path]:
    """What a folder holds, sorted; nothing where it cannot be listed (a folder the user may not read)."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _named_as_a_log(path: Path) -> bool:
    """A file whose name a log can have: a log's suffix, and not the name of a file a run or a project keeps beside
    its logs (its settings, a model's or tokenizer's files, the packages it needs)."""
    return (_log_suffix(path) in LOG_SUFFIXES and path.name not in NOT_LOG_NAMES
            and not path.name.endswith(NOT_LOG_ENDINGS))


def _each_log(folder: Path, names: list[str]) -> list[RunLog]:
    """The runs of a folder of several logs, as a sweep's outputs lie side by side (logs/lr1e-6.log,
    logs/lr1e-5.log): a run a file that holds metrics triage reads, named by the file; the others are said. A log
    named for an evaluation split beside the training log its name pairs with (eval_metrics.jsonl beside
    train_metrics.jsonl) holds that run's evaluation passes, and is read into it."""
    runs: dict[str, list[RunLog]] = {}
    for name in names:
        try:
            found = [log for log in _read_file(folder / name) if _holds_a_metric_triage_reads(log)]
        except HypotrackError:
            continue
        if found:
            runs[name] = found
    joined = _join_split_runs(runs)
    for name in list(runs):
        training = _training_log_of(name, list(runs))
        if training is not None and len(runs[training]) == len(runs[name]) == 1:
            _add_evaluations(runs[training][0], runs.pop(name)[0], name, training)
            joined = True
    joined = _join_process_logs(runs) or joined
    logs = [log for found in runs.values() for log in found]
    if len(logs) == 1 and joined:  # the report says which files it read as the run's
        return logs
    if len(logs) == 1:
        logs[0].said.append(f"read {next(iter(runs))}, the only one of the {len(names)} logs in {folder} that holds "
                            "metrics triage reads")
        return logs
    left_out = [name for name in names if name not in runs]
    named = Counter(log.run for log in logs if log.run)
    for name, found in runs.items():
        for log in found:
            # a run is named by its own name where no other file holds one so named, else by its file's too
            log.run = (log.run if named[log.run] == 1 else f"{name}/{log.run}") if log.run else name
            log.said.append(f"read {len(runs)} of the {len(names)} logs in {folder} as runs of their own"
                            + (f" ({', '.join(left_out)} {'holds' if len(left_out) == 1 else 'hold'} no metric "
                               "triage reads)" if left_out else ""))
    return logs


def _join_split_runs(runs: dict[str, list[RunLog]]) -> bool:
    """Files that hold other metrics of the same named run (W&B's "Download CSV" of each panel: a metric a file,
    headed "<run> - <metric>") are that run's, read as one run; whether any were joined."""
    first: dict[str, tuple[str, RunLog]] = {}
    joined = False
    for name in list(runs):
        for log in list(runs[name]):
            if not log.run:
                continue
            if log.run not in first:
                first[log.run] = (name, log)
                continue
            into_name, into = first[log.run]
            if set(log.series) & set(into.series):
                continue  # the same metric twice: two runs that share a name, not one run's panels
            into.take_metrics(log)
            into.said.append(f"read {name} with {into_name} as run {log.run}'s: they hold its other metrics (a "
                             "tracker's download of each panel, a metric a file)")
            runs[name].remove(log)
            joined = True
        if not runs[name]:
            del runs[name]
    return joined


def _join_process_logs(runs: dict[str, list[RunLog]]) -> bool:
    """Logs that each hold other metrics of the same steps are one run's processes (prime-rl's orchestrator.log
    with the reward and trainer.log with the update's loss, entropy and grad norm), read as one run; a sweep's runs
    log the same metrics. Whether they were joined."""
    logs = [(name, found[0]) for name, found in runs.items() if len(found) == 1 and not found[0].run]
    if len(logs) < 2 or len(logs) != len(runs):
        return False
    metrics = [{canonical_name(key) for key in log.series} - {None} for _, log in logs]
    if not all(metrics):
        return False
    steps = [{step for points in log.series.values() for step, _ in points} for _, log in logs]
    disjoint = all(not (a & b) for i, a in enumerate(metrics) for b in metrics[i + 1:])
    shared = set.intersection(*steps)
    if not disjoint or len(shared) < PROCESS_STEPS_SHARED * min(map(len, steps)):
        return False
    # the log with the reward takes the others' metrics, so that the run is named by it
    ordered = sorted(zip(logs, metrics), key=lambda found: "reward" not in found[1])
    (into_name, into), *others = [named for named, _ in ordered]
    for name, log in others:
        into.take_metrics(log)
        del runs[name]
    into.said.append(f"read {', '.join(name for name, _ in others)} with {into_name} as one run's: they log other "
                     "metrics of the same steps (one run's processes, each logging its own)")
    return True


def _name_words(name: str) -> list[str]:
    return [word for word in re.split(r"[^a-z0-9]+", Path(inner_name(Path(name))).stem.lower()) if word]


def _training_log_of(name: str, names: list[str]) -> str | None:
    """The training log an evaluation log's name pairs with: the same name with its split word (eval, val, test) as
    train or training, or without it (eval_metrics.jsonl: train_metrics.jsonl or metrics.jsonl)."""
    words = _name_words(name)
    for at, word in enumerate(words):
        if word in EVALUATION_WORDS:
            pairs = [[*words[:at], split, *words[at + 1:]] for split in TRAINING_WORDS] + [words[:at] + words[at + 1:]]
            return next((other for other in names if other != name and _name_words(other) in pairs), None)
    return None


def _add_evaluations(training: RunLog, evaluation: RunLog, name: str, training_name: str) -> None:
    """The evaluation log's metrics into its training run, each under an evaluation split (eval/<key>) unless its
    name has one."""
    def split(key: str) -> str:
        return key if key.lower().startswith(EVAL_PREFIXES) else f"{EVAL_PREFIX}{key}"

    training.take_metrics(evaluation, split)
    training.said.append(f"read {name} as the evaluation passes of {training_name} (their names pair as one run's "
                         f"evaluation and training logs), its metrics under {EVAL_PREFIX}")


def _log_suffix(path: Path) -> str:
    """A file's kind by its name, a compressed log's by the name of the file it holds (train.log.gz: .log)."""
    return Path(inner_name(path)).suffix.lower()


def mlflow_file_store_runs(folder: Path) -> list[Path]:
    """The runs of an MLflow file store under ``folder`` (`mlruns/<experiment>/<run id>/`, each with its meta.yaml
    and metrics/), the folder itself where it is one: what a repository keeps of runs logged to ./mlruns."""
    runs = [meta.parent for meta in folder.rglob("meta.yaml") if (meta.parent / "metrics").is_dir()]
    return sorted(run for run in runs if RUN_ID.match(run.name))


def run_folders(folder: Path) -> list[Path]:
    """The folders under ``folder`` that each hold a run's trainer_state.json, in them or in a checkpoint-N/ folder
    (TRL's output_dir), as a sweep leaves them side by side; a checkpoint is its run folder's, not a run."""
    found = {path.parent.parent if CHECKPOINT.match(path.parent.name) else path.parent
             for path in folder.rglob(STATE_FILE) if path.is_file()}
    return sorted(found)


def state_file(folder: Path) -> Path | None:
    direct = folder / STATE_FILE
    if direct.is_file():
        return direct
    checkpoints = [(int(m.group(1)), p) for p in folder.glob(f"checkpoint-*/{STATE_FILE}")
                   if (m := CHECKPOINT.match(p.parent.name))]
    if checkpoints:
        return max(checkpoints)[1]  # the newest checkpoint's log holds every earlier step too
    return None


def _read_file(path: Path) -> list[RunLog]:
    suffix = path.suffix.lower()
    head = _head(path)
    if head.startswith(LFS_POINTER):
        raise HypotrackError(f"{path}: a Git LFS pointer, not the file itself (the repository keeps its content in Git "
                             "LFS): fetch it with `git lfs pull` and pass the file it brings")
    if is_event_file(path):
        return read_tensorboard(path)
    if suffix == SWANLAB_RUN_FILE:
        raise HypotrackError(f"{path}: a SwanLab run file, in SwanLab's own binary record, which triage does not read; "
                             + WHAT_TO_PASS)
    if compression(head):
        return read_compressed(path, head, _read_file)
    if suffix in ARCHIVE_SUFFIXES and is_archive(path):
        return read_archive(path, _read_folder)
    if path.name == WANDB_SUMMARY:
        raise HypotrackError(f"{path}: W&B's summary of the run (each metric's last value), not its history; pass the "
                             "run file beside its files/ folder (run-<id>.wandb), the wandb-history.jsonl of an "
                             "exported run, or a CSV export of its history")
    if path.name == ARGS_FILE:
        raise HypotrackError(f"{path}: a checkpoint's training settings (beta, num_generations, learning rate, ...), "
                             f"not its metrics; triage reads it by itself beside the log: pass the {STATE_FILE} or "
                             "the checkpoint folder that holds it")
    if suffix in SPREADSHEETS:
        raise HypotrackError(f"{path}: {SPREADSHEETS[suffix]}, which triage does not open; save the sheet that holds "
                             "the run's steps as CSV (a step column and a column per metric) and pass that")
    if is_scalar_download(path):  # one tag of the run: read with the run's other tags beside it
        return read_scalar_downloads(downloads_of_its_run(path))
    if suffix in (".csv", ".tsv"):
        return read_csv(path)
    if suffix == PARQUET:
        return read_parquet(path)
    if suffix == NOTEBOOK:
        return [read_notebook(path)]
    if is_wandb_file(path, head):
        return read_wandb(path)
    pasted_log = suffix in PASTED_LOGS and looks_like_console(decode_text(path.read_bytes()))
    if (suffix in NOT_METRICS and not pasted_log) or _binary(head):
        what = NOT_METRICS.get(suffix, "a binary file")
        raise HypotrackError(f"{path}: {what}, not a log of the run's metrics; {WHAT_TO_PASS}")
    if suffix == ".json" or head.lstrip().startswith((b"{", b"[")):
        cut_note: list[str] = []  # what load_json says of a file it read only up to its last whole value
        try:
            content = _json_document(path, head, cut_note)
        except HypotrackError:
            if suffix == ".json":
                raise
            content = None  # a log whose first line starts with '[' or '{' ("[rank0] ...", "[gating] ..."): text
        logs = _json_logs(path, suffix, content)
        for log in logs:
            log.said[:0] = cut_note
        if logs:
            return logs
    text = decode_text(head)
    if suffix == ".jsonl" or _first_line_is_object(text):
        return [read_records(path)]
    whole = decode_text(path.read_bytes())  # UTF-16 too: what `python train.py > train.log` writes in PowerShell
    if looks_like_console(whole):
        return [console_log(whole, str(path), _logging_steps(path.parent / ARGS_FILE))]
    if _has_step_header(text):
        return read_csv(path)
    raise HypotrackError(f"{path}: not a source triage reads: a text file with none of the metrics triage reads (no "
                         "trainer_state log_history, no CSV header with a step column, no JSON records, none of "
                         f"{CONSOLE_FORMATS}); {WHAT_TO_PASS}")


def _head(path: Path, size: int = 4096) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise HypotrackError(f"{path}: cannot read ({exc.strerror})") from None


def _binary(head: bytes) -> bool:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 text (a spreadsheet's export)
        return False
    return b"\x00" in head[:1024] and not (len(head) >= 4 and head[1] == 0 and head[3] == 0)


def _json_document(path: Path, head: bytes, said: list[str]) -> object:
    """The file as one JSON document; None when it holds one object per line (an object at the start of a later
    line: pretty-printed JSON indents its nested objects)."""
    if head.lstrip().startswith(b"{") and b"\n{" in path.read_bytes().rstrip():
        return None
    return load_json(path, said)


def _json_logs(path: Path, suffix: str, content: object) -> list[RunLog]:
    """The runs of a JSON document, by what it holds; none where it is not one (a text log that starts with '[')."""
    if is_trainer_state(content) or (isinstance(content, dict) and STATE_MARKS & set(content)):
        return [read_trainer_state(path, content)]  # a trainer_state.json without its log says so
    if isinstance(content, list):
        return [read_records(path, content)]
    if isinstance(content, dict):
        return [read_object(path, content)]
    if suffix == ".json" and content is None:
        return [read_records(path)]
    return []


def _first_line_is_object(text: str) -> bool:
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict)
    except json.JSONDecodeError:
        return False


def _has_step_header(text: str) -> bool:
    from .values import step_key

    first = next((line for line in text.splitlines() if line.strip()), "")
    return step_key([c.strip().strip('"') for c in re.split(r"[,\t;]", first)]) is not None


def _logging_steps(args_file: Path) -> int | None:
    """A console log's dicts carry no step: the run's logging_steps, where its training_args.bin says it."""
    if not args_file.is_file():
        return None
    try:
        return int(float(settings(args_file).get("logging_steps", "")))
    except (HypotrackError, ValueError):
        return None


def _add_settings(log: RunLog, source: Path) -> None:
    """The training_args.bin beside the log (or in the newest checkpoint), read without torch; else ms-swift's
    args.json beside it."""
    start = source if source.is_dir() else source.parent
    log_folder = Path(log.source.split(" [run ")[0])
    folders = [log_folder.parent if log_folder.is_file() else log_folder, start]
    state = state_file(start) if start.is_dir() else None
    if state is not None:
        folders.append(state.parent)
    candidates = [folder / name for name in (ARGS_FILE, JSON_ARGS_FILE) for folder in folders]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        return
    try:
        read = settings(found)
    except HypotrackError as exc:
        log.said.append(f"{exc} (the run's settings are unknown)")
        return
    for key, value in read.items():
        log.params.setdefault(key, value)
    log.said.append(f"settings read from {found} ({', '.join(f'{k} {read[k]}' for k in ('beta', 'num_generations', 'loss_type', 'learning_rate', 'logging_steps') if k in read)})")


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
    return non_empty(log.sort())
