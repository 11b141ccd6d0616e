"""Per-hook time per step on the toy lab: wraps every hook event with a timer (python tests/tools/hook_time.py)."""
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path

import hypotrack.bench.step_time as b
from hypotrack.hooks import ALL_HOOKS, get_hook_class

acc = collections.defaultdict(float)
for name in ALL_HOOKS:
    cls = get_hook_class(name)
    for meth in ("on_rollout", "on_loss", "on_step_end", "on_train_begin", "on_before_optimizer_step"):
        f = getattr(cls, meth, None)
        if f is None:
            continue

        def wrap(f=f, key=f"{name}.{meth}"):
            def g(self, *a, **k):
                started = time.perf_counter()
                result = f(self, *a, **k)
                acc[key] += time.perf_counter() - started
                return result
            return g
        setattr(cls, meth, wrap())
with tempfile.TemporaryDirectory() as t:
    clock = b._train("hooks", "toy_arith", 40, Path(t))
steps = 40
tot = sum(acc.values())
print(f"median step {statistics.median(clock.step_times(5))*1000:.1f} ms; hooks total per step {tot/steps*1000:.2f} ms", file=sys.stderr)
for k, v in sorted(acc.items(), key=lambda x: -x[1]):
    print(f"{k:40s} {v/steps*1000:.2f} ms/step", file=sys.stderr)
