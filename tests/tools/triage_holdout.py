"""Triage accuracy on the plain-TRL logs of the user-side runs, by half (fit / holdout).

The logs are tests/fixtures/triage/user_side_plain_trl.json (recorded by record_user_side_triage.py):
user-written faults trained by TRL's own GRPOTrainer, no hypotrack code in the process. Signatures may
be tuned on the `fit` half only; the `holdout` half is what is reported.

A run counts only where its fault shows: a reward a policy could hack (h17) that the policy never
climbed in the run's steps is no instance of hacking, whatever the fault was meant to do, and is listed
apart (the signature that reads the climb is h17's own definition of the failure).

    python tests/tools/triage_holdout.py
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "triage" / "user_side_plain_trl.json"
PROJECT = Path(__file__).resolve().parents[2]
# h17's failure: the auxiliary rewards climb (significantly) while the task reward falls by a tenth
CLIMB_SLOPE_T, TASK_GROWTH = 2.0, 0.9


@dataclass
class Triaged:
    name: str
    half: str
    expected: str | None
    rank: int | None
    top: str
    suspects: list[str]
    shows_fault: bool = True


def _shows_fault(report, expected: str | None, log) -> bool:
    if expected != "h17":
        return True
    from hypotrack.reading import aggregate_steps as aggregate

    climb = aggregate(log.series.get("aux_reward/mean", []), "slope_t", 10)
    task = aggregate(log.series.get("task_reward/mean", []), "growth", 10)
    return climb is not None and task is not None and climb >= CLIMB_SLOPE_T and task <= TASK_GROWTH


def triage_fixture() -> list[Triaged]:
    """Every recorded run, triaged from its trainer_state.json as `hypotrack triage OUTPUT_DIR` reads it."""
    from hypotrack.definitions import Project, load_library
    from hypotrack.triage.api import triage_log
    from hypotrack.triage.derived import add_derived
    from hypotrack.triage.keys import canonical, reward_functions
    from hypotrack.triage.roles import assign_roles
    from hypotrack.triage.sources import read_source

    hypotheses = load_library(Project(PROJECT)).hypotheses
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, run in sorted(json.loads(FIXTURE.read_text()).items()):
            folder = Path(tmp) / name
            folder.mkdir()
            (folder / "trainer_state.json").write_text(json.dumps({"log_history": run["log_history"]}))
            source = read_source(str(folder))
            report = triage_log(source, hypotheses, task_reward=run["task_reward"])
            log = canonical(source).log  # triage_log ranks on its own renamed copy; this one is for the check
            add_derived(log, assign_roles(log, reward_functions(log), run["task_reward"]))
            out.append(Triaged(
                name, run["half"], run["expected"],
                report.rank_of(run["expected"]) if run["expected"] else None,
                ", ".join(f"{e.id} {e.evidence:+.2g}" for e in report.ranking[:3]),
                [e.id for e in report.suspects()], _shows_fault(report, run["expected"], log)))
    return out


def summary(runs: list[Triaged], half: str) -> dict[str, int]:
    faulty = [r for r in runs if r.half == half and r.expected is not None and r.shows_fault]
    clean = [r for r in runs if r.half == half and r.expected is None]
    return {"faulty": len(faulty), "first": sum(r.rank == 1 for r in faulty),
            "top3": sum(r.rank is not None and r.rank <= 3 for r in faulty), "clean": len(clean),
            "clean_with_suspect": sum(bool(r.suspects) for r in clean),
            "not_shown": sum(r.half == half and not r.shows_fault for r in runs)}


def main() -> None:
    runs = triage_fixture()
    for half in ("fit", "holdout"):
        for r in (r for r in runs if r.half == half):
            if r.expected is None:
                print(f"{half:8} {r.name:24} healthy: suspects {r.suspects or 'none'}; {r.top}")
            elif not r.shows_fault:
                print(f"{half:8} {r.name:24} {r.expected}: fault did not show in the run (not counted); {r.top}")
            else:
                print(f"{half:8} {r.name:24} {r.expected}: rank {r.rank}; {r.top}")
        s = summary(runs, half)
        print(f"== {half}: planted cause first {s['first']}/{s['faulty']}, in the top 3 {s['top3']}/{s['faulty']}; "
              f"clean runs with a suspect {s['clean_with_suspect']}/{s['clean']}; "
              f"faults that did not show {s['not_shown']}")


if __name__ == "__main__":
    main()
