"""Read a W&B run file (`run-<id>.wandb`), the record of a run that W&B writes beside its `files/` folder
(`wandb/run-<date>-<id>/`), offline or online: what users commit when they commit their `wandb/` folder.

The file is LevelDB's log format (https://github.com/google/leveldb/blob/master/doc/log_format.md) behind W&B's
7-byte header: 32 KiB blocks of chunks, each with a CRC-32, a length and a type that says whether it holds a whole
record or its first, middle or last part. Each record is a protobuf `Record` of W&B's schema (wandb_internal.proto),
parsed by protobuf (which MLflow and TensorBoard already install) against the part of that schema triage reads,
declared here with W&B's own field numbers (RECORD_SCHEMA): protobuf skips the fields it is not told of, so a file of
any W&B release reads without the wandb package. W&B's SDK no longer ships a Python reader of these files (its core
reads them in Go), so the chunk framing is read here; every record's content is protobuf's to parse.

Each history record (one `wandb.log` call) is one row: its items by their key, nested keys joined by '/', values
as W&B wrote them (JSON), at the step the run plotted them against (its define_metric step metric, as TRL's callback
and most loops declare one), else as JSON records are read (read_jsonl.py: the trainer's step before W&B's `_step`).
The run's config (learning_rate, beta, num_generations, ...) becomes its params, as an MLflow run's are.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import struct
import zlib
from pathlib import Path

from hypotrack.errors import HypotrackError

from .read_jsonl import read_records
from .runlog import RunLog

SUFFIX = ".wandb"
CONSOLE_CAPTURE = "output.log"  # what W&B keeps of a run's stdout and stderr, in its files/ folder
HEADER = b":W&B"  # the file's first bytes: W&B's ident, then its magic (0xBEE1) and version (0)
HEADER_LEN = 7
BLOCK_LEN = 32768
CHUNK_HEADER = struct.Struct("<IHB")  # crc32 of the type byte and the data, the data's length, the chunk's type
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
# The part of W&B's Record (wandb_internal.proto) triage reads: message -> its fields as (name, number, type,
# repeated, message type, oneof). The numbers are W&B's; a history item holds its value as JSON text (value_json) or,
# in newer releases, as one typed field of its `value` oneof.
RECORD_SCHEMA = {
    "Record": [("history", 2, "message", False, "HistoryRecord", None),
               ("config", 5, "message", False, "ConfigRecord", None),
               ("metric", 12, "message", False, "MetricRecord", None),
               ("run", 17, "message", False, "RunRecord", None)],
    "HistoryRecord": [("item", 1, "message", True, "HistoryItem", None)],
    "HistoryItem": [("key", 1, "string", False, None, None), ("nested_key", 2, "string", True, None, None),
                    ("boolean", 4, "bool", False, None, "value"), ("integer", 5, "sint64", False, None, "value"),
                    ("number", 6, "double", False, None, "value"), ("text", 7, "string", False, None, "value"),
                    ("json", 8, "string", False, None, "value"), ("value_json", 16, "string", False, None, None)],
    "MetricRecord": [("name", 1, "string", False, None, None), ("glob_name", 2, "string", False, None, None),
                     ("step_metric", 4, "string", False, None, None)],
    "RunRecord": [("run_id", 1, "string", False, None, None), ("config", 4, "message", False, "ConfigRecord", None),
                  ("display_name", 8, "string", False, None, None)],
    "ConfigRecord": [("update", 1, "message", True, "ConfigItem", None)],
    "ConfigItem": [("key", 1, "string", False, None, None), ("nested_key", 2, "string", True, None, None),
                   ("value_json", 16, "string", False, None, None)],
}
SCHEMA_PACKAGE = "hypotrack.wandb_records"


def is_wandb_file(path: Path, head: bytes) -> bool:
    return path.suffix == SUFFIX or head.startswith(HEADER)


def wandb_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob(f"*{SUFFIX}") if p.is_file())


def wandb_console_logs(folder: Path) -> list[Path]:
    """The console output W&B captured of each run under ``folder`` (`<run folder>/files/output.log`)."""
    return sorted(p for p in folder.rglob(CONSOLE_CAPTURE) if p.is_file() and p.parent.name == "files")


def read_wandb(path: Path) -> list[RunLog]:
    """The runs under ``path``: one run file, or every run file under a folder (a `wandb/` folder holds one per run)."""
    files = [path] if path.is_file() else wandb_files(path)
    return [_read_run(file, named=len(files) > 1) for file in files]


def _read_run(file: Path, named: bool) -> RunLog:
    from google.protobuf.message import DecodeError

    record_type = _record_type()
    rows, config, name, axes = [], {}, "", {}
    for data in _records(file):
        record = record_type()
        try:
            record.ParseFromString(data)
        except DecodeError:  # a record W&B's schema does not hold
            raise HypotrackError(f"{file}: a record that is not one of W&B's (written by another W&B version?); "
                                 "export the run's history from W&B as CSV and pass that") from None
        if record.HasField("history"):
            rows.append({_key(item): _item_value(item) for item in record.history.item})
        elif record.HasField("metric") and record.metric.step_metric:
            axes[record.metric.name or record.metric.glob_name] = record.metric.step_metric
        elif record.HasField("run"):
            name = record.run.display_name or record.run.run_id
            config.update(_config(record.run.config.update))
        elif record.HasField("config"):
            config.update(_config(record.config.update))
    if not rows:
        raise HypotrackError(f"{file}: a W&B run file with no logged metrics (no wandb.log call reached it); "
                             "pass the run's console log (files/output.log beside it) or a CSV export instead")
    log = read_records(file, [_on_its_axis(row, axes) for row in rows])
    log.kind = "wandb"
    log.run = name if named else ""
    for key, value in config.items():
        log.params.setdefault(key, value)
    return log


def _records(file: Path) -> list[bytes]:
    """Every record's bytes, its chunks joined; a run killed mid-write ends at its last whole record."""
    data = file.read_bytes()
    if not data.startswith(HEADER) or len(data) < HEADER_LEN:
        raise HypotrackError(f"{file}: not a W&B run file (it does not start with W&B's header): pass the run-<id>.wandb "
                             "W&B wrote, the run's console log (files/output.log beside it) or a CSV export instead")
    records, parts, at = [], b"", HEADER_LEN
    while at + CHUNK_HEADER.size <= len(data):
        left_in_block = BLOCK_LEN - at % BLOCK_LEN
        if left_in_block < CHUNK_HEADER.size:  # a block's tail too short for a chunk is padding
            at += left_in_block
            continue
        checksum, length, kind = CHUNK_HEADER.unpack_from(data, at)
        chunk = data[at + CHUNK_HEADER.size: at + CHUNK_HEADER.size + length]
        if kind == 0 or len(chunk) < length or zlib.crc32(chunk, zlib.crc32(bytes([kind]))) != checksum:
            break  # zeros past the last record (a file preallocated or cut short): the records before it are whole
        at += CHUNK_HEADER.size + length
        if kind == FULL:
            records.append(chunk)
        elif kind == FIRST:
            parts = chunk
        elif kind == MIDDLE:
            parts += chunk
        elif kind == LAST:
            records.append(parts + chunk)
    return records


