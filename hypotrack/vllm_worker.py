"""What hypotrack adds to the vLLM server it starts, inside vLLM's worker process (`--worker-extension-cls`).

vLLM mixes this class into its worker; the server's `/collective_rpc` endpoint (served with
`VLLM_SERVER_DEV_MODE=1`) calls its methods by name, with string arguments, and returns their results as JSON.
Importing this module on a machine without a GPU applies hypotrack's CPU changes (hypotrack/vllm_cpu.py) in the
worker, before vLLM loads the model, as the trainer's process does for a colocated engine.
"""

from __future__ import annotations

import json
from typing import Any

from hypotrack import vllm_cpu

vllm_cpu.apply()


class HypotrackWorker:
    """Methods the trainer's side calls on the served model: what a hook reads, what a planted fault changes."""

    model_runner: Any  # set by vLLM's worker

    def hypotrack_served_dtype(self) -> str:
        """The dtype the served model's weights are in ("float32", "bfloat16", ...)."""
        return str(next(self.model_runner.model.parameters()).dtype).removeprefix("torch.")

    def hypotrack_fingerprints(self, shapes: str) -> dict[str, float]:
        """Each trainer tensor named in ``shapes`` (JSON: name -> shape) -> the fingerprint of the rows of the served
        weights that hold it (hooks/_generator.py: the same arithmetic as for a colocated engine)."""
        from hypotrack.hooks._generator import local_fingerprints

        return local_fingerprints(self.model_runner.model, {name: tuple(shape) for name, shape in
                                                             json.loads(shapes).items()})

    def hypotrack_copy_output_head(self) -> None:
        """An output head of its own for the served model, copied from its tied embedding: a reload then writes the
        embedding and leaves the head stale (the planted fault generator_output_head_stale)."""
        from hypotrack.hooks._generator import copy_output_head

        copy_output_head(self.model_runner.model)

    def hypotrack_tie_output_head(self) -> None:
        """The served model's output head pointed back at its tied embedding (h06's treatment)."""
        from hypotrack.hooks._generator import tie_output_head

        tie_output_head(self.model_runner.model)
