"""ruff, with the rules pyproject.toml chooses, finds nothing in the package, the tests or the docs' generator."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    exe = shutil.which("ruff")
    assert exe, "ruff is a test dependency (pip install -e '.[test]')"
    result = subprocess.run([exe, "check", "--output-format", "concise", "."], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