def _on_its_axis(row: dict, axes: dict[str, str]) -> dict:
    """The row at the step its metrics are plotted against: W&B's define_metric names a metric's step metric (TRL's
    callback: train/global_step for every key; a loop's own: grpo_step for train/*, eval_step for eval/*), which
    stands for the step in place of W&B's row counter _step."""
    for key in row:
        axis = next((step for pattern, step in axes.items() if fnmatch.fnmatchcase(key, pattern)), None)
        if axis is not None and axis != key and isinstance(row.get(axis), (int, float)):
            return {"step": row[axis], **{k: v for k, v in row.items() if k not in ("_step", axis)}}
    return row


@functools.cache
def _record_type() -> type:
    """The message class of RECORD_SCHEMA's Record, built in a descriptor pool of its own."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FieldDescriptorProto
    types = {"message": proto.TYPE_MESSAGE, "string": proto.TYPE_STRING, "bool": proto.TYPE_BOOL,
             "sint64": proto.TYPE_SINT64, "double": proto.TYPE_DOUBLE}
    schema = descriptor_pb2.FileDescriptorProto(name="hypotrack_wandb_records.proto", package=SCHEMA_PACKAGE,
                                                syntax="proto3")
    for message_name, fields in RECORD_SCHEMA.items():
        message = schema.message_type.add(name=message_name)
        oneofs: list[str] = []
        for field_name, number, kind, repeated, of_type, oneof in fields:
            field = message.field.add(name=field_name, number=number, type=types[kind],
                                      label=proto.LABEL_REPEATED if repeated else proto.LABEL_OPTIONAL)
            if of_type:
                field.type_name = f".{SCHEMA_PACKAGE}.{of_type}"
            if oneof:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    message.oneof_decl.add(name=oneof)
                field.oneof_index = oneofs.index(oneof)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(schema)
    descriptor = pool.FindMessageTypeByName(f"{SCHEMA_PACKAGE}.Record")
    build = getattr(message_factory, "GetMessageClass", None)  # newer protobuf; older releases build it by a factory
    return build(descriptor) if build else message_factory.MessageFactory(pool).GetPrototype(descriptor)


def _item_value(item) -> object:
    """A history item's value: its typed field where a newer W&B wrote one, else its JSON text."""
    typed = item.WhichOneof("value")
    if typed == "json":
        return _value(item.json)
    if typed is not None:
        return getattr(item, typed)
    return _value(item.value_json)


def _key(item) -> str:
    return item.key or "/".join(item.nested_key)


def _value(text: str) -> object:
    try:
        return json.loads(text) if text else None
    except json.JSONDecodeError:
        return None


def _config(items) -> dict[str, str]:
    """The run's config as params: W&B keeps each value as {"value": ..., "desc": ...} JSON."""
    out = {}
    for item in items:
        value = _value(item.value_json)
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        if isinstance(value, (str, int, float, bool)):
            out[_key(item)] = str(value)
    return out
