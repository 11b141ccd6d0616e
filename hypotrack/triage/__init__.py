"""Triage: rank the hypotheses on the metrics a failing run already logged, before anything is trained.

- sources.py   what a source is, handed to its reader: an MLflow run, a training output folder, and the
               files in read_state.py (trainer_state.json), read_tensorboard.py (event files),
               read_csv.py (tracker exports, several runs apart), read_jsonl.py (JSON records),
               read_console.py (printed Trainer dicts, verl's step lines); training_args.py reads the
               checkpoint's training_args.bin beside the log without torch
- progress.py  the run first: learning, flat or getting worse on its task reward, with its uncertainty
- heldout.py   which evaluation key is the held-out score progress.py reads beside the training reward
- keys.py      TRL's key names across versions and trackers -> today's names
- roles.py     which reward function is the task's, which are auxiliary, their weights
- derived.py   metrics derived from TRL's keys (by role, and a few whole-run readings)
- expected.py  readings that are expected behaviour; what the logs say of the run's setup
- evaluate.py  the hypotheses' `triage:` signatures on the run, and the ranking
- api.py       triage(source, hypotheses) -> TriageReport; triage_runs: one report per run a source holds
- calibration.py  triage accuracy on the toy lab's planted faults (for the self-test)

No torch, transformers or trl here; MLflow only when the source is an MLflow run, tensorboard only when it
is TensorBoard event files.
"""

from __future__ import annotations

from .api import TriageReport, triage, triage_log, triage_runs
from .evaluate import SUSPECT_THRESHOLD
from .runlog import RunLog

__all__ = ["RunLog", "SUSPECT_THRESHOLD", "TriageReport", "triage", "triage_log", "triage_runs"]
