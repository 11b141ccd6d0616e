"""hypotrack: hypothesis-driven debugging for RL fine-tuning of language models.

`hypotrack.watch(trainer)` attaches the diagnostics to a user's own GRPOTrainer (hypotrack/watch/);
it is imported on first use, so `import hypotrack` stays free of torch.
"""

__version__ = "0.1.0"

_LAZY = {"watch": "hypotrack.watch", "HypotrackCallback": "hypotrack.watch"}


def __getattr__(name: str):  # noqa: ANN202 - PEP 562: the torch-importing API loads when it is asked for
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hypotrack' has no attribute {name!r}")
