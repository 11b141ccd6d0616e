"""h21's cause: a sampler that mixes prompts within a group."""

from __future__ import annotations

import random
from typing import Any

from hypotrack.faults.base import PlantedFault
from hypotrack.session.trl_seams import Seam, wrap


class GroupsOfMixedPrompts(PlantedFault):
    name = "groups_of_mixed_prompts"
    imitates = "h21"
    description = ("the sampler shuffles each generation batch after repeating its prompts (a custom sampler, or an "
                   "iterable dataset with dataloader workers, trl#3213): a group of num_generations completions holds "
                   "different prompts")
    seams = ("train_sampler",)

    def attach(self, trainer: Any) -> None:
        """Each generation batch's indices (a prompt repeated num_generations times in a row) come out shuffled,
        so consecutive completions are no longer one prompt's."""
        size = int(trainer.args.generation_batch_size)
        seed = int(trainer.args.seed)

        def make(original: Any) -> Any:
            def sampler(*args: Any, **kwargs: Any) -> Any:
                return ShuffledBatches(original(*args, **kwargs), size, seed)

            return sampler

        wrap(trainer, Seam.TRAIN_SAMPLER, make)


class ShuffledBatches:
    """A sampler whose indices are shuffled within consecutive chunks of ``size``."""

    def __init__(self, inner: Any, size: int, seed: int) -> None:
        self.inner, self.size, self.seed = inner, size, seed

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Any:
        rng = random.Random(self.seed)
        chunk: list[int] = []
        for index in self.inner:
            chunk.append(index)
            if len(chunk) == self.size:
                rng.shuffle(chunk)
                yield from chunk
                chunk = []
        rng.shuffle(chunk)
        yield from chunk
