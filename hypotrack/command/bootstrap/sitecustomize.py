"""Python imports this module at start-up when hypotrack runs a command experiment's arm.

It switches hypotrack's instrumentation on (hypotrack/command/inject.py: nothing heavy is imported here,
so the script's own start-up, environment and import order are unchanged), then imports the next
`sitecustomize` on the path, so a user's or a distribution's own one still runs.
"""

import os
import sys


def _chain() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


if os.environ.get("HYPOTRACK_COMMAND_SPEC"):
    try:
        from hypotrack.command.inject import install

        install()
    except Exception as exc:  # noqa: BLE001 - never break the user's command: say why and run it plain
        print(f"hypotrack: could not instrument this command: {exc}", file=sys.stderr)  # noqa: T201 - no logger is set up yet
_chain()
