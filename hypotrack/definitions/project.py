"""Where a project's YAML files live (kept apart from the loader so it imports nothing heavy).

A project sees two layers: the library that ships with hypotrack (hypotrack/library) and its
own `hypotheses/` and `experiments/` folders, which add to it and override it by id or name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hypotrack.shipped import EXPERIMENTS_DIR, HYPOTHESES_DIR


@dataclass(frozen=True)
class Layer:
    name: str  # "shipped" or "project"
    hypotheses_dir: Path
    experiments_dir: Path


@dataclass
class Project:
    """Where the user's YAML files live: HYPOTRACK_PROJECT, else the working directory."""

    root: Path

    @property
    def hypotheses_dir(self) -> Path:
        return self.root / "hypotheses"

    @property
    def experiments_dir(self) -> Path:
        return self.root / "experiments"

    def layers(self) -> list[Layer]:
        """The shipped library, then this project's folders (unless they are the shipped ones, as in a checkout)."""
        shipped = Layer("shipped", HYPOTHESES_DIR, EXPERIMENTS_DIR)
        own = Layer("project", self.hypotheses_dir, self.experiments_dir)
        same = all(_same(a, b) for a, b in ((own.hypotheses_dir, shipped.hypotheses_dir),
                                             (own.experiments_dir, shipped.experiments_dir)))
        return [shipped] if same else [shipped, own]

    @classmethod
    def locate(cls, root: str | Path | None = None) -> "Project":
        if root is None:
            root = os.environ.get("HYPOTRACK_PROJECT") or Path.cwd()
        return cls(Path(root).resolve())


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
