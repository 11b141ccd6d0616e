"""hypotrack: hypothesis-driven debugging for RL fine-tuning of language models.

`hypotrack.watch(trainer)` attaches the diagnostics to a user's own GRPOTrainer (hypotrack/watch/);
it is imported on first use, so `import hypotrack` stays free of torch.
"""

__version__ = "0.1.0"

_LAZY = {"watch": "hypotrack.watch", "HypotrackCallback": "hypotrack.watch"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        # Importing the subpackage hypotrack.watch made the package attribute `watch` that module; the
        # function takes the name back, so a second `hypotrack.watch(...)` and `from hypotrack import watch`
        # get the function too (the module itself is callable as well, for scripts that imported it first).
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hypotrack' has no attribute {name!r}")
