"""`--launcher ray`: each arm x seed is a Ray task, on a local Ray instance or an existing cluster.

The task runs the same worker command as the python launcher (`python -m hypotrack.worker
SPEC`) in a child process of the Ray worker, in a scratch folder of the node it lands on, so
the arm trains exactly as it does locally. The node may not share the runner's disk, so the
task is a streaming generator: it yields the worker's event lines as they are written, and
at the end the arm's files (log, samples, diagnostics). The runner appends the lines to the
arm folder's events.jsonl, where the usual EventTail and HANDLERS read them, and writes the
files beside them before it uploads the arm to MLflow. Stopping the test cancels the tasks;
a cancelled task ends its worker's process group.

Each task asks Ray for the arm's threads as CPUs and, when the cluster has GPUs, one GPU (Ray
sets CUDA_VISIBLE_DEVICES for it). On a cluster every node needs the same Python environment
with hypotrack, and the paths an experiment names (model folder, modules beside it, toy-lab
cache) must exist on the nodes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hypotrack.endpoints import unanswered
from hypotrack.errors import HypotrackError
from hypotrack.protocol import EVENTS_ENV
from hypotrack.run.launching.base import Launcher, LaunchOptions, set_parent_death_signal, worker_env
from hypotrack.run.launching.signals import check_stop
from hypotrack.run.planning.preflight import interruptible

# Environment the runner hands to every task, so a remote worker sees what a local one would.
PASSED_ENV_PREFIXES = ("HYPOTRACK_", "HF_", "TRANSFORMERS_", "TRL_", "PYTHONHASHSEED", "CUBLAS_WORKSPACE_CONFIG")
POLL_SECONDS = 0.3
CONNECT_SECONDS = 60  # a cluster that accepts TCP but never completes Ray's handshake
STOP_GRACE_SECONDS = 15
MAX_FILE_BYTES = 64 * 2**20  # larger files (checkpoints) stay on the node; the log says which
# A local Ray instance: a small object store, no dashboard, task output kept out of the runner's display.
LOCAL_INIT = {"include_dashboard": False, "object_store_memory": 256 * 2**20}


class RayLauncher(Launcher):
    def __init__(self, options: LaunchOptions) -> None:
        super().__init__(options)
        import ray

        self.ray = ray
        self.started_here = not ray.is_initialized()
        if self.started_here:
            # Ray's head node installs its own SIGTERM handler; the runner's (stop the workers,
            # end the runs KILLED) must stay in charge.
            handler = signal.getsignal(signal.SIGTERM)
            try:
                if options.ray_address:
                    _connect(ray, options.ray_address)
                else:  # "local": a new instance of our own, even where a `ray start` cluster runs here
                    ray.init(address="local", log_to_driver=False, logging_level="ERROR", **LOCAL_INIT)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = options.ray_address or "a local Ray instance"
                raise HypotrackError(f"--launcher ray: cannot start or reach {where}: {exc}") from None
            finally:
                signal.signal(signal.SIGTERM, handler)
        resources = ray.cluster_resources()
        self.cpus = float(resources.get("CPU", 0))
        self.gpus_per_arm = 1 if resources.get("GPU", 0) >= 1 else 0
        self.task = ray.remote(max_retries=0)(run_arm)
        self.passed_env = {k: v for k, v in os.environ.items()
                           if k.startswith(PASSED_ENV_PREFIXES) and k != EVENTS_ENV}

    def start(self, spec_path: Path, events_path: Path, log_path: Path, threads: int) -> "RayWorker":
        if threads > self.cpus:
            raise HypotrackError(f"--launcher ray: an arm asks for {threads} CPUs and the Ray cluster has "
                                 f"{self.cpus:g}; give fewer threads per arm with --parallel")
        stream = self.task.options(num_cpus=threads, num_gpus=self.gpus_per_arm).remote(
            spec_path.read_text(), {**self.passed_env, **worker_env(threads)}, os.getcwd())
        return RayWorker(self.ray, stream, spec_path.parent, events_path, log_path)

    def close(self) -> None:
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()  # a local instance ends; a cluster is only disconnected from


def probe_cluster(address: str) -> None:
    """Refuse a cluster address nothing answers at, in at most endpoints.PROBE_SECONDS; starts and records nothing."""
    with interruptible():
        host, port = _endpoint(address)
        reason = unanswered(host, port)
    if reason:
        raise HypotrackError(
            f"--ray-address {address} (or RAY_ADDRESS): no Ray cluster answers at {host}:{port} ({reason}). Start "
            f"one with `ray start --head --port {port}` on the head node and `ray start --address HEAD:{port}` on the "
            "others, or leave out --ray-address and RAY_ADDRESS to run the arms on a new local Ray instance; nothing "
            "was recorded")


def _endpoint(address: str) -> tuple[str, int]:
    """(host, port) a Ray address connects to: HEAD[:6379], ray://HEAD[:10001], or auto (the cluster `ray start` left)."""
    if address == "auto":
        from ray._private.services import canonicalize_bootstrap_address_or_die  # Ray's own lookup of "auto"

        try:
            address = canonicalize_bootstrap_address_or_die("auto")
        except ConnectionError as exc:
            raise HypotrackError(f"--ray-address auto: {exc} Start one with `ray start --head`, or leave out "
                                 "--ray-address and RAY_ADDRESS to run on a new local Ray instance") from None
    client = address.startswith("ray://")
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        port = parts.port or (10001 if client else 6379)
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise HypotrackError(f"--ray-address {address!r}: give HEAD:PORT (e.g. 10.0.0.5:6379), ray://HEAD:10001 "
                             "or auto")
    return parts.hostname, port


