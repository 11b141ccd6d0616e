"""Where a project's YAML files live (kept apart from the loader so it imports nothing heavy)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Project:
    """Where the YAML files live: HYPOTRACK_PROJECT, else the working directory."""

    root: Path

    @property
    def hypotheses_dir(self) -> Path:
        return self.root / "hypotheses"

    @property
    def experiments_dir(self) -> Path:
        return self.root / "experiments"

    @classmethod
    def locate(cls, root: str | Path | None = None) -> "Project":
        if root is None:
            root = os.environ.get("HYPOTRACK_PROJECT") or Path.cwd()
        return cls(Path(root).resolve())
