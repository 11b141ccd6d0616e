"""Place the real-run corpus's logs beside corpus.yaml from git clones of the repositories it names.

The corpus's logs are public data kept out of this repository (tests/fixtures/real_runs/.gitignore): whoever runs the
real_runs tests or real_run_accuracy.py puts each entry's files in tests/fixtures/real_runs/<slug>/. Given a folder of
clones (bare or with a work tree, laid out as <owner>+<name>, <owner>+<name>/repo or <owner>/<name>), this takes each
file out of its entry's commit with `git show COMMIT:PATH`, checks its sha256 against the one corpus.yaml records and
writes it; a file already there with the right sha256 is kept. A file it could not place is listed with its
repository, commit and path: its clone is missing, its commit is not in the clone (a later history rewrite), or the
bytes differ (corpus.yaml says where a copy was rebuilt by hand, and how).

    python tests/tools/place_real_runs.py --clones DIR [--into FOLDER]

Exit status 0 when every file is in place, 1 when some are not.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' own modules
from real_run_support import CORPUS_DIR, CORPUS_FILE


@dataclass
class Placed:
    slug: str
    file: str
    problem: str = ""  # why the file is not in place; "" when it is


def git_dir(clones: Path, repository: str) -> Path | None:
    """The clone of ``repository`` under ``clones``, as its git directory, or None."""
    owner, name = repository.split("/", 1)
    for folder in (clones / f"{owner}+{name}", clones / f"{owner}+{name}" / "repo", clones / owner / name):
        for candidate in (folder / ".git", folder):
            if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
                return candidate
    return None


def place(entry: dict, clones: Path, into: Path) -> list[Placed]:
    """Each of ``entry``'s files put in ``into``/<slug>/, or why it is not."""
    placed = []
    repository = git_dir(clones, entry["repository"])
    for file in entry["files"]:
        target = into / entry["slug"] / file["file"]
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == file["sha256"]:
            placed.append(Placed(entry["slug"], file["file"]))
            continue
        where = f"{file['path']} of {entry['repository']} at {entry['commit']}"
        if repository is None:
            placed.append(Placed(entry["slug"], file["file"], f"no clone of {entry['repository']} in {clones}: {where}"))
            continue
        shown = subprocess.run(["git", "--git-dir", str(repository), "show", f"{entry['commit']}:{file['path']}"],
                               capture_output=True)
        if shown.returncode:
            placed.append(Placed(entry["slug"], file["file"], f"not in the clone ({shown.stderr.decode().strip()}): "
                                                               f"{where}"))
        elif hashlib.sha256(shown.stdout).hexdigest() != file["sha256"]:
            placed.append(Placed(entry["slug"], file["file"], f"its bytes differ from the sha256 corpus.yaml records "
                                                               f"(see the entry's notes on its copy): {where}"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(shown.stdout)
            placed.append(Placed(entry["slug"], file["file"]))
    return placed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clones", type=Path, required=True, help="the folder holding the repositories' clones")
    parser.add_argument("--into", type=Path, default=CORPUS_DIR, help="where the <slug>/ folders go (the corpus's own)")
    parser.add_argument("--corpus", type=Path, default=CORPUS_FILE)
    args = parser.parse_args(argv)
    entries = yaml.safe_load(args.corpus.read_text())["entries"]
    results = [result for entry in entries for result in place(entry, args.clones, args.into)]
    missing = [result for result in results if result.problem]
    for result in missing:
        print(f"{result.slug}/{result.file}: {result.problem}", file=sys.stderr)
    print(f"{len(results) - len(missing)} of {len(results)} corpus files in place in {args.into}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