def _connect(ray, address: str) -> None:
    """ray.init on a cluster, in a thread: its GCS client retries in native code that holds off Ctrl-C and
    SIGTERM for minutes, so the runner waits here, where a signal stops the test at once."""
    failure: list[BaseException] = []

    def connect() -> None:
        try:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        except BaseException as exc:  # noqa: BLE001 - handed to the runner's thread
            failure.append(exc)

    thread = threading.Thread(target=connect, name="ray-connect", daemon=True)
    thread.start()
    deadline = time.monotonic() + CONNECT_SECONDS
    while thread.is_alive():
        check_stop()
        if time.monotonic() > deadline:
            raise HypotrackError(f"--ray-address {address}: a server answers, but no Ray cluster accepted the "
                                 f"connection within {CONNECT_SECONDS} s; check that it runs Ray {ray.__version__} "
                                 "(`ray status` on the head node)")
        thread.join(POLL_SECONDS)
    if failure:
        raise failure[0]


class RayWorker:
    """The runner's end of one arm's task: pumps its stream into the arm folder."""

    def __init__(self, ray, stream, arm_dir: Path, events_path: Path, log_path: Path) -> None:
        self.ray, self.stream = ray, stream
        self.arm_dir, self.events_path, self.log_path = arm_dir, events_path, log_path
        self.code: int | None = None
        events_path.touch()

    def poll(self) -> int | None:
        self._pump()
        return self.code

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.time() + timeout
        while self.poll() is None:
            if deadline is not None and time.time() > deadline:
                raise subprocess.TimeoutExpired(f"ray task for {self.arm_dir.name}", timeout)
            time.sleep(0.1)
        return self.code

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        if self.code is None:
            # A plain cancel interrupts the task, whose `finally` stops the worker; force kills the Ray worker.
            self.ray.cancel(self.stream, force=sig == signal.SIGKILL)

    def _pump(self) -> None:
        while self.code is None:
            ready, _ = self.ray.wait([self.stream], timeout=0)
            if not ready:
                return
            try:
                item = self.ray.get(next(self.stream))
            except StopIteration:
                self._end(-1, "the Ray task ended without the worker's exit code")
                return
            except Exception as exc:  # noqa: BLE001 - cancelled, or the node or its Ray worker died
                cancelled = isinstance(exc, self.ray.exceptions.TaskCancelledError)
                self._end(-signal.SIGTERM if cancelled else -1, f"the Ray task ended: {type(exc).__name__}: {exc}")
                return
            if "events" in item:
                with open(self.events_path, "a", encoding="utf-8") as handle:
                    handle.write(item["events"])
            if "exit" in item:
                self._collect(item["files"])
                self.code = int(item["exit"])

    def _collect(self, files: dict[str, bytes]) -> None:
        for name, data in files.items():
            path = self.arm_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

    def _end(self, code: int, reason: str) -> None:
        with open(self.log_path, "a", encoding="utf-8") as handle:
            handle.write(reason[:2000] + "\n")
        self.code = code


# ------------------------------------------------------------------ what runs on the Ray node


def run_arm(spec_json: str, env: dict[str, str], cwd: str) -> Iterator[dict[str, Any]]:
    """Train one arm in a child process; yield {"events": lines} as they come, then {"exit", "files"}.

    The worker runs in the runner's working directory where the node has it (a local Ray, a shared
    disk), as it would under the python launcher; elsewhere in its scratch folder.
    """
    scratch = Path(tempfile.mkdtemp(prefix="hypotrack-arm-"))
    spec = json.loads(spec_json)
    spec["output_dir"] = str(scratch)
    spec_path = scratch / "spec.json"
    spec_path.write_text(json.dumps(spec))
    events = scratch / "events.jsonl"
    events.touch()
    log = open(scratch / "worker.log", "ab")  # noqa: SIM115 - handed to the child
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "hypotrack.worker", str(spec_path)],
            env={**os.environ, **env, EVENTS_ENV: str(events)}, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, cwd=cwd if os.path.isdir(cwd) else scratch, start_new_session=True,
            preexec_fn=set_parent_death_signal)
    finally:
        log.close()
    offset = 0
    try:
        while True:
            code = process.poll()
            lines, offset = _complete_lines(events, offset)
            if lines:
                yield {"events": lines}
            if code is not None:
                break
            time.sleep(POLL_SECONDS)
        yield {"exit": code, "files": _arm_files(scratch)}
    finally:
        _stop(process)
        shutil.rmtree(scratch, ignore_errors=True)


def _complete_lines(path: Path, offset: int) -> tuple[str, int]:
    with open(path, encoding="utf-8") as handle:
        handle.seek(offset)
        chunk = handle.read()
    complete = chunk[: chunk.rfind("\n") + 1]  # a line being written waits for the next read
    return complete, offset + len(complete.encode("utf-8"))


def _arm_files(scratch: Path) -> dict[str, bytes]:
    """The files the runner uploads (log, traceback, artifacts/); not the spec or events it already has."""
    files, skipped = {}, []
    candidates = [scratch / "worker.log", scratch / "traceback.txt", *sorted((scratch / "artifacts").rglob("*"))]
    for path in candidates:
        if not path.is_file():
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            skipped.append(path.name)
            continue
        files[str(path.relative_to(scratch))] = path.read_bytes()
    if skipped:
        note = f"\nhypotrack: left on the Ray node (over {MAX_FILE_BYTES >> 20} MiB): {', '.join(skipped)}\n"
        files["worker.log"] = files.get("worker.log", b"") + note.encode()
    return files


def _stop(process: subprocess.Popen) -> None:
    """End the worker's process group: SIGTERM (it records itself killed), then SIGKILL."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass
