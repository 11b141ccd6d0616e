"""Numbers that cannot train stop the arm with the reason, as a HypotrackError the worker reports.

Two places can go non-finite: the loss of a training step (checked as soon as TRL
returns it) and the weights after an optimizer step (a NaN there makes the next
loss NaN; checked at step end, before the next rollout samples from them). And a
task reward that scores nothing (only None or NaN) leaves no signal: TRL trains on
zero advantages and a verdict would read a run that never measured the task.
"""

from __future__ import annotations

from hypotrack.errors import HypotrackError


def check_loss(loss, step: int) -> None:  # a torch tensor
    import torch

    if not torch.isfinite(loss).all():
        raise HypotrackError(f"the loss became {float(loss)} at step {step}; the arm was stopped "
                             "(look at the advantages and the learning rate)")


def check_weights(model, step: int) -> None:
    import torch

    params = [p.detach() for p in model.parameters() if p.requires_grad]
    if params and not torch.isfinite(torch.stack(torch._foreach_norm(params))).all():
        raise HypotrackError(f"the weights became non-finite after step {step} (the next loss would be NaN); "
                             "the arm was stopped: lower the learning rate or check the advantages")


SIGNAL_STEPS = 2  # one batch may legitimately hold nothing the task reward scores; two in a row is the function


def check_task_signal(log, task_reward: str, step: int) -> None:  # a RewardErrorLog
    if step < SIGNAL_STEPS or not log.calls[task_reward] or log.scored[task_reward]:
        return
    raised = log.first_message.get(task_reward)
    why = f"it raised ({raised}) or returned only None or NaN" if raised else "it returned only None or NaN"
    raise HypotrackError(
        f"the task reward {task_reward} gave no score to any completion in the first {step} steps: {why}, so "
        "the run has no task signal and a verdict would mean nothing; the arm was stopped. Call the function "
        "on a few completions from artifacts/samples.json of a --max-steps 1 run and check what it returns")
