"""Non-finite numbers stop the arm with the reason, as a HypotrackError the worker reports.

Two places can go non-finite: the loss of a training step (checked as soon as TRL
returns it) and the weights after an optimizer step (a NaN there makes the next
loss NaN; checked at step end, before the next rollout samples from them).
"""

from __future__ import annotations

from hypotrack.errors import HypotrackError


def check_loss(loss, step: int) -> None:  # noqa: ANN001 - a torch tensor
    import torch

    if not torch.isfinite(loss).all():
        raise HypotrackError(f"the loss became {float(loss)} at step {step}; the arm was stopped "
                             "(look at the advantages and the learning rate)")


def check_weights(model, step: int) -> None:  # noqa: ANN001
    import torch

    params = [p.detach() for p in model.parameters() if p.requires_grad]
    if params and not torch.isfinite(torch.stack(torch._foreach_norm(params))).all():
        raise HypotrackError(f"the weights became non-finite after step {step} (the next loss would be NaN); "
                             "the arm was stopped: lower the learning rate or check the advantages")
