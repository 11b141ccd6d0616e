"""hypotrack inside the user's own training script.

    trainer = MyGRPOTrainer(...)          # any trl.GRPOTrainer, a subclass of the user's own included
    hypotrack.watch(trainer)              # live invariant gates only
    hypotrack.watch(trainer, hypotheses=["h03", "h06"], stop_on=["gates"])
    trainer.train()

or ``callbacks=[HypotrackCallback(...)]`` in the trainer's constructor. The hooks' ``diag/*`` metrics
go into the trainer's own log stream (every tracker in ``report_to`` records them); when training
ends, is stopped by a gate, or crashes, the run is triaged and the ranking recorded in the registry.

- select.py    which hooks `hypotheses=` and `hooks=` ask for
- session.py   `Watch`: instruments the trainer instance, gates, stopping, the end of the run
- record.py    triage of the finished run and its record in the registry
"""

from __future__ import annotations

import sys
import types
from typing import Any

from hypotrack.watch.session import HypotrackCallback, Watch, watch


class _CallableModule(types.ModuleType):
    """This package answers to ``hypotrack.watch(trainer)`` like the function of the same name.

    Python sets the attribute ``hypotrack.watch`` to this package whenever it is first imported (``import
    hypotrack.watch.session`` included), which would shadow the function; calling the package calls it."""

    def __call__(self, trainer: Any, *args: Any, **kwargs: Any) -> Watch:
        return watch(trainer, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["HypotrackCallback", "Watch", "watch"]
