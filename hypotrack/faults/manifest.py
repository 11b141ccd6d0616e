"""The planted faults, read off their classes (faults/base.py), without importing torch.

Each fault module declares its fault on the class and imports torch only inside its methods, so this module
can import every module of the package and collect the faults it finds: adding a fault is adding its module.
The spec loader checks `plant:` names against `FAULTS`; the runner configures each arm with `configure_arm`;
the session builds the faults an arm plants with `build_faults`. The catalogue is ordered by the hypothesis
each fault imitates (a fault that needs vLLM after the others of its hypothesis).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypotrack import units
from hypotrack.errors import HypotrackError
from hypotrack.faults.base import PlantedFault

_FOUND = units.discover("hypotrack.faults", Path(__file__).parent, PlantedFault, "planted fault")
FAULT_CLASSES: dict[str, type[PlantedFault]] = dict(
    sorted(_FOUND.items(), key=lambda item: (item[1].imitates, bool(item[1].needs_vllm), item[0])))
# name -> (the hypothesis it imitates, what it does)
FAULTS: dict[str, tuple[str, str]] = {name: (cls.imitates, cls.description) for name, cls in FAULT_CLASSES.items()}
# The faults that need an experiment generating with vLLM, and why; the default self-test leaves them out.
NEEDS_VLLM: dict[str, str] = {name: cls.needs_vllm for name, cls in FAULT_CLASSES.items() if cls.needs_vllm}
# The faults the toy lab plants but cannot show within a self-test's run, and why (the default self-test leaves
# them out and says so; `--faults NAME` still runs one, and a miss there fails like any other).
NOT_SHOWN_ON_TOY: dict[str, str] = {name: cls.not_shown_on_toy for name, cls in FAULT_CLASSES.items()
                                    if cls.not_shown_on_toy}
# Training steps after which a fault's signature is visible, for the compact self-test (the others: from the start).
SIGNATURE_STEPS: dict[str, int] = {name: cls.signature_steps for name, cls in FAULT_CLASSES.items()
                                   if cls.signature_steps is not None}


def unknown_fault(name: str) -> HypotrackError:
    return HypotrackError(f"unknown planted fault {name!r} (known: {', '.join(sorted(FAULTS))})")


def build_faults(names: list[str]) -> list[PlantedFault]:
    """The faults ``names``, in that order, each with its declared settings."""
    for name in names:
        if name not in FAULT_CLASSES:
            raise unknown_fault(name)
    return [FAULT_CLASSES[name]() for name in names]


def configure_arm(names: list[str], arm: dict[str, Any]) -> None:
    """The config-level part of each planted fault, on a resolved arm (before the hypothesis's own changes)."""
    for fault in build_faults(names):
        if fault.needs_vllm and not arm["grpo"].get("use_vllm"):
            raise HypotrackError(f"the planted fault {fault.name} needs an experiment that generates with vLLM "
                                 f"(use_vllm: true, such as toy_arith_vllm): {fault.description}")
        if fault.needs_full_fine_tuning and arm["lora"].get("enabled", True):
            raise HypotrackError(f"the planted fault {fault.name} needs full fine-tuning (lora: enabled: false): "
                                 f"{fault.needs_full_fine_tuning}")
        fault.configure(arm)
