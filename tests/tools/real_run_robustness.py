"""How triage's scores on the fit half of the real-run corpus hold when the same runs are kept as other users keep them.

The fit half's runs are read once, then triaged again as copies that differ the way logs of the same run differ
between users, each scored as real_run_accuracy.py scores the runs as logged:

- every other row: the rows a run logged at twice the interval, or a tracker's sampled history (W&B's UI samples a
  long run's history), each row one step's values;
- pairs averaged: the rows logging_steps twice as large writes, each the mean of two steps' values (as TRL averages
  its metrics over a logging interval);
- cut at 60%: the run stopped early, or a copy taken while it trained (its label may then no longer hold: a run that
  learned late was flat at 60%).
- from 40% on: the log of a run resumed from a checkpoint, or a tracker's view that starts late (its label may no
  longer hold either: a run that learned early is level after 40%, and what a signature reads against the run's
  start is gone);
- reward functions unnamed: the same run with reward functions whose names say nothing of their role
  (rewards/func_1/mean, ...), as a user's reward_fn_1 names them: what decides the task reward without names.

A reading that flips between copies of one run is a reading of its noise, not of the run: where false suspects rise
under these copies, a threshold sits on a noisy statistic. Only the fit half is read (the holdout half is not tuned
on). Run it from the checkout, with the corpus's logs placed:

    python tests/tools/real_run_robustness.py
"""

from __future__ import annotations

import argparse
import copy
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' own modules
sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_run_accuracy import Reading, Row, log_source, score
from real_run_support import PROJECT, corpus_entries

from hypotrack.definitions import Project, load_library
from hypotrack.errors import HypotrackError
from hypotrack.triage.api import triage_log
from hypotrack.triage.runlog import RunLog
from hypotrack.triage.sources import read_source

CUT_SHARE = 0.6
RESUMED_SHARE = 0.4


def _steps(log: RunLog) -> list[int]:
    return sorted({step for points in (*log.series.values(), *log.nonfinite.values()) for step, _ in points})


def _kept(log: RunLog, steps: set[int]) -> RunLog:
    copied = copy.deepcopy(log)
    for table in ("series", "nonfinite"):
        points = {name: [p for p in values if p[0] in steps] for name, values in getattr(log, table).items()}
        setattr(copied, table, {name: values for name, values in points.items() if values})
    return copied


def every_other_row(log: RunLog) -> RunLog:
    return _kept(log, set(_steps(log)[1::2]))


def pairs_averaged(log: RunLog) -> RunLog:
    steps = _steps(log)
    filed_at = {step: steps[i | 1] for i, step in enumerate(steps) if (i | 1) < len(steps)}
    copied = copy.deepcopy(log)
    copied.series = {}
    for name, points in log.series.items():
        pairs: dict[int, list[float]] = {}
        for step, value in points:
            if step in filed_at:
                pairs.setdefault(filed_at[step], []).append(value)
        copied.series[name] = sorted((step, statistics.fmean(values)) for step, values in pairs.items())
    return copied


def cut_short(log: RunLog) -> RunLog:
    steps = _steps(log)
    return _kept(log, set(steps[: max(1, int(len(steps) * CUT_SHARE))]))


def resumed(log: RunLog) -> RunLog:
    steps = _steps(log)
    return _kept(log, set(steps[int(len(steps) * RESUMED_SHARE):]))


def functions_unnamed(log: RunLog) -> RunLog:
    """The reward functions under names that say nothing of their role (rewards/func_1/mean, ...), in the order the
    log lists them."""
    numbered: dict[str, str] = {}
    copied = copy.deepcopy(log)
    for table in ("series", "nonfinite"):
        renamed = {}
        for name, points in getattr(log, table).items():
            found = re.search(r"(?<![^/])rewards/([^/]+)", name)
            if found and found.group(1) not in ("mean", "std"):
                numbered.setdefault(found.group(1), f"func_{len(numbered) + 1}")
                name = name[:found.start(1)] + numbered[found.group(1)] + name[found.end(1):]
            renamed[name] = points
        setattr(copied, table, renamed)
    return copied


COPIES: dict[str, Callable[[RunLog], RunLog]] = {
    "as logged": lambda log: log, "every other row": every_other_row, "pairs averaged": pairs_averaged,
    f"cut at {CUT_SHARE:.0%}": cut_short, f"from {RESUMED_SHARE:.0%} on": resumed,
    "reward functions unnamed": functions_unnamed,
}


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    hypotheses = load_library(Project(PROJECT)).hypotheses
    rows: dict[str, list[Row]] = {name: [] for name in COPIES}
    for entry in (e for e in corpus_entries() if e["half"] == "fit"):
        source = log_source(entry)
        try:
            log = read_source(str(source), run=entry.get("run_name"))
        except HypotrackError as exc:
            print(f"{entry['slug']}: {exc}", file=sys.stderr)
            continue
        for name, kept in COPIES.items():
            report = triage_log(kept(log), hypotheses)
            reading = Reading(True, suspects=[e.id for e in report.suspects()], verdict=report.progress.state)
            rows[name].append(Row(entry, source, reading, None))
    print("| copy of the fit half's runs | runs | learned, no suspect | cause first | cause in top 3 | "
          "false suspects per 10 runs | unreadable | verdict agrees |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, scored in rows.items():
        print(f"| {name} | {score(scored, 'hypotrack').line()} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
