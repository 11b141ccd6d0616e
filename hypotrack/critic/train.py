"""Value-loss training of one critic: masked MSE over completion tokens, AdamW, N short steps.

Both critics get the same optimiser and hyper-parameters; what differs between them is only what the
controls let differ (head init, dropout, data order).
"""
from __future__ import annotations

import torch

from .data import SequenceData


def value_loss(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the tokens in mask (completion tokens)."""
    return ((values - returns) ** 2 * mask).sum() / mask.sum().clamp(min=1.0)


def make_optimizer(critic: torch.nn.Module, settings) -> torch.optim.Optimizer:
    params = critic.parameters() if settings.train_backbone else critic.head_parameters()
    if not settings.train_backbone:
        for p in critic.parameters():
            p.requires_grad_(False)
        for p in critic.head_parameters():
            p.requires_grad_(True)
    return torch.optim.AdamW(
        [p for p in params if p.requires_grad],
        lr=settings.learning_rate,
        betas=(settings.adam_beta1, settings.adam_beta2),
        eps=settings.adam_epsilon,
        weight_decay=settings.weight_decay,
    )


class CriticTrainer:
    """One critic, its optimiser and its own stream of batches.

    A step is split in two so that the loss logged at step t describes the critic after t updates:
    `forward_backward()` computes the pre-update loss on the next batch (train mode, dropout active)
    and its gradients; `apply()` clips, updates and moves to the next batch. The loss at step 0 is the
    seed's "initial loss"; measuring it costs no extra forward pass and changes nothing in training.
    """

    def __init__(self, critic, settings, data: SequenceData, batches):
        self.critic = critic
        self.settings = settings
        self.data = data
        self.optimizer = make_optimizer(critic, settings)
        self._batches = batches
        self._batch = data.select(next(batches))

    def forward_backward(self) -> float:
        self.critic.train()
        self.optimizer.zero_grad(set_to_none=True)
        b = self._batch
        loss = value_loss(self.critic(b.input_ids, b.attention_mask), b.returns, b.loss_mask)
        loss.backward()
        return float(loss.detach())

    def apply(self) -> None:
        if self.settings.max_grad_norm is not None:
            params = [p for p in self.critic.parameters() if p.grad is not None]
            torch.nn.utils.clip_grad_norm_(params, self.settings.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self._batch = self.data.select(next(self._batches))
