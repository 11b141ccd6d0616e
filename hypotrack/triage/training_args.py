"""Read a checkpoint's `training_args.bin` without torch and without running any code it holds.

transformers saves the run's TrainingArguments (TRL's GRPOConfig, Unsloth's UnslothGRPOConfig) there with
torch.save: a zip archive whose `*/data.pkl` is a pickle (or, before torch 1.6, the pickle itself after a
few header pickles). Unpickling normally imports and calls whatever classes the pickle names, which would
run code from a file downloaded with someone's run. Here every class the pickle names is replaced by an
inert placeholder that only records its arguments and state, so what comes back is plain values: the
config's fields (beta, num_generations, loss_type, learning_rate, logging_steps, ...), with enums read as
their value. ms-swift writes the same fields as JSON (`args.json`) beside its logging.jsonl, read as they are.
"""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from pathlib import Path

from hypotrack.errors import HypotrackError

from .values import decode_text

ARGS_FILE = "training_args.bin"
JSON_ARGS_FILE = "args.json"  # ms-swift's
# The settings triage reads (the rest of the config is kept out of the report).
SETTINGS = ("beta", "num_generations", "loss_type", "learning_rate", "logging_steps", "scale_rewards",
            "reward_weights", "max_completion_length", "max_prompt_length", "num_iterations", "epsilon",
            "epsilon_high", "temperature", "per_device_train_batch_size", "gradient_accumulation_steps",
            "generation_batch_size", "steps_per_generation", "max_steps", "num_train_epochs", "lr_scheduler_type",
            "warmup_ratio", "warmup_steps", "max_grad_norm", "fp16", "bf16", "use_vllm", "mask_truncated_completions",
            "top_p", "top_k", "seed")


class _Placeholder:
    """Stands for any object the pickle builds: it keeps its constructor arguments and its state."""

    __module_name__ = ""
    __class_name__ = ""
    args: tuple  # what the pickle passed to the constructor
    state: dict  # what it set on the object (a dict or list subclass's items under their keys, or under "")

    def __new__(cls, *args: object, **kwargs: object) -> "_Placeholder":
        instance = object.__new__(cls)
        instance.args = args
        instance.state = {}
        return instance

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __setstate__(self, state: object) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
            merged: dict = {}
            for part in state:
                if isinstance(part, dict):
                    merged.update(part)
            state = merged
        self.state = state if isinstance(state, dict) else {"": state}

    def __setitem__(self, key: object, value: object) -> None:  # dict subclasses are built item by item
        self.state[key] = value

    def append(self, value: object) -> None:  # and list subclasses element by element
        self.state.setdefault("", []).append(value)

    def extend(self, values: list) -> None:
        self.state.setdefault("", []).extend(values)


def _reconstruct(cls: type, base: object = None, state: object = None) -> _Placeholder:
    """copyreg._reconstructor: the plain way a dataclass pickles (cls, object, None); never calls ``base``."""
    return cls.__new__(cls) if isinstance(cls, type) and issubclass(cls, _Placeholder) else _Placeholder()


# Builtins that only build containers of values.
SAFE_BUILTINS: dict[str, object] = {"set": set, "frozenset": frozenset, "list": list, "tuple": tuple, "dict": dict,
                                    "complex": complex}


class _InertUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("copyreg", "_reconstructor"):
            return _reconstruct
        if module == "builtins" and name in SAFE_BUILTINS:
            return SAFE_BUILTINS[name]
        if (module, name) == ("builtins", "getattr"):  # an enum member pickled by name: getattr(Enum, "NAME")
            return lambda owner, attribute: attribute
        return type(name, (_Placeholder,), {"__module_name__": module, "__class_name__": name})

    def persistent_load(self, pid: object) -> None:
        return None  # tensor storages: a training config holds none worth reading


def _plain(value: object, depth: int = 0) -> object:
    """Placeholders as plain values: an enum (built from one argument) is that argument, an object its fields."""
    if depth > 20:
        return None
    if isinstance(value, _Placeholder):
        if not value.state and len(value.args) == 1:
            return _plain(value.args[0], depth + 1)
        if "_value_" in value.state:
            return _plain(value.state["_value_"], depth + 1)
        return {str(k): _plain(v, depth + 1) for k, v in value.state.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    return value


def read_training_args(path: Path) -> dict[str, object]:
    """Every field of the pickled config, as plain values."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HypotrackError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        pickles = _pickles(data)
    except (zipfile.BadZipFile, KeyError):
        pickles = []
    for payload in pickles:
        try:
            unpickler = _InertUnpickler(io.BytesIO(payload))
            while True:  # torch's legacy format: magic number, protocol, system info, then the object
                value = _plain(unpickler.load())
                if isinstance(value, dict) and ("learning_rate" in value or "output_dir" in value):
                    return value
        except EOFError:
            continue
        except Exception:  # noqa: BLE001 - any damaged pickle is the same answer: not a config we can read
            continue
    raise HypotrackError(f"{path}: not a transformers training_args.bin (torch.save of the run's TrainingArguments) "
                         "that hypotrack can read; pass the run's settings another way (an MLflow run's params)")


def _pickles(data: bytes) -> list[bytes]:
    if data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return [archive.read(name) for name in archive.namelist() if name.endswith("data.pkl")]
    return [data]


def settings(path: Path) -> dict[str, str]:
    """The settings triage reads, as the strings a run's params hold (an MLflow run's params are strings)."""
    fields = _json_args(path) if path.suffix == ".json" else read_training_args(path)
    return {key: str(fields[key]) for key in SETTINGS if key in fields and fields[key] is not None}


def _json_args(path: Path) -> dict[str, object]:
    """A run's training arguments written as one JSON object (ms-swift's args.json)."""
    try:
        fields = json.loads(decode_text(path.read_bytes()))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HypotrackError(f"{path}: not a readable JSON file of training arguments ({exc})") from None
    if not isinstance(fields, dict) or not ("learning_rate" in fields or "output_dir" in fields):
        raise HypotrackError(f"{path}: a JSON file that holds no training arguments (no learning_rate, no output_dir)")
    return fields
