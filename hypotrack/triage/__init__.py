"""Triage: rank the hypotheses on the metrics a failing run already logged, before anything is trained.

- sources.py   read an MLflow run, a training output folder (trainer_state.json) or a CSV export
- keys.py      TRL's key names across versions and trackers -> today's names
- roles.py     which reward function is the task's, which are auxiliary, their weights
- derived.py   metrics derived from TRL's keys (by role, and a few whole-run readings)
- expected.py  readings that are expected behaviour; what the logs say of the run's setup
- evaluate.py  the hypotheses' `triage:` signatures on the run, and the ranking
- api.py       triage(source, hypotheses) -> TriageReport
- calibration.py  triage accuracy on the toy lab's planted faults (for the self-test)

No torch, transformers or trl here; MLflow only when the source is an MLflow run.
"""

from __future__ import annotations

from .api import TriageReport, triage, triage_log
from .evaluate import SUSPECT_THRESHOLD
from .runlog import RunLog

__all__ = ["RunLog", "SUSPECT_THRESHOLD", "TriageReport", "triage", "triage_log"]
