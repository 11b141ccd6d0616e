"""What the read-only commands need of each hypothesis, cached after a full validation.

`status`, `next`, `log`, `report`, `mark` and `note` only need titles,
priorities, prerequisites and the run command. Parsing and validating every
YAML file with pydantic on each call costs more than the rest of `status`
together, so the validated result is kept as plain JSON keyed by the files'
mtimes and sizes (and the modules that define what is valid). Any change to a
file means a cache miss and a full validation, so bad input is still reported;
only a clean validation is ever cached. No pydantic or YAML import on a hit.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from .vocabulary import PRIORITY_RANK  # noqa: F401 - the roadmap orders by it

FORMAT = 2

# Modules whose contents decide whether a file is valid (models, known hooks and metrics).
_RULE_MODULES = ("definitions/models.py", "definitions/triage.py", "definitions/loader.py", "definitions/metrics.py", "definitions/settings_check.py",
                 "definitions/grpo_fields.py", "definitions/run_settings.py", "definitions/vocabulary.py", "hooks/manifest.py",
                 "parity/manifest.py", "parity/settings.py", "critic/manifest.py", "critic/settings.py")


@dataclass(frozen=True)
class HypothesisSummary:
    id: str
    title: str
    priority: str
    statement: str
    order_note: str
    prerequisites: tuple[str, ...]
    command: str  # the `hypotrack run` line that tests it
    file: str


def _cache_path(project_root: Path) -> Path:
    root = os.environ.get("HYPOTRACK_CACHE") or Path.home() / ".cache" / "hypotrack"
    digest = hashlib.sha1(str(project_root).encode()).hexdigest()[:16]
    return Path(root) / "summaries" / f"{digest}.json"


def _fingerprint(project_root: Path, extra_files: list[str]) -> list[list]:
    from hypotrack.shipped import EXPERIMENTS_DIR, HYPOTHESES_DIR

    package = Path(__file__).resolve().parents[1]
    folders = [project_root / "hypotheses", project_root / "experiments", HYPOTHESES_DIR, EXPERIMENTS_DIR]
    files = sorted({*(str(p) for d in folders for p in d.glob("*.y*ml")),
                    *extra_files, *(str(package / m) for m in _RULE_MODULES),
                    *(str(p) for p in (package / "hooks").glob("*.py"))})  # each hook declares its metrics
    out = []
    for name in files:
        try:
            stat = os.stat(name)
            out.append([name, stat.st_mtime_ns, stat.st_size])
        except OSError:
            out.append([name, None, None])
    return out


def load_summaries(project_root: Path) -> dict[str, HypothesisSummary]:
    """Summaries from the cache when nothing changed, else from a full validation (raises SpecError)."""
    from hypotrack import __version__

    cache = _cache_path(project_root)
    try:
        cached = json.loads(cache.read_text())
        if (cached["format"] == FORMAT and cached["version"] == __version__
                and cached["fingerprint"] == _fingerprint(project_root, cached["extra_files"])):
            return {h["id"]: HypothesisSummary(**{**h, "prerequisites": tuple(h["prerequisites"])})
                    for h in cached["hypotheses"]}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return _validate_and_cache(project_root, cache, __version__)


def _validate_and_cache(project_root: Path, cache: Path, version: str) -> dict[str, HypothesisSummary]:
    from .loader import load_library
    from .project import Project

    library = load_library(Project(project_root))
    library.raise_if_problems()
    summaries = {
        h.id: HypothesisSummary(h.id, h.title, h.priority, h.statement, h.order_note, tuple(h.prerequisites),
                                h.command_line(), str(library.hypothesis_files[h.id]))
        for h in library.hypotheses.values()
    }
    layer_dirs = {layer.experiments_dir for layer in library.project.layers()}
    extra = [str(p) for p in library.experiment_files.values() if p.parent not in layer_dirs]
    record = {"format": FORMAT, "version": version, "extra_files": extra,
              "fingerprint": _fingerprint(project_root, extra),
              "hypotheses": [asdict(s) for s in summaries.values()]}
    try:  # a cache that cannot be written only costs speed
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, cache)
    except OSError:
        pass
    return summaries
