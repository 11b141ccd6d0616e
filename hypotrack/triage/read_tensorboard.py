"""Read TensorBoard event files (`events.out.tfevents.*`), as transformers' TensorBoardCallback, verl and
OpenRLHF write them: every scalar summary, by tag, at its global step.

The files are read with TensorBoard's own event reader (the `tensorboard` package), imported only here: a
user who triages a trainer_state.json or a CSV never loads it. Each folder that holds event files is one
run; several event files in one folder (a run restarted into the same folder) are one run, read in order.
"""

from __future__ import annotations

from pathlib import Path

from hypotrack.errors import HypotrackError

from .runlog import RunLog
from .values import non_empty

EVENT_FILE_MARK = "tfevents"


def is_event_file(path: Path) -> bool:
    return EVENT_FILE_MARK in path.name and path.is_file()


def event_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob(f"*{EVENT_FILE_MARK}*") if p.is_file())


def read_tensorboard(path: Path) -> list[RunLog]:
    """The runs under ``path`` (one event file, or a folder of them), one RunLog per folder of event files."""
    files = [path] if path.is_file() else event_files(path)
    by_folder: dict[Path, list[Path]] = {}
    for file in files:
        by_folder.setdefault(file.parent, []).append(file)
    logs = []
    for folder, in_folder in sorted(by_folder.items()):
        name = folder.name if path.is_file() or folder == path else str(folder.relative_to(path))
        log = RunLog(source=str(path if path.is_file() else folder), kind="tensorboard",
                     run=name if len(by_folder) > 1 else "")
        for file in sorted(in_folder, key=_written_at):
            _read_events(file, log)
        if log.series or log.nonfinite:
            logs.append(non_empty(log.sort()))
    if not logs:
        raise HypotrackError(f"{path}: its TensorBoard event files hold no scalar metrics (images, text or "
                             "histograms only); point triage at the event files of the training run's scalars")
    return logs


def _written_at(file: Path) -> tuple[int, str]:
    """Event files are named events.out.tfevents.<unix time>.<host>...: the time orders a run's restarts."""
    parts = file.name.split(".")
    stamp = next((int(p) for p in parts[3:4] if p.isdigit()), 0)
    return stamp, file.name


def _read_events(file: Path, log: RunLog) -> None:
    try:
        from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
        from tensorboard.util import tensor_util
    except ImportError:
        raise HypotrackError(f"{file}: a TensorBoard event file, and reading one needs the tensorboard package "
                             "(pip install tensorboard), which is not installed here") from None
    try:
        for event in LegacyEventFileLoader(str(file)).Load():
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                number = _scalar(value, tensor_util)
                if number is not None:
                    log.add(value.tag, event.step, number)
    except Exception as exc:  # noqa: BLE001 - the reader raises its own error kinds for a damaged record
        raise HypotrackError(f"{file}: not a readable TensorBoard event file ({type(exc).__name__}: {exc})") from None


def _scalar(value, tensor_util) -> float | None:
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind == "tensor":
        array = tensor_util.make_ndarray(value.tensor)
        if array.size == 1 and array.dtype.kind in "fiu":
            return float(array.reshape(()))
    return None
