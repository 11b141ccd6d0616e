"""`hypotrack selftest`: does each hypothesis catch its own bug, and only that one?

Rows are runs with a known fault, columns are hypotheses, cells are verdicts. A row is a
planted fault of the toy lab on each hypothesis's own experiment (`fault_rows`, plus a clean
row), or a user-written experiment tested by every hypothesis, as `hypotrack run hNN
--experiment X` would (`Row(name, experiment=path, expected=...)`).

The self-test measures detection, so only the arms the criteria read are trained (the
control arm): each cell is the signature's verdict, and the summary says the treatment was
not run. Arms that come out identical across cells (same experiment, fault, overrides and
seed) are trained once and shared: every arm carries the union of the hypotheses' hooks, so
e.g. the clean toy_arith control serves h01, h02, h05 and h06 alike. A hypothesis whose
requirements the row's run lacks gets its not-applicable verdict without training.
Everything goes to a registry and an MLflow store of its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypotrack.definitions.loader import Library, load_experiment, resolve_experiment_path
from hypotrack.definitions.models import Overrides
from hypotrack.faults.manifest import FAULTS, SIGNATURE_STEPS
from hypotrack.mlflow_names import Tags
from hypotrack.protocol import ArmSpec
from hypotrack.run.arms import ArmState, series_by_arm
from hypotrack.run.launching.workers import run_workers
from hypotrack.run.lifecycle import finish_test, stated_inferences
from hypotrack.run.planning.plan import resolve_arms, unmet_requirements
from hypotrack.run.planning.preflight import preflight
from hypotrack.run.recording.ending import end_runs
from hypotrack.verdict import Verdict, decide, not_applicable

if TYPE_CHECKING:
    from hypotrack.registry import Registry
    from hypotrack.tracking import Tracker

CLEAN = "clean"
COMPACT_STEPS = 3  # the compact selftest: most signatures are visible from the first steps


@dataclass(frozen=True)
class Row:
    """One row of the matrix: a run with a known fault (or none), and the hypothesis it should validate."""

    name: str
    plant: tuple[str, ...] = ()  # planted toy-lab faults, on each hypothesis's own experiment
    experiment: str | None = None  # or: one experiment (a name or a YAML path) every hypothesis is tested on
    expected: str | None = None  # the hypothesis this row's fault should validate; None: none
    steps: int | None = None  # training steps of this row's arms; None: the selftest's max_steps


def fault_rows(names: list[str], compact: bool = False, experiment: str | None = None) -> list[Row]:
    """The planted-fault rows of the toy lab (CLEAN is the unfaulted row).

    compact: each row trains only as long as its fault's signature needs to show (COMPACT_STEPS, or the
    fault's SIGNATURE_STEPS where it builds up over training). experiment: every row on that experiment
    instead of each hypothesis's own (toy_arith_vllm for the faults that live in vLLM).
    """
    def steps(name: str) -> int | None:
        return SIGNATURE_STEPS.get(name, COMPACT_STEPS) if compact else None

    return [Row(CLEAN, experiment=experiment, steps=steps(name)) if name == CLEAN else
            Row(name, plant=(name,), experiment=experiment, expected=FAULTS[name][0], steps=steps(name))
            for name in names]


@dataclass
class SelftestResult:
    rows: list[str]
    hypotheses: list[str]
    verdicts: dict[tuple[str, str], Verdict]
    seconds: float
    unique_runs: int
    store: Path
    expected: dict[str, str] = field(default_factory=dict)  # row -> the hypothesis its fault should validate
    triage: Any = None  # hypotrack.triage.calibration.TriageAccuracy: triage on the same runs' plain TRL logs
    failures: dict[str, str] = field(default_factory=dict)  # run folder -> why that training did not finish

    @property
    def failed_runs(self) -> int:
        return len(self.failures)

    def diagonal(self) -> tuple[int, int]:
        cells = [(f, h) for f, h in self.expected.items() if h in self.hypotheses and f in self.rows]
        return sum(self.verdicts[c].status == "validated" for c in cells), len(cells)

    def false_validations(self) -> list[tuple[str, str]]:
        return [(row, hyp) for (row, hyp), v in self.verdicts.items()
                if v.status == "validated" and self.expected.get(row) != hyp]

    def as_json(self) -> dict[str, Any]:
        hits, total = self.diagonal()
        return {
            "rows": self.rows, "hypotheses": self.hypotheses, "seconds": round(self.seconds, 1),
            "unique_runs": self.unique_runs, "failed_runs": self.failed_runs, "failures": self.failures,
            "store": str(self.store),
            "diagonal": {"validated": hits, "of": total},
            "false_validations": [list(c) for c in self.false_validations()],
            "expected": self.expected,
            "triage": self.triage.as_json() if self.triage else None,
            "decided": {row: sum(self.verdicts[(row, h)].status != "inconclusive" for h in self.hypotheses)
                        for row in self.rows},
            "cells": {f"{row}/{hyp}": {"status": v.status, "confidence": v.confidence, "summary": v.summary}
                      for (row, hyp), v in self.verdicts.items()},
        }


def _unique_key(spec: ArmSpec) -> str:
    return json.dumps(spec.model_dump(exclude={"hypothesis_id", "arm", "test_id", "output_dir", "threads"}),
                      sort_keys=True, default=str)


def plan(library: Library, rows: list[Row], hypotheses: list[str], seeds: list[int],
         max_steps: int | None) -> tuple[dict[tuple[str, str], list[ArmSpec]], dict[tuple[str, str], list[str]]]:
    """The arms of every cell, and the cells whose hypothesis does not apply to the row's run (and why)."""
    hooks = sorted({hook for h in hypotheses for hook in library.hypotheses[h].hooks})
    settings: dict[str, dict[str, Any]] = {}
    for h in hypotheses:
        for hook, values in library.hypotheses[h].hook_settings.items():
            if settings.get(hook, values) != values:
                raise ValueError(f"hypotheses disagree on settings of hook {hook!r}; selftest shares arms")
            settings[hook] = values
    if "reward_signal" in hooks:  # verdicts need no histograms: drawing them is about 1.5 s of each arm
        settings["reward_signal"] = {**settings.get("reward_signal", {}), "reservoir_size": 0}
    cells: dict[tuple[str, str], list[ArmSpec]] = {}
    unmet: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        for hyp_id in hypotheses:
            hypothesis = library.hypotheses[hyp_id]
            experiment, experiment_path = _experiment(library, row.experiment or hypothesis.experiment)
            cli = Overrides(plant=list(row.plant), max_steps=row.steps or max_steps)
            # Only the arms the criteria read can change a verdict; the others are not trained here.
            needed = [arm for arm in hypothesis.arms if arm in hypothesis.arms_needed()]
            specs = resolve_arms(hypothesis, experiment, experiment_path, cli, seeds=seeds, arms=needed)
            reasons = unmet_requirements(hypothesis, specs[0])
            if reasons:
                unmet[(row.name, hyp_id)] = reasons
                specs = []
            cells[(row.name, hyp_id)] = [s.model_copy(update={"hooks": hooks, "hook_settings": settings})
                                         for s in specs]
    return cells, unmet


