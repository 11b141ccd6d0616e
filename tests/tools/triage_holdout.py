"""Triage accuracy on the plain-TRL logs of the user-side runs, by half (fit / holdout).

The logs are tests/fixtures/triage/user_side_plain_trl.json (recorded by record_user_side_triage.py):
user-written faults trained by TRL's own GRPOTrainer, no hypotrack code in the process. Signatures may
be tuned on the `fit` half only; the `holdout` half is what is reported.

    python tests/tools/triage_holdout.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "triage" / "user_side_plain_trl.json"


def main() -> None:
    from hypotrack.spec import Project, load_library
    from hypotrack.triage.api import triage

    hypotheses = load_library(Project(Path(__file__).resolve().parents[2])).hypotheses
    runs = json.loads(FIXTURE.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for half in ("fit", "holdout"):
            first = top3 = faulty = 0
            for name, run in sorted(runs.items()):
                if run["half"] != half:
                    continue
                folder = Path(tmp) / name
                folder.mkdir()
                (folder / "trainer_state.json").write_text(json.dumps({"log_history": run["log_history"]}))
                report = triage(str(folder), hypotheses, task_reward=run["task_reward"])
                top = ", ".join(f"{e.id} {e.evidence:+.2g}" for e in report.ranking[:3])
                if run["expected"] is None:
                    print(f"{half:8} {name:20} healthy: suspects {[e.id for e in report.suspects()] or 'none'}; {top}")
                    continue
                rank = report.rank_of(run["expected"])
                faulty += 1
                first += rank == 1
                top3 += rank is not None and rank <= 3
                print(f"{half:8} {name:20} {run['expected']}: rank {rank}; {top}")
            print(f"== {half}: planted cause first {first}/{faulty}, in the top 3 {top3}/{faulty}")


if __name__ == "__main__":
    main()
