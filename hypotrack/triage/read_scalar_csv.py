"""Read TensorBoard's scalar downloads: one tag a CSV file, headed `Wall time,Step,Value`, which TensorBoard's
"Download CSV" link names `run-<run>-tag-<tag>.csv`, each "/" of the run and of the tag written as "_" (scripts that
export a tag the same way write `wall_time,step,value`), or the same points as its "Download JSON" link writes them,
`run-<run>-tag-<tag>.json` holding `[[wall_time, step, value], ...]`.

A run's downloads are read together, one RunLog a run: a user keeps the curves they looked at, a file each, and any
one of them is a single curve of the run. A tag's "/" are put back where the underscored name is one triage knows
(`train_rewards_accuracy_reward_mean` is `train/rewards/accuracy_reward/mean`, `train_completions_mean_length` is
`train/completions/mean_length`); any other tag is read as written, as a hand-written loop's name (`train_reward` is
its reward). A file not named by TensorBoard is one run's, its name the tag.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from .keys import EVAL_PREFIXES, TRAIN_PREFIX, TRAINERS_NAMES
from .read_csv import read_csv
from .runlog import RunLog
from .values import decode_text, non_empty

HEADER = ("wall time", "step", "value")
VALUE = "value"  # the column of the tag's values (TensorBoard heads it "Value")
DOWNLOAD_NAME = re.compile(r"^run-(?P<run>.*)-tag-(?P<tag>.+)\.(?:csv|json)$", re.IGNORECASE)
JSON_POINTS = re.compile(rb"^\s*\[\s*\[")  # how a JSON download opens: a list of [wall_time, step, value] lists
# Known names as TensorBoard writes them in a file name -> the name.
UNDERSCORED = {name.replace("/", "_"): name for name in TRAINERS_NAMES if "/" in name}
REWARD_FUNCTION = re.compile(r"^rewards_(?P<function>.+)_(?P<statistic>mean|std)$")
# The splits a tag may start with, underscored -> as logged (train/, and the evaluation splits triage sets apart).
SPLITS = {prefix.replace("/", "_"): prefix for prefix in (TRAIN_PREFIX, *EVAL_PREFIXES) if prefix.endswith("/")}


def is_scalar_download(path: Path) -> bool:
    """Whether ``path`` is a file of one tag's points: a CSV headed as TensorBoard's download is, or its JSON
    download's list of [wall_time, step, value] lists."""
    if path.suffix.lower() not in (".csv", ".json") or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return False
    if path.suffix.lower() == ".json":
        return bool(JSON_POINTS.match(first)) and _json_points(path) is not None
    first_line = first.decode("utf-8-sig", errors="replace")
    return tuple(cell.strip().lower().replace("_", " ") for cell in first_line.split(",")) == HEADER


def scalar_downloads(folder: Path) -> list[Path]:
    """The scalar downloads a folder holds."""
    return sorted(path for pattern in ("*.csv", "*.json") for path in folder.glob(pattern) if is_scalar_download(path))


def downloads_of_its_run(path: Path) -> list[Path]:
    """``path`` with the downloads of the same run beside it (TensorBoard names each file by its run)."""
    named = DOWNLOAD_NAME.match(path.name)
    if named is None:
        return [path]
    return [other for other in scalar_downloads(path.parent)
            if (match := DOWNLOAD_NAME.match(other.name)) and match["run"] == named["run"]] or [path]


def read_scalar_downloads(paths: Iterable[Path]) -> list[RunLog]:
    """One RunLog for each run the downloads are of, each tag its file's points (read as any tracker's CSV is)."""
    logs: dict[str, RunLog] = {}
    for path in paths:
        named = DOWNLOAD_NAME.match(path.name)
        run, tag = (named["run"], named["tag"]) if named else ("", path.stem)
        log = logs.setdefault(run, RunLog(source=str(path.parent), kind="tensorboard download", run=run))
        key = tag_key(tag)
        if path.suffix.lower() == ".json":
            for step, value in _json_points(path) or []:
                log.add(key, step, value)
            continue
        for download in read_csv(path):
            for points in (download.series, download.nonfinite):
                for step, value in next((p for name, p in points.items() if name.lower() == VALUE), []):
                    log.add(key, step, value)
    read = [non_empty(log.sort()) for log in logs.values()]
    for log in read:
        log.said.append(f"read {len(log.series)} of TensorBoard's scalar downloads (one tag a file) as one run"
                        f"{f' ({log.run})' if log.run else ''}: {', '.join(sorted(log.series))}")
    if len(read) == 1:
        read[0].run = ""  # the only run: no name to pick it by
    return read


def _json_points(path: Path) -> list[tuple[int, float]] | None:
    """(step, value) of each [wall_time, step, value] a JSON download holds; None where it holds anything else."""
    try:
        points = json.loads(decode_text(path.read_bytes()))
    except (OSError, ValueError):
        return None
    if not isinstance(points, list) or not all(isinstance(point, list) and len(point) == 3 for point in points):
        return None
    if not all(isinstance(part, (int, float)) and not isinstance(part, bool) for point in points for part in point):
        return None
    return [(int(step), float(value)) for _, step, value in points]


def tag_key(tag: str) -> str:
    """The logged name a download's underscored tag stands for, where triage knows it; else the tag as written."""
    split = next((s for s in SPLITS if tag.lower().startswith(s)), "")
    body = tag[len(split):]
    if body in UNDERSCORED:
        body = UNDERSCORED[body]
    elif reward := REWARD_FUNCTION.match(body):
        body = f"rewards/{reward['function']}/{reward['statistic']}"
    elif not split:
        return tag
    return SPLITS.get(split, "") + body
