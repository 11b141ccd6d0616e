"""Where the real-run corpus is, and what a user points triage at for each of its entries.

The corpus (tests/fixtures/real_runs/corpus.yaml) lists public GRPO runs trained outside hypotrack; their logs are
kept out of git and placed (tests/tools/place_real_runs.py) in the corpus's folder, or in a shared/real_runs beside
the checkout where a machine keeps them once for every checkout. The tests and the tools read these from here alone.
"""

from __future__ import annotations

from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parents[1]
CORPUS_DIR = PROJECT / "tests" / "fixtures" / "real_runs"
CORPUS_FILE = CORPUS_DIR / "corpus.yaml"
LOG_ROOTS = (CORPUS_DIR, PROJECT.parent / "shared" / "real_runs")


def corpus_entries(corpus_file: Path = CORPUS_FILE) -> list[dict]:
    return yaml.safe_load(corpus_file.read_text())["entries"]


def log_folder(slug: str, roots: tuple[Path, ...] = LOG_ROOTS) -> Path:
    """The entry's folder in the first root that holds it (the first root's, where none does yet)."""
    return next((root / slug for root in roots if (root / slug).is_dir()), roots[0] / slug)


def log_source(entry: dict, folder: Path) -> Path:
    """What a user would point a tool at: the folder when it holds a trainer_state.json, a run's folders (a W&B
    run folder, a hydra output folder) or several logs of the run (its training and evaluation logs, a tracker's
    download of each panel), else the log."""
    names = [f["file"] for f in entry["files"]]
    logs = [n for n in names if not n.endswith(".bin")]
    if "trainer_state.json" in names or any("/" in name for name in names) or len(logs) > 1:
        return folder
    return folder / logs[0]
