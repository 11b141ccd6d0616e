"""A log kept gzip-compressed (`train.log.gz`, `metrics.jsonl.gz`, `trainer_state.json.gz`: how a large log fits in
a repository), read as the file it holds: decompressed into a temporary folder under its own name, read there, and
named by the compressed file in everything the report says."""

from __future__ import annotations

import gzip
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hypotrack.errors import HypotrackError

from .runlog import RunLog

GZIP_MAGIC = b"\x1f\x8b"
SUFFIX = ".gz"


def is_gzip(head: bytes) -> bool:
    return head.startswith(GZIP_MAGIC)


def inner_name(path: Path) -> str:
    """The name of the file a compressed one holds: its name without .gz."""
    return path.name[: -len(SUFFIX)] if path.name.lower().endswith(SUFFIX) else path.name


def read_compressed(path: Path, read: Callable[[Path], list[RunLog]]) -> list[RunLog]:
    """What ``read`` makes of the file ``path`` holds, said of ``path``."""
    with _decompressed(path) as inner:
        try:
            logs = read(inner)
        except HypotrackError as exc:
            raise HypotrackError(str(exc).replace(str(inner), str(path))) from None
    for log in logs:
        log.source = log.source.replace(str(inner), str(path))
        log.said = [said.replace(str(inner), str(path)) for said in log.said]
        log.said.append(f"read {path.name}, gzip-compressed, as the {inner.name} it holds")
    return logs


@contextmanager
def _decompressed(path: Path) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="hypotrack-gunzip-") as folder:
        inner = Path(folder) / inner_name(path)
        try:
            with gzip.open(path, "rb") as source, inner.open("wb") as target:
                shutil.copyfileobj(source, target)
        except (OSError, EOFError, zlib.error) as exc:
            raise HypotrackError(f"{path}: a gzip file that does not decompress whole ({exc}); pass the log "
                                 "uncompressed") from None
        yield inner
