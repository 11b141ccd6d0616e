"""tests/tools/place_real_runs.py: the real-run corpus's logs placed from git clones of the repositories corpus.yaml
names, each checked against its recorded sha256, and every file it could not place named with where it comes from."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import yaml

TOOL = Path(__file__).resolve().parent / "tools" / "place_real_runs.py"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def entry(slug: str, repository: str, commit: str, path: str, data: bytes) -> dict:
    return {"slug": slug, "repository": repository, "commit": commit,
            "files": [{"file": Path(path).name, "path": path, "bytes": len(data),
                       "sha256": hashlib.sha256(data).hexdigest()}]}


def test_logs_are_placed_from_clones_and_every_one_it_cannot_place_is_named(tmp_path):
    clone = tmp_path / "clones" / "someone+grpo-runs"
    clone.mkdir(parents=True)
    git(clone, "init", "-q")
    log = b'{"loss": 0.01, "reward": 0.25, "step": 1}\n'
    (clone / "logs").mkdir()
    (clone / "logs" / "metrics.jsonl").write_bytes(log)
    git(clone, "add", ".")
    git(clone, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "run")
    commit = git(clone, "rev-parse", "HEAD")
    (clone / "logs" / "metrics.jsonl").write_bytes(b"rewritten later\n")  # the work tree is not what is read
    git(clone, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qam", "later")
    corpus = tmp_path / "corpus.yaml"
    corpus.write_text(yaml.safe_dump({"entries": [
        entry("good__run", "someone/grpo-runs", commit, "logs/metrics.jsonl", log),
        entry("changed__run", "someone/grpo-runs", commit, "logs/metrics.jsonl", log + b"more\n"),
        entry("absent__run", "nobody/gone", commit, "metrics.jsonl", log),
    ]}))
    into = tmp_path / "into"

    done = subprocess.run([sys.executable, str(TOOL), "--clones", str(tmp_path / "clones"), "--into", str(into),
                           "--corpus", str(corpus)], capture_output=True, text=True)

    assert done.returncode == 1, done.stderr
    assert (into / "good__run" / "metrics.jsonl").read_bytes() == log
    assert not (into / "changed__run").exists()  # bytes that differ from the record are never placed
    assert "changed__run/metrics.jsonl: its bytes differ from the sha256 corpus.yaml records" in done.stderr
    assert f"absent__run/metrics.jsonl: no clone of nobody/gone in {tmp_path / 'clones'}" in done.stderr
    assert "1 of 3 corpus files in place" in done.stdout
