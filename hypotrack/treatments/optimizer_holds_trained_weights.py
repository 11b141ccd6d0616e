"""h25's fix: the optimizer holds every weight that trains."""

from __future__ import annotations

from typing import Any

from hypotrack.session.trl_seams import Seam, wrap
from hypotrack.treatments.base import Treatment


class OptimizerHoldsTrainedWeights(Treatment):
    name = "optimizer_holds_trained_weights"
    fixes = "h25"
    help = ("Treatment arm: the optimizer holds every weight that trains (a trainable tensor it is missing, such as "
            "adapters added after the optimizer was built, joins it with the first group's settings).")
    seams = ("optimizer",)

    def attach(self, trainer: Any) -> None:
        """After the optimizer is built (or taken from the script), before the schedule is built over it."""
        def make(original: Any) -> Any:
            def create_optimizer(*args: Any, **kwargs: Any) -> Any:
                optimizer = original(*args, **kwargs)
                model = trainer.accelerator.unwrap_model(trainer.model)
                held = {id(p) for group in optimizer.param_groups for p in group["params"]}
                missing = [p for p in model.parameters() if p.requires_grad and id(p) not in held]
                if missing:
                    first = {key: value for key, value in optimizer.param_groups[0].items() if key != "params"}
                    optimizer.add_param_group({**first, "params": missing})
                return optimizer

            return create_optimizer

        wrap(trainer, Seam.OPTIMIZER, make)
