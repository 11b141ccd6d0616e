"""h03's cause: the KL term enters the loss with the wrong sign."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, with_kl_term


class KlWrongSign(PlantedFault):
    name = "kl_wrong_sign"
    imitates = "h03"
    description = ("the KL term enters the loss with a negative coefficient, rewarding divergence from the reference "
                   "(the run gets a KL term of 0.04 if it has none)")
    seams = ("config", "loss")

    @dataclass(frozen=True)
    class Settings:
        kl_beta: float = 0.04
        """The KL coefficient a run without a KL term gets (the usual GRPO recipes' value)."""

    def configure(self, arm: dict[str, Any]) -> None:
        with_kl_term(arm, self.config.kl_beta)

    def attach(self, trainer: Any) -> None:
        if trainer.beta != 0.0:
            trainer.beta = -abs(trainer.beta)
