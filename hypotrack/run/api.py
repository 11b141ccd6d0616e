"""Test a hypothesis from Python, the way `hypotrack run` does:

    from hypotrack.registry import open_registry
    from hypotrack.run import RunOptions, prepare_test, run_prepared
    from hypotrack.definitions import Project, load_library

    library = load_library(Project.locate("my_project"))
    plan = prepare_test(library, "h06", settings={"peft": False}, seeds=3)
    outcome = run_prepared(plan, open_registry(), RunOptions(tracking_uri="sqlite:///mlflow.db"))
    print(outcome.verdict.summary)

`settings` takes the names of RUN_SETTINGS (definitions/run_settings.py) plus `set` (any GRPOConfig field
or lora.<field>); bad values raise HypotrackError or SpecError before anything is recorded.

Seeds add up across tests of the same arms (run/recording/pooling.py): `with_more_seeds(plan, registry, 3)` trains
only the next three unused seeds, and `run_until_decided(plan, registry, max_seeds=8)` adds one seed at
a time until the treatment effect is decided (the sequential rule of hypotrack/effect.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypotrack.definitions.loader import Library, load_experiment, resolve_experiment_path
from hypotrack.definitions.models import Hypothesis, Overrides
from hypotrack.errors import HypotrackError
from hypotrack.protocol import ArmSpec
from hypotrack.run.arms import Display
from hypotrack.run.lifecycle import RunOptions, RunOutcome, run_test
from hypotrack.run.planning.plan import config_hash, control_spec, pool_key, resolve_arms, unmet_requirements

if TYPE_CHECKING:
    from hypotrack.registry import Registry


@dataclass
class PreparedTest:
    """A test ready to run: the hypothesis, its file, one ArmSpec per arm x seed."""

    hypothesis: Hypothesis
    hypothesis_file: Path
    specs: list[ArmSpec]
    flags: dict[str, Any] = field(default_factory=dict)  # recorded with the test run
    # Why the hypothesis cannot apply to the user's run (its control arm, trained or not); empty when it can.
    unmet: list[str] = field(default_factory=list)
    # The arms resolved again for other seeds; a command experiment's command line carries its seed, so a copy of
    # another seed's spec would train that seed again. None: a seed changes nothing else of an arm.
    resolve_seeds: Callable[[list[int]], list[ArmSpec]] | None = None

    @property
    def config_hash(self) -> str:
        return config_hash(self.specs)

    @property
    def seeds(self) -> list[int]:
        return sorted({s.seed for s in self.specs})

    def reseeded(self, seeds: list[int]) -> "PreparedTest":
        """The same arms on other seeds (a seed changes nothing else of a resolved arm)."""
        if self.resolve_seeds is not None:
            specs = self.resolve_seeds(seeds)
        else:
            firsts = {}
            for spec in self.specs:
                firsts.setdefault(spec.arm, spec)
            specs = [spec.model_copy(update={"seed": seed}) for spec in firsts.values() for seed in seeds]
        return PreparedTest(self.hypothesis, self.hypothesis_file, specs, dict(self.flags), list(self.unmet),
                        self.resolve_seeds)


def prepare_test(library: Library, hypothesis_id: str, *, experiment: str | None = None,
                 settings: dict[str, Any] | None = None, seeds: int | None = None, arms: list[str] | None = None,
                 deterministic: bool = False, flags: dict[str, Any] | None = None) -> PreparedTest:
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
    # Requirements first: a hypothesis that does not apply to the run is recorded so, whatever its treatment needs
    unmet = unmet_requirements(hypothesis, control_spec(hypothesis, exp, exp_path, overrides))
    specs = resolve_arms(hypothesis, exp, exp_path, overrides, seeds=list(range(seeds)) if seeds else None,
                         arms=arms, deterministic=deterministic, applies=not unmet)
    chosen = sorted({spec.arm for spec in specs}, key=[spec.arm for spec in specs].index)

    def resolve_seeds(new_seeds: list[int]) -> list[ArmSpec]:  # --more-seeds and --seeds auto add seeds
        return resolve_arms(hypothesis, exp, exp_path, overrides, seeds=new_seeds, arms=chosen,
                            deterministic=deterministic, adding_seeds=True, applies=not unmet)

    return PreparedTest(hypothesis, library.hypothesis_files[hypothesis.id], specs, dict(flags or {}), unmet,
                    resolve_seeds if exp.command is not None else None)


def _check_fault(name: str) -> None:
    from hypotrack.faults.manifest import FAULTS

    if name not in FAULTS:
        raise HypotrackError(f"--plant: unknown fault {name!r} (known: {', '.join(sorted(FAULTS))})")


def run_prepared(plan: PreparedTest, registry: Registry, options: RunOptions | None = None,
                 display: Display | None = None, on_start=None) -> RunOutcome:
    """Run a prepared test: record it, train every arm, decide and record the verdict."""
    options = options or RunOptions()
    if not options.flags:
        options.flags = plan.flags
    return run_test(plan.hypothesis, plan.hypothesis_file, plan.specs, registry, options, display, on_start,
                    unmet=plan.unmet)


def _earlier(plan: PreparedTest, registry: Registry) -> list:
    from hypotrack.registry.queries import pooled_test_runs

    return pooled_test_runs(registry, plan.hypothesis.id, pool_key(plan.specs))


def pooled_seeds(plan: PreparedTest, registry: Registry) -> list[int]:
    """Seeds earlier finished tests of these arms already trained."""
    from hypotrack.run.recording.pooling import used_seeds

    return used_seeds(_earlier(plan, registry))


def with_more_seeds(plan: PreparedTest, registry: Registry, count: int) -> PreparedTest:
    """The plan on the ``count`` lowest seeds no earlier test of these arms used (`--more-seeds`)."""
    from hypotrack.run.recording.pooling import unused_seeds

    return plan.reseeded(unused_seeds(_earlier(plan, registry), count))


MIN_SEEDS = 2  # the fewest seeds that give the effect an interval


def run_until_decided(plan: PreparedTest, registry: Registry, options: RunOptions | None = None, *, max_seeds: int,
                      display: Display | None = None, on_start=None) -> list[RunOutcome]:
    """`--seeds auto`: add one seed (both arms) at a time until the effect is decided or ``max_seeds`` are in.

    Each addition is a test run of its own (it pools the earlier ones), so an interrupted search keeps
    what it measured. The effect's interval follows the sequential rule (effect.sequential_levels),
    which keeps the chance of a false "helps" at 5% although it is looked at after every seed.
    """
    options = options or RunOptions()
    options.max_seeds = max_seeds
    outcomes: list[RunOutcome] = []
    have = len(pooled_seeds(plan, registry))
    if have >= max_seeds:
        raise HypotrackError(f"--max-seeds {max_seeds}: earlier tests of these arms already trained {have} seeds; "
                             f"give --max-seeds {have + 2} or more to add seeds")
    step = max(MIN_SEEDS - have, 1)
    while True:
        outcome = run_prepared(with_more_seeds(plan, registry, step), registry, options, display, on_start)
        outcomes.append(outcome)
        verdict = outcome.verdict
        if outcome.state != "finished" or verdict is None or plan.unmet:
            return outcomes
        if verdict.effect is None or verdict.effect.verdict != "undetermined" or len(verdict.seeds) >= max_seeds:
            return outcomes
        step = 1
