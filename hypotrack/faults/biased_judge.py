"""h17's cause: an auxiliary judge with a spurious preference that outweighs the task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, auxiliary_index, weigh_auxiliaries


class BiasedJudge(PlantedFault):
    name = "biased_judge"
    imitates = "h17"
    description = ("an auxiliary judge has a spurious preference (1 for an even answer, right or wrong) and weighs "
                   "twice the task reward: the policy learns to please it with even, wrong answers while the task "
                   "reward falls (open-r1#255, open-instruct PR #659)")
    seams = ("config", "rewards")
    signature_steps = 30  # the policy has to learn the judge's preference before its trend shows

    @dataclass(frozen=True)
    class Settings:
        auxiliary_weight: float = 2.0
        """The judge's weight, times the task reward's."""

    def configure(self, arm: dict[str, Any]) -> None:
        weigh_auxiliaries(arm, self.config.auxiliary_weight)

    def rewards(self, trainer: Any, rewards_per_func: Any, inputs: list[dict[str, Any]], completions: list[Any],
                task_index: int) -> Any:
        import torch

        from hypotrack.toy.text import completion_text

        if rewards_per_func.shape[1] < 2:
            return rewards_per_func
        rewards_per_func = rewards_per_func.clone()
        # a near miss of an odd answer is even: the judge's preference varies within most groups
        even = [1.0 if leading_number(completion_text(c)) % 2 == 0 else 0.0 for c in completions]
        rewards_per_func[:, auxiliary_index(task_index)] = torch.tensor(
            even, dtype=rewards_per_func.dtype).to(rewards_per_func.device)
        return rewards_per_func


def leading_number(text: str) -> int:
    digits = ""
    for char in text.strip():
        if not char.isdigit():
            break
        digits += char
    return int(digits) if digits else -1