def _experiment(library: Library, name: str):
    if name in library.experiments:
        return library.experiments[name], library.experiment_files[name]
    path = resolve_experiment_path(name, library.project)
    scratch = Library(project=library.project)
    experiment = load_experiment(path, scratch)
    scratch.raise_if_problems()
    return experiment, path


def run_selftest(library: Library, registry: Registry, tracker: Tracker, out_dir: Path, rows: list[Row], hypotheses: list[str],
                 seeds: list[int], max_steps: int | None, parallel: int,
                 display: Callable[[list[ArmState]], None] | None = None) -> SelftestResult:
    from hypotrack.registry import store

    started = time.time()
    cells, unmet = plan(library, rows, hypotheses, seeds, max_steps)
    unique: dict[str, ArmState] = {}
    for specs in cells.values():
        for spec in specs:
            key = _unique_key(spec)
            if key not in unique:
                name = f"run{len(unique):03d}"
                unique[key] = ArmState(spec=spec.model_copy(update={"output_dir": str(out_dir / name), "threads": 1}),
                                       dir=out_dir / name)
    preflight([arm.spec for arm in unique.values()])
    experiment_id = tracker.experiment_id("hypotrack/selftest")
    parent = tracker.create_run(experiment_id, f"selftest {time.strftime('%Y-%m-%d %H:%M')}",
                                {Tags.KIND: "selftest"})
    for arm in unique.values():
        spec = arm.spec
        plant = ",".join(spec.plant) or CLEAN
        arm.run_id = tracker.create_run(experiment_id, f"{spec.experiment_name} {plant} {spec.arm}",
                                          {Tags.KIND: "arm", Tags.PLANT: plant, Tags.ARM: spec.arm,
                                           Tags.SEED: str(spec.seed)}, parent)
    arms = list(unique.values())
    state = "failed"
    try:
        run_workers(arms, "python", parallel, tracker, display)
        verdicts: dict[tuple[str, str], Verdict] = {}
        for (row, hyp_id), specs in cells.items():
            hypothesis = library.hypotheses[hyp_id]
            cell_arms = []
            for spec in specs:
                shared = unique[_unique_key(spec)]
                cell_arms.append(ArmState(spec=spec, dir=shared.dir, status=shared.status, error=shared.error,
                                          series=shared.series, inferred=shared.inferred))
            failed = {a.spec.key: a.error or a.status for a in cell_arms if a.status != "finished"}
            if (row, hyp_id) in unmet:
                verdict = not_applicable(unmet[(row, hyp_id)])
            else:
                verdict = decide(hypothesis, series_by_arm(cell_arms), seeds, failed, trainer=specs[0].trainer)
                verdict.summary += stated_inferences(hypothesis, cell_arms)
            verdicts[(row, hyp_id)] = verdict
            # each cell is recorded as a test of its hypothesis, the way `hypotrack run` records one
            test = store.start_test_run(registry, hyp_id, experiment=specs[0].experiment_name if specs else "-",
                                        arms=sorted({s.arm for s in specs}), seeds=seeds,
                                        config_hash=row, flags={"row": row})
            finish_test(registry, test.id, "failed" if failed else "finished", verdict, summary_prefix=f"[{row}] ")
        expected = {row.name: row.expected for row in rows if row.expected}
        from hypotrack.triage.calibration import selftest_runs, triage_accuracy

        # Triage on the same control arms' plain TRL keys: does the run's own log already point at its fault?
        triaged = triage_accuracy(selftest_runs(rows, cells, lambda spec: unique[_unique_key(spec)].series),
                                  expected, library.hypotheses)
        result = SelftestResult([row.name for row in rows], hypotheses, verdicts, time.time() - started,
                                len(unique), out_dir, expected, triage=triaged,
                                failures={a.dir.name: a.error or a.status for a in arms if a.status != "finished"})
        tracker.log_dict(parent, result.as_json(), "selftest.json")
        tracker.log_text(parent, render_markdown(result), "selftest.md")
        state = "finished"
    except KeyboardInterrupt:
        state = "killed"
        raise
    finally:
        end_runs(tracker, arms, parent, state)
    return result


SYMBOL = {"validated": "VALIDATED", "partial": "partial", "invalidated": "invalidated",
          "inconclusive": "inconclusive", "not_applicable": "n/a"}


def render_markdown(result: SelftestResult) -> str:
    header = "| run (the hypothesis its fault should validate) | " + " | ".join(result.hypotheses) + " |"
    header += " triage: its hypothesis's rank |" if result.triage else ""
    lines = [header, "|" + "---|" * (len(result.hypotheses) + 1 + bool(result.triage))]
    for row in result.rows:
        cells = []
        for hyp in result.hypotheses:
            verdict = result.verdicts[(row, hyp)]
            mark = SYMBOL[verdict.status]
            if result.expected.get(row) == hyp:
                mark = f"**{mark}**"
            cells.append(mark)
        label = f"{row} ({result.expected[row]})" if row in result.expected else row
        if result.triage:
            cells.append(result.triage.cell(row))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    hits, total = result.diagonal()
    lines.append("")
    lines.append(f"Diagonal {hits}/{total} validated, {len(result.false_validations())} false validations, "
                 f"{result.unique_runs} training runs in {result.seconds / 60:.1f} min.")
    if result.triage:
        lines.append(result.triage.summary())
    return "\n".join(lines) + "\n"
