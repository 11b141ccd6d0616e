"""h01's cause: tied groups whose task reward carries a reward model's numeric noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault


class TinyStdRewards(PlantedFault):
    name = "tiny_std_rewards"
    imitates = "h01"
    description = ("the task reward carries +-1e-3 numeric noise (a bf16 reward model), so tied groups get a tiny std "
                   "that group scaling blows up to unit-size advantages")
    seams = ("rewards",)

    @dataclass(frozen=True)
    class Settings:
        noise: float = 1e-3
        """Half-width of the uniform noise added to each task reward (a reward model run in bf16 with
        batch-dependent numerics: identical completions get slightly different scores)."""

    def rewards(self, trainer: Any, rewards_per_func: Any, inputs: list[dict[str, Any]], completions: list[Any],
                task_index: int) -> Any:
        noise = jitter(rewards_per_func.shape[0], trainer.state.global_step, trainer.args.seed, self.config.noise)
        rewards_per_func = rewards_per_func.clone()
        rewards_per_func[:, task_index] = rewards_per_func[:, task_index] + noise.to(rewards_per_func)
        return rewards_per_func


def jitter(count: int, step: int, seed: int, half_width: float = 1e-3) -> Any:
    """Per-sample noise in [-half_width, half_width], the same for the same step and seed."""
    import torch

    generator = torch.Generator().manual_seed(step * 104729 + seed)
    return (torch.rand(count, generator=generator) * 2 - 1) * half_width
