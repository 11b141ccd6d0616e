"""h21's fix: TRL's own sampler, which puts a prompt's completions in one group."""

from __future__ import annotations

from typing import Any

from hypotrack.session.trl_seams import Seam, restore
from hypotrack.treatments.base import Treatment


class RepeatSampler(Treatment):
    name = "repeat_sampler"
    fixes = "h21"
    help = ("Treatment arm: TRL's own sampler, so each group is num_generations completions of one prompt (a "
            "trainer subclass's or a wrapper's sampler is set aside).")
    seams = ("train_sampler",)

    def attach(self, trainer: Any) -> None:
        restore(trainer, Seam.TRAIN_SAMPLER)
