"""The hypothesis library and the toy-lab experiments that ship with hypotrack (package data).

`hypotheses/` and `experiments/` here are the repository's top-level folders of the same names
(symbolic links in a checkout, copied files in a built wheel). A project's own `hypotheses/` and
`experiments/` folders add to them, and override them by hypothesis id or experiment name.
"""

from __future__ import annotations

from pathlib import Path

# Resolved, so a checkout names the repository's own files in messages.
HYPOTHESES_DIR = (Path(__file__).resolve().parent / "hypotheses").resolve()
EXPERIMENTS_DIR = (Path(__file__).resolve().parent / "experiments").resolve()
