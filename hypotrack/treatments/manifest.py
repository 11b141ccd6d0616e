"""The treatments that act inside the trainer, read off their classes (treatments/base.py), without torch.

Adding a treatment is adding its module: its class declares the `hypotrack run` flag it answers to, and
definitions/run_settings.py derives the flag from `TREATMENT_CLASSES`; an arm carries the names of the ones it
trains with (ArmSpec.treatments) and the session builds them with `build_treatments`.
"""

from __future__ import annotations

from pathlib import Path

from hypotrack import units
from hypotrack.errors import HypotrackError
from hypotrack.treatments.base import Treatment

TREATMENT_CLASSES: dict[str, type[Treatment]] = dict(sorted(
    units.discover("hypotrack.treatments", Path(__file__).parent, Treatment, "treatment").items(),
    key=lambda item: (item[1].fixes, item[0])))


def build_treatments(names: list[str]) -> list[Treatment]:
    """The treatments ``names``, in that order, each with its declared settings."""
    unknown = [name for name in names if name not in TREATMENT_CLASSES]
    if unknown:
        raise HypotrackError(f"unknown treatment(s) {unknown} (known: {', '.join(TREATMENT_CLASSES)})")
    return [TREATMENT_CLASSES[name]() for name in names]
