"""h11's cause: prompts that are all-or-nothing, whose groups carry no advantage."""

from __future__ import annotations

import zlib
from typing import Any

from hypotrack.faults.base import PlantedFault


class BimodalDifficulty(PlantedFault):
    name = "bimodal_difficulty"
    imitates = "h11"
    description = ("most prompts are all-or-nothing: every completion of them succeeds or every one fails, whatever it "
                   "says, so their groups carry no advantage (trl#3857, unsloth#3485)")
    seams = ("rewards",)

    def rewards(self, trainer: Any, rewards_per_func: Any, inputs: list[dict[str, Any]], completions: list[Any],
                task_index: int) -> Any:
        """90% of prompts (by a hash of the prompt) become all-or-nothing: the task reward of every completion of
        such a prompt is 1 for half of them and 0 for the others, whatever the completion says."""
        rewards_per_func = rewards_per_func.clone()
        for row, item in enumerate(inputs):
            code = zlib.crc32(str(item.get("prompt")).encode())
            if code % 10:
                rewards_per_func[row, task_index] = float(code % 2)
        return rewards_per_func
