"""The corpus of public GRPO runs (tests/fixtures/real_runs/corpus.yaml): every entry says where its log came
from and what happened in the run, and every log in it is one `hypotrack triage` reads without a traceback.

The logs are public data from the repositories that corpus.yaml names, kept out of this repository: the steering
repository holds them in shared/real_runs/<slug>/ beside the checkout (a local copy may sit beside corpus.yaml,
in <slug>/). The tests that read them are marked real_runs, CI's own step (`python -m pytest -m real_runs`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest
from real_run_support import CORPUS_DIR, LOG_ROOTS, PROJECT, corpus_entries

ENTRIES = corpus_entries()
HYPOTHESES = {path.name.split("_", 1)[0] for path in (PROJECT / "hypotheses").glob("h*.yaml")}
OUTCOMES = {"learned", "flat", "worse", "unclear"}
# Files in the corpus folder that are not logs: the corpus itself, its ignore rule, and the holdout's first reading
# each time the corpus grew (holdout_before*.md).
CORPUS_OWN_FILES = {"corpus.yaml", ".gitignore"}
# Logs triage cannot read yet, each with what stops it; an entry comes out when its reader is fixed.
NOT_READ_YET: dict[str, str] = {
    # A holdout log whose per-sample score dicts were once read as its steps: what it prints per iteration has no
    # step on the line, and a reader for it would be written on the holdout.
    "a5damek__grpo_train_loop": "a loop's 'Percentage of correct examples: x' per iteration, with no step on the line, "
                                "among sample completions' 'Metrics: {...}' dicts (no steps)",
    # Two holdout logs added with the corpus grown to 208 (holdout_before_208.md) are read since, so their reading is
    # no longer blind: axiomrl__mgrpo_ckpt10 since triage reads a loop's json.dump of its run (read_json_tables,
    # written for every shape such a dump takes once this log had shown one was missing), and
    # probaligned__grpo_console since triage reads rewards printed as torch and numpy print an array, wrapped or not
    # (written from simple_GRPO's own print statement, which its users' logs carry, and tested on arrays torch and
    # numpy print, not on this log).
}


def _log_folder(slug: str) -> Path | None:
    for root in LOG_ROOTS:
        if (root / slug).is_dir():
            return root / slug
    return None


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["slug"] for e in ENTRIES])
def test_every_entry_says_where_its_log_came_from_and_what_happened(entry):
    assert re.fullmatch(r"[a-z0-9.]+__[A-Za-z0-9._-]+", entry["slug"]), entry["slug"]
    assert re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", entry["repository"])
    assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"])
    assert entry["licence"] and entry["format"] and entry["run"]
    assert entry["half"] in ("fit", "holdout")
    assert entry["files"], "an entry names at least one log file"
    for file in entry["files"]:
        assert file["path"].endswith(file["file"]) and file["bytes"] > 0
        assert re.fullmatch(r"[0-9a-f]{64}", file["sha256"])
    label = entry["label"]
    assert label["outcome"] in OUTCOMES
    # A cause is a hypothesis the authors named or fixed, "unknown", or "none" for a run that did not fail.
    assert label["cause"] in HYPOTHESES | {"unknown", "none"}, label["cause"]
    assert label["cause"] != "none" or label["outcome"] in ("learned", "flat")
    assert label["quote"].strip() and label["curves"].strip()


def test_the_split_is_by_repository():
    halves: dict[str, set[str]] = {}
    for entry in ENTRIES:
        halves.setdefault(entry["repository"], set()).add(entry["half"])
    split = {repo: half for repo, half in halves.items() if len(half) > 1}
    assert not split, f"repositories with runs in both halves: {split}"
    assert {e["half"] for e in ENTRIES} == {"fit", "holdout"}


def test_slugs_are_unique():
    slugs = [e["slug"] for e in ENTRIES]
    assert len(slugs) == len(set(slugs))


def test_every_file_in_the_corpus_folder_is_listed():
    listed = {(e["slug"], f["file"]) for e in ENTRIES for f in e["files"]}
    unlisted = []
    for root in LOG_ROOTS:
        if not root.is_dir():
            continue
        for path in root.rglob("*"):
            own = path.relative_to(root).parts[0]
            if path.is_file() and own not in CORPUS_OWN_FILES and not fnmatch(own, "holdout_before*.md"):
                relative = path.relative_to(root)
                if (relative.parts[0], "/".join(relative.parts[1:])) not in listed:  # a run's folders kept whole
                    unlisted.append(str(path))
    assert not unlisted, f"files in the corpus that corpus.yaml does not list: {unlisted}"


def _has_logs(entry: dict) -> bool:
    folder = _log_folder(entry["slug"])
    return folder is not None and all((folder / f["file"]).is_file() for f in entry["files"])


@pytest.mark.real_runs
def test_every_log_of_the_corpus_is_here():
    missing = [e for e in ENTRIES if not _has_logs(e)]
    assert not missing, (f"{len(missing)} corpus logs are not here ({', '.join(e['slug'] for e in missing[:5])}, ...): "
                         f"each comes from the repository and commit corpus.yaml names, in shared/real_runs/<slug>/ "
                         f"beside the checkout or {CORPUS_DIR.relative_to(PROJECT)}/<slug>/ (tests/tools/"
                         f"place_real_runs.py --clones DIR places them from clones of the repositories)")


@pytest.mark.real_runs
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["slug"] for e in ENTRIES])
def test_each_log_is_the_one_the_corpus_names(entry):
    folder = _log_folder(entry["slug"])
    assert folder is not None, f"{entry['slug']} is not here"
    for file in entry["files"]:
        data = (folder / file["file"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (file["bytes"], file["sha256"]), file["path"]


def _source(entry: dict, folder: Path | None) -> Path:
    assert folder is not None
    names = [f["file"] for f in entry["files"]]
    if "trainer_state.json" in names or any("/" in name for name in names):  # or a run's folders (W&B's)
        return folder
    return folder / next(n for n in names if not n.endswith(".bin"))


def _readability_case(entry: dict):
    reason = NOT_READ_YET.get(entry["slug"])
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(entry, id=entry["slug"], marks=marks)


@pytest.mark.real_runs
@pytest.mark.parametrize("entry", [_readability_case(e) for e in ENTRIES])
def test_triage_reads_every_log_of_the_corpus(entry, tmp_path):
    source = _source(entry, _log_folder(entry["slug"]))
    env = {**os.environ, "HYPOTRACK_DB": str(tmp_path / "registry.db")}
    run = ["--run", entry["run_name"]] if entry.get("run_name") else []  # an export of several runs
    done = subprocess.run([sys.executable, "-m", "hypotrack.cli", "triage", str(source), "--json", *run],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    # Training steps read, or (an export of the evaluation curve alone) a held-out score read as the run's progress
    assert report["steps"] > 0 or report["progress"]["heldout"] and report["progress"]["state"] != "unknown", report
