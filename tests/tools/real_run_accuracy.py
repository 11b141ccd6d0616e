"""Triage accuracy on public GRPO runs trained outside hypotrack, beside rldoctor's on the same logs.

The corpus is tests/fixtures/real_runs/corpus.yaml: each entry names a log committed to a public
repository (repository, commit, path, licence), its format and a label taken from what the authors
wrote and what the curves show. The logs themselves stay out of git; they sit in <slug>/ beside
corpus.yaml. Each log is triaged with `hypotrack triage SOURCE --json` in a throwaway registry, and
diagnosed with `rldoctor diagnose SOURCE --format json` where rldoctor is installed.

Scores, per half (tune on `fit`, report `holdout`):
- learned, no suspect: runs labelled `learned` on which no suspect is named;
- cause first / in top 3: runs whose label names a hypothesis, where it is the first suspect / among
  the first three;
- false suspects per 10 runs: suspects named on runs labelled `learned` or with cause `none`, plus
  suspects other than the labelled cause on runs whose cause is known, per 10 such runs (runs whose
  cause is unknown or unclear are not scored: nothing says which suspect would be false);
- unreadable: logs the tool could not read (a non-zero exit, a traceback, or no logged step and no reading of
  whether the run learns);
- verdict agrees: where the label says the run learned, was flat or got worse, whether the tool's verdict on
  the run says the same (hypotrack's `progress.state`; rldoctor gives no such verdict).

    python tests/tools/real_run_accuracy.py                      # writes docs/real-runs.md
    python tests/tools/real_run_accuracy.py --half holdout --out tests/fixtures/real_runs/holdout_before.md
    python tests/tools/real_run_accuracy.py --hypotrack-tree /tmp/hypotrack-at-some-commit ...
    python tests/tools/real_run_accuracy.py --corpus my_runs/corpus.yaml --out my_runs/accuracy.md   # your own set
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' own modules
import real_run_support
from real_run_support import CORPUS_DIR, PROJECT

CORPUS = PROJECT_CORPUS = real_run_support.CORPUS_FILE
DEFAULT_OUT = PROJECT / "docs" / "real-runs.md"
TIMEOUT_S = 120
# Labels that say the run did not fail, so any suspect on it is a false alarm.
NO_CAUSE = {"none", None, ""}
UNSCORED_CAUSE = {"unknown"}
# rldoctor's detectors, read as the hypotrack hypothesis each one argues for (None: no hypothesis says it).
RLDOCTOR_AS_HYPOTHESIS = {
    "advantage_collapse": "h11", "entropy_collapse": "h15", "reward_hacking": "h17",
    "length_pathology": "h12", "clip_saturation": None, "kl_drift": "h03", "plateau": None,
    "gradient_pathology": "h16", "reward_composition": "h20",
}
RLDOCTOR_RAISED = {"WARNING", "CRITICAL"}
# hypotrack's verdict on the run, by the label's outcome it agrees with.
VERDICT_OF_OUTCOME = {"learned": "learning", "flat": "flat", "worse": "getting worse"}


@dataclass
class Reading:
    """One tool's reading of one log."""

    readable: bool
    suspects: list[str] = field(default_factory=list)
    verdict: str = ""
    note: str = ""


@dataclass
class Row:
    entry: dict
    source: Path
    hypotrack: Reading
    rldoctor: Reading | None


def log_source(entry: dict) -> Path:
    return real_run_support.log_source(entry, CORPUS_DIR / entry["slug"])


def run_hypotrack(source: Path, tree: Path | None, run_name: str | None = None) -> Reading:
    """``run_name``: the run an export of several runs holds the entry in, passed as a user would (--run)."""
    env = dict(os.environ)
    if tree is not None:  # an older hypotrack checkout, read before any tuning
        env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as scratch:
        env["HYPOTRACK_DB"] = str(Path(scratch) / "registry.db")
        command = [sys.executable, "-m", "hypotrack.cli", "triage", str(source), "--json"]
        command += ["--run", run_name] if run_name else []
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=scratch, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Reading(False, note=f"no answer in {TIMEOUT_S} s")
    if done.returncode != 0 or "Traceback" in done.stderr:
        return Reading(False, note=first_line(done.stderr or done.stdout))
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return Reading(False, note="output is not JSON: " + first_line(done.stdout))
    verdict = run_verdict(report)
    if not report.get("steps") and verdict in ("", "unknown"):  # an export of a held-out score alone is still read
        return Reading(False, note="0 logged steps")
    return Reading(True, suspects=list(report.get("suspects") or []), verdict=verdict)


