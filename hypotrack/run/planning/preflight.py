"""Fail before training on a missing model, dataset or import path, data without the columns and rows the
experiment names (run/planning/data_check.py), or vLLM generation where vLLM is not installed, so nothing is
recorded for a bad setup."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypotrack.errors import HypotrackError, first_line
from hypotrack.imports import import_object
from hypotrack.protocol import ArmSpec
from hypotrack.run.planning.data_check import check_data
from hypotrack.toy.lab import toy_task


def preflight(specs: list[ArmSpec]) -> None:
    commands = [spec for spec in specs if spec.command]  # the user's script loads its own model and data
    specs = [spec for spec in specs if not spec.command]
    with interruptible():
        for spec in commands:
            _check_command(spec)
        _check_sources(specs)
        _check_generator(specs)
        check_data(specs)  # reads the rows: after the imports and paths it needs are known to be there


def _check_command(spec: ArmSpec) -> None:
    """The command's folder, program and (for `python x.py`) script exist."""
    import shutil

    where = f"experiment {spec.experiment_name!r}: command {' '.join(spec.command)[:200]!r}"
    cwd = Path(spec.command_cwd or ".")
    if not cwd.is_dir():
        raise HypotrackError(f"{where}: its folder {cwd} does not exist (command.cwd)")
    program = spec.command[0]
    found = (cwd / program).exists() if os.sep in program else shutil.which(program) is not None
    if not found:
        raise HypotrackError(f"{where}: {program!r} is not a program on PATH or a file in {cwd}")
    if Path(program).name.startswith("python") and len(spec.command) > 1 and spec.command[1].endswith(".py"):
        script = cwd / spec.command[1]
        if not script.is_file():
            raise HypotrackError(f"{where}: the script {script} does not exist: the command runs in {cwd} "
                                 f"(command.cwd, relative to the experiment's folder {spec.experiment_dir}); set "
                                 "command.cwd to the folder you run the command in")


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM ends the command as Ctrl-C does (exit 130) while it checks its inputs: a slow dataset loader, a
    probe of a server. Nothing is recorded yet, so there is nothing to reconcile. Where another handler is in
    charge already (a test being recorded), it stays in charge."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _check_generator(specs: list[ArmSpec]) -> None:
    """An arm that generates with vLLM in its own process (colocate mode), or whose server hypotrack would start
    (server mode, no server named), needs vLLM in this environment, which the workers share."""
    import importlib.util

    from hypotrack.vllm_server import INSTALL_VLLM

    for spec in specs:
        settings = spec.grpo
        if not settings.get("use_vllm") or importlib.util.find_spec("vllm") is not None:
            continue
        server = settings.get("vllm_mode") == "server"
        if server and (settings.get("vllm_server_base_url") or settings.get("vllm_server_host")
                       or settings.get("vllm_server_port")):
            continue  # a server the user runs: TRL's client needs no vLLM here
        raise HypotrackError(
            f"experiment {spec.experiment_name!r} generates with vLLM (use_vllm: true, vllm_mode: "
            f"{settings.get('vllm_mode', 'colocate')}){' and names no server for hypotrack to use' if server else ''}, "
            f"but vLLM is not installed in this environment: {INSTALL_VLLM}"
            + (", or name a running server with vllm_server_base_url" if server else ""))


def _check_sources(specs: list[ArmSpec]) -> None:
    checked: set[str] = set()
    for spec in specs:
        for path in spec.rewards:
            if path not in checked:
                import_object(path, spec.experiment_dir, "reward function")
                checked.add(path)
        if spec.data.get("loader") and spec.data["loader"] not in checked:
            import_object(spec.data["loader"], spec.experiment_dir, "dataset loader")
            checked.add(spec.data["loader"])
        if spec.data.get("dataset") and spec.data["dataset"] not in checked:
            checked.add(spec.data["dataset"])
            _check_dataset(spec.data["dataset"])
        model = spec.model
        if model in checked:
            continue
        checked.add(model)
        if toy_task(model) is not None:
            continue
        if Path(model).expanduser().exists():
            if not (Path(model).expanduser() / "config.json").exists():
                raise HypotrackError(f"model {model!r} is a folder without config.json: not a transformers model")
        elif model.startswith((".", "/", "~")) or model.count("/") > 1:
            raise HypotrackError(f"model {model!r}: no such folder")
        else:
            _check_hub_model(model)


def check_output_dir(folder: Path) -> None:
    """The runs' folders go under ``folder``: make sure they can be written before any MLflow run exists.

    The check writes (and removes) one file in the deepest folder that already exists, so a refused
    run leaves nothing behind.
    """
    import tempfile

    existing = folder.expanduser().absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        if not existing.is_dir():
            raise NotADirectoryError(f"{existing} is a file")
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".hypotrack-write-check-"):
            pass
    except OSError as exc:
        raise HypotrackError(f"output folder {folder} (--output-dir): cannot write there ({exc.strerror or exc}); "
                             "the runs' checkpoints, logs and metrics go under it. Give a folder you can "
                             "write") from None


def _check_dataset(dataset: str) -> None:
    """A local folder must exist; a hub dataset must be resolvable (metadata only, no download)."""
    name, config = ([*dataset.split(","), ""])[:2]
    path = Path(name).expanduser()
    if path.exists():
        return
    if name.startswith((".", "/", "~")):
        raise HypotrackError(f"dataset {dataset!r}: {name} does not exist")
    try:
        from datasets import load_dataset_builder

        load_dataset_builder(name, config or None)
    except Exception as exc:  # noqa: BLE001 - offline, typo, gated, missing config
        raise HypotrackError(f"dataset {dataset!r} could not be found: {first_line(exc)}") from None


def _check_hub_model(model: str) -> None:
    """A hub id must be in the local cache or reachable; say which before ten minutes of set-up."""
    try:
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(model, "config.json"), str):
            return
    except Exception:  # noqa: BLE001 - a malformed id is reported below
        pass
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise HypotrackError(f"model {model!r} is not a local folder and not in the Hugging Face cache, "
                             "and HF_HUB_OFFLINE=1 forbids downloading it")
    try:
        from transformers import AutoConfig

        AutoConfig.from_pretrained(model)
    except Exception as exc:  # noqa: BLE001 - network, auth, typos
        raise HypotrackError(f"model {model!r} is not a local folder and could not be fetched: "
                             f"{first_line(exc)}") from None
