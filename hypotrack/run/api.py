"""Test a hypothesis from Python, the way `hypotrack run` does:

    from hypotrack.registry import open_registry
    from hypotrack.run import RunOptions, prepare_test, run_prepared
    from hypotrack.spec import Project, load_library

    library = load_library(Project.locate("my_project"))
    plan = prepare_test(library, "h06", settings={"peft": False}, seeds=3)
    outcome = run_prepared(plan, open_registry(), RunOptions(tracking_uri="sqlite:///mlflow.db"))
    print(outcome.verdict.summary)

`settings` takes the names of RUN_SETTINGS (spec/run_settings.py) plus `set` (any GRPOConfig field
or lora.<field>); bad values raise HypotrackError or SpecError before anything is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypotrack.errors import HypotrackError
from hypotrack.protocol import ArmSpec
from hypotrack.run.lifecycle import RunOptions, TestOutcome, run_test
from hypotrack.run.plan import config_hash, control_spec, resolve_arms, unmet_requirements
from hypotrack.run.workers import Display
from hypotrack.spec.loader import Library, load_experiment, resolve_experiment_path
from hypotrack.spec.models import Hypothesis, Overrides


@dataclass
class TestPlan:
    """A test ready to run: the hypothesis, its file, one ArmSpec per arm x seed."""

    hypothesis: Hypothesis
    hypothesis_file: Path
    specs: list[ArmSpec]
    flags: dict[str, Any] = field(default_factory=dict)  # recorded with the test run
    # Why the hypothesis cannot apply to the user's run (its control arm, trained or not); empty when it can.
    unmet: list[str] = field(default_factory=list)

    @property
    def config_hash(self) -> str:
        return config_hash(self.specs)


def prepare_test(library: Library, hypothesis_id: str, *, experiment: str | None = None,
                 settings: dict[str, Any] | None = None, seeds: int | None = None, arms: list[str] | None = None,
                 deterministic: bool = False, flags: dict[str, Any] | None = None) -> TestPlan:
    """Resolve the arms of a test; raises for anything that cannot work, before anything is recorded."""
    if hypothesis_id not in library.hypotheses:
        known = ", ".join(sorted(library.hypotheses)) or "none"
        raise HypotrackError(f"no hypothesis {hypothesis_id!r} in {library.project.hypotheses_dir} (known: {known})")
    hypothesis = library.hypotheses[hypothesis_id]
    exp_name = experiment or hypothesis.experiment
    # --experiment ./x.yaml is relative to where the user stands; a hypothesis's `experiment:` to the project
    exp_path = resolve_experiment_path(exp_name, library.project, Path.cwd() if experiment else None)
    if not exp_path.exists():
        raise HypotrackError(f"--experiment: experiment {exp_name!r} not found (looked for {exp_path})")
    scratch = Library(project=library.project)
    exp = load_experiment(exp_path, scratch)
    scratch.raise_if_problems()
    try:
        overrides = Overrides(**(settings or {}))
    except ValueError as exc:
        raise HypotrackError(str(exc)) from None
    for name in overrides.plant or []:
        _check_fault(name)
    specs = resolve_arms(hypothesis, exp, exp_path, overrides, seeds=list(range(seeds)) if seeds else None,
                         arms=arms, deterministic=deterministic)
    unmet = unmet_requirements(hypothesis, control_spec(hypothesis, exp, exp_path, overrides))
    return TestPlan(hypothesis, library.hypothesis_files[hypothesis.id], specs, dict(flags or {}), unmet)


def _check_fault(name: str) -> None:
    try:
        from hypotrack.toy.faults import FAULTS
    except ImportError:
        raise HypotrackError("--plant: this install has no planted faults") from None
    if name not in FAULTS:
        raise HypotrackError(f"--plant: unknown fault {name!r} (known: {', '.join(sorted(FAULTS))})")


def run_prepared(plan: TestPlan, registry, options: RunOptions | None = None,  # noqa: ANN001
                 display: Display | None = None, on_start=None) -> TestOutcome:  # noqa: ANN001
    """Run a prepared test: record it, train every arm, decide and record the verdict."""
    options = options or RunOptions()
    if not options.flags:
        options.flags = plan.flags
    return run_test(plan.hypothesis, plan.hypothesis_file, plan.specs, registry, options, display, on_start,
                    unmet=plan.unmet)
