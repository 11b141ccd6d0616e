"""One door into TRL: the session every arm's GRPOTrainer gets, whoever built the trainer.

hypotrack's worker, a command experiment's script (through hypotrack's bootstrap) and `hypotrack.watch` in a
user's script all attach an `ArmSession` to a stock GRPOTrainer (or the user's subclass); the session puts
its parts on in one declared order (arm_session.py). Imports nothing heavy: the parts import torch and TRL
when they are used.

- trl_seams.py         the only module that names TRL's private members: the seams, and `wrap`
- arm_session.py       ArmSession: faults, treatments, hooks, guards, samples, metrics, CONFIG; the arm's files
- tap.py               the hooks' events built from what the seams see
- reward_functions.py  reward functions counted (errors, scores) and checked (one number per completion)
- guards.py            a NaN loss, non-finite weights or no task signal stop the arm with the reason
- samples.py           the rollouts kept for samples.json
- generator.py         vLLM's engine readied before TRL builds it (rendezvous port, CPU changes, dtype)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hypotrack.session.arm_session import ArmSession

__all__ = ["ArmSession"]


def __getattr__(name: str) -> Any:
    if name == "ArmSession":
        from hypotrack.session.arm_session import ArmSession

        return ArmSession
    raise AttributeError(name)