def run_verdict(report: dict) -> str:
    """Whether triage says the run learns, is flat or gets worse (`progress.state`; older reports have none)."""
    progress = report.get("progress")
    return progress.get("state", "") if isinstance(progress, dict) else ""


def tool(name: str) -> str | None:
    """A command installed beside this interpreter (a virtual environment not activated), else on PATH."""
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)


def run_rldoctor(source: Path) -> Reading | None:
    executable = tool("rldoctor")
    if executable is None:
        return None
    if source.is_dir():
        source = source / "trainer_state.json"
    elif "tfevents" in source.name:  # rldoctor reads a TensorBoard folder, not one event file
        source = source.parent
    try:
        done = subprocess.run([executable, "diagnose", str(source), "--format", "json", "--no-color"],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Reading(False, note=f"no answer in {TIMEOUT_S} s")
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return Reading(False, note=first_line(done.stderr or done.stdout))
    if not report.get("run", {}).get("n_steps"):
        return Reading(False, note="0 logged steps")
    raised = [f for f in report.get("findings", []) if f.get("severity") in RLDOCTOR_RAISED]
    return Reading(True, suspects=[f["detector"] for f in raised], verdict=report.get("headline", ""))


def first_line(text: str) -> str:
    """The message's first line, with the checkout's own path left out so the table reads the same anywhere."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[0] if lines else "").replace(str(CORPUS_DIR) + os.sep, "")[:200]


def as_hypotheses(tool: str, suspects: list[str]) -> list[str | None]:
    if tool == "rldoctor":
        return [RLDOCTOR_AS_HYPOTHESIS.get(s) for s in suspects]
    return list(suspects)


@dataclass
class Score:
    runs: int = 0
    learned: int = 0
    learned_clean: int = 0
    known: int = 0
    first: int = 0
    top3: int = 0
    scored_for_false: int = 0
    false_suspects: int = 0
    unreadable: int = 0
    verdicts: int = 0
    verdicts_agree: int = 0

    def line(self) -> str:
        per10 = 10 * self.false_suspects / self.scored_for_false if self.scored_for_false else 0.0
        return (f"{self.runs} | {self.learned_clean}/{self.learned} | {self.first}/{self.known} | "
                f"{self.top3}/{self.known} | {per10:.1f} ({self.false_suspects} on {self.scored_for_false}) | "
                f"{self.unreadable} | {f'{self.verdicts_agree}/{self.verdicts}' if self.verdicts else '-'}")


def score(rows: list[Row], tool: str) -> Score:
    s = Score()
    for row in rows:
        reading = row.hypotrack if tool == "hypotrack" else row.rldoctor
        if reading is None:
            continue
        label = row.entry["label"]
        s.runs += 1
        if not reading.readable:
            s.unreadable += 1
        named = as_hypotheses(tool, reading.suspects)
        cause = label.get("cause")
        if tool == "hypotrack" and label["outcome"] in VERDICT_OF_OUTCOME:
            s.verdicts += 1
            s.verdicts_agree += reading.verdict == VERDICT_OF_OUTCOME[label["outcome"]]
        if label["outcome"] == "learned":
            s.learned += 1
            s.learned_clean += not named
        if label["outcome"] == "learned" or cause in NO_CAUSE:
            s.scored_for_false += 1
            s.false_suspects += len(named)
        elif cause not in UNSCORED_CAUSE:
            s.known += 1
            s.first += bool(named) and named[0] == cause
            s.top3 += cause in named[:3]
            s.scored_for_false += 1
            s.false_suspects += sum(1 for n in named if n != cause)
    return s


def as_cell(text: str) -> str:
    """Text as one Markdown table cell: a pipe would end the cell, and brackets quoted from a log ("Epoch:[1/1](n/N)")
    would read as a link."""
    return text.replace("|", "/").replace("[", "\\[").replace("]", "\\]")


def cell(reading: Reading | None) -> str:
    if reading is None:
        return "not installed"
    if not reading.readable:
        return as_cell(f"unreadable: {reading.note}")
    text = ", ".join(reading.suspects) or "no suspect"
    if reading.verdict:
        text = f"{as_cell(reading.verdict[:120])}; {text}"
    return text


def render(rows: list[Row], title: str) -> str:
    out = [f"# {title}", "",
           "Generated by `python tests/tools/real_run_accuracy.py`; do not edit by hand. The corpus and its labels:",
           "`tests/fixtures/real_runs/corpus.yaml` (public GRPO runs trained outside hypotrack: each log's repository,",
           "commit, path and licence, and a label taken from what its authors wrote and what its curves show). The",
           "split is by repository; triage is tuned on the fit half only, and the holdout half read before any tuning",
           "is in `tests/fixtures/real_runs/holdout_before.md` (its first 16 runs) and",
           "`tests/fixtures/real_runs/holdout_before_grown.md` (the corpus grown to 59 logs, read before any change for",
           "the new ones) and `tests/fixtures/real_runs/holdout_before_67.md` (grown to 67 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_75.md` (grown to 75 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_155.md` (grown to 155 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_167.md` (grown to 167 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_176.md` (grown to 176 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_182.md` (grown to 182 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_190.md` (grown to 190 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_195.md` (grown to 195 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_203.md` (grown to 203 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_206.md` (grown to 206 logs, likewise) and",
           "`tests/fixtures/real_runs/holdout_before_208.md` (grown to 208 logs, likewise).", "",
           ]
    if CORPUS != PROJECT_CORPUS:  # a set of the user's own runs: its file, not the project's corpus and its history
        out = [f"# {title}", "", f"Generated by `python tests/tools/real_run_accuracy.py --corpus {CORPUS}`.", ""]
    out += ["A suspect is false on a run that learned or did not fail, and so is any suspect other than the labelled",
           "cause on a run whose cause is known; runs whose cause is unknown are not scored for false suspects.",
           "`verdict agrees` compares triage's verdict on the run (learning, flat, getting worse) with the labelled",
           "outcome, on runs whose outcome is not `unclear`.", ""]
    halves = sorted({r.entry["half"] for r in rows}, key=lambda h: h != "holdout")
    out += ["## Scores", "",
            "| half | tool | runs | learned, no suspect | cause first | cause in top 3 | false suspects per 10 runs "
            "| unreadable | verdict agrees |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for half in halves:
        these = [r for r in rows if r.entry["half"] == half]
        out.append(f"| {half} | hypotrack | {score(these, 'hypotrack').line()} |")
        if any(r.rldoctor is not None for r in these):
            out.append(f"| {half} | rldoctor | {score(these, 'rldoctor').line()} |")
    out += ["", "rldoctor's detectors are read as the hypothesis they argue for: "
            + ", ".join(f"{k} as {v or 'none'}" for k, v in RLDOCTOR_AS_HYPOTHESIS.items())
            + "; a finding counts as a suspect at WARNING or CRITICAL.", ""]
    for half in halves:
        out += [f"## {half.capitalize()} half", "",
                "| entry | repository | format | label (outcome, cause) | what the curves show | hypotrack | rldoctor |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in (r for r in rows if r.entry["half"] == half):
            e, label = r.entry, r.entry["label"]
            out.append(f"| {e['slug']} | {e['repository']} | {as_cell(e['format'])} | {label['outcome']}, {label['cause']} | "
                       f"{as_cell(label['curves'])} | {cell(r.hypotrack)} | {cell(r.rldoctor)} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    global CORPUS, CORPUS_DIR  # where log_source and first_line find the logs, for this invocation
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS,
                        help="a corpus file of the same form, its logs in <slug>/ beside it (a set of your own runs)")
    parser.add_argument("--half", choices=["fit", "holdout", "all"], default="all")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--title", default="Triage on public GRPO runs")
    parser.add_argument("--hypotrack-tree", type=Path, default=None,
                        help="run the hypotrack package found in this folder (an older checkout) instead")
    parser.add_argument("--no-rldoctor", action="store_true")
    args = parser.parse_args(argv)
    CORPUS, CORPUS_DIR = args.corpus.resolve(), args.corpus.resolve().parent
    entries = yaml.safe_load(CORPUS.read_text())["entries"]
    if args.half != "all":
        entries = [e for e in entries if e["half"] == args.half]
    missing = [e["slug"] for e in entries if not all((CORPUS_DIR / e["slug"] / f["file"]).exists() for f in e["files"])]
    if missing:
        print(f"{len(missing)} corpus logs are not in {CORPUS_DIR} (they are kept out of git; fetch them from the "
              f"repository and commit corpus.yaml names: tests/tools/place_real_runs.py --clones DIR places them from "
              f"clones): {', '.join(missing)}", file=sys.stderr)
        return 2
    rows = []
    for entry in entries:
        source = log_source(entry)
        rows.append(Row(entry, source, run_hypotrack(source, args.hypotrack_tree, entry.get("run_name")),
                        None if args.no_rldoctor else run_rldoctor(source)))
        print(f"{entry['slug']}: {cell(rows[-1].hypotrack)}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(rows, args.title) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
