"""hypotrack inside a training command it did not write (a command experiment's arm).

- bootstrap/sitecustomize.py  imported by Python at the command's start-up (hypotrack puts its folder first
                              on PYTHONPATH): switches the instrumentation on, then hands over to any
                              sitecustomize of the user's own
- inject.py                   watches every GRPOTrainer the script creates and streams the arm's events

The runner side (the command lines, starting the process) is hypotrack/run/planning/command_plan.py and
hypotrack/run/launching/command_launch.py.
"""

from __future__ import annotations

from pathlib import Path

BOOTSTRAP_DIR = Path(__file__).resolve().parent / "bootstrap"
SPEC_ENV = "HYPOTRACK_COMMAND_SPEC"  # the arm's spec.json: what to watch, and how
