"""One test of a hypothesis, start to end: record it, run the arms, decide, record the verdict.

Order of operations matters for reliability:
1. resolve every arm's config and check the inputs (nothing is recorded if they are bad);
2. record the test run (the hypothesis goes to `testing`) and create the MLflow runs;
3. run the workers; Ctrl-C/SIGTERM stops them and ends everything as killed;
4. evaluate the criteria over this test's seeds and those of earlier tests of the same arms (run/recording/pooling.py),
   then write the verdict to MLflow and the registry.
Whatever happens after step 2, a `finally` ends the MLflow runs and the test run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypotrack.definitions.models import Hypothesis
from hypotrack.definitions.vocabulary import ARMS
from hypotrack.mlflow_names import Tags
from hypotrack.protocol import ArmSpec
from hypotrack.run.arms import ArmState, Display, series_by_arm
from hypotrack.run.launching import base, launchers, signals
from hypotrack.run.launching.workers import run_workers, stop_all
from hypotrack.run.planning.plan import config_hash, pool_key, unmet_requirements
from hypotrack.run.planning.preflight import check_output_dir, preflight
from hypotrack.run.recording.ending import end_runs
from hypotrack.run.recording.pooling import kept_series, pool
from hypotrack.run.recording.records import log_outcome, log_plan
from hypotrack.run.recording.seed_check import without_repeats

if TYPE_CHECKING:
    from hypotrack.registry import Registry
from hypotrack.verdict import Verdict, decide, not_applicable, pooled


@dataclass
class RunOptions:
    parallel: int | None = None
    launcher: str = "python"
    processes: int | None = None  # --launcher accelerate: processes per arm
    ray_address: str | None = None  # --launcher ray: an existing cluster instead of a local Ray
    output_dir: Path | None = None
    tracking_uri: str | None = None
    mlflow_experiment: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    # --seeds auto: the effect is looked at after every seed up to this many (the sequential rule).
    max_seeds: int | None = None

    @property
    def launch(self) -> base.LaunchOptions:
        return base.LaunchOptions(self.launcher, self.processes, self.ray_address)


@dataclass
class RunOutcome:
    """How one test ended: its state and verdict, the arms it trained, where its MLflow runs and files are."""

    test_id: str
    state: str
    verdict: Verdict | None
    arms: list[ArmState]
    parent_run_id: str | None
    tracking_uri: str
    seconds: float
    output_dir: Path


def run_test(
    hypothesis: Hypothesis,
    hypothesis_file: Path,
    specs: list[ArmSpec],
    registry: Registry,
    options: RunOptions,
    display: Display | None = None,
    on_start: Callable[[str, str, str], None] | None = None,
    unmet: list[str] | None = None,
) -> RunOutcome:
    from hypotrack.registry import queries, store
    from hypotrack.tracking import Tracker, close_orphaned_runs

    control = next((s for s in specs if s.arm == "control"), None)
    if unmet is None:  # what the hypothesis requires is checked on the user's run, never on the treatment
        unmet = unmet_requirements(hypothesis, control) if control is not None else []
    preflight([] if unmet else specs)  # a test that does not apply trains nothing: nothing of it need load
    output_root = options.output_dir or Path.cwd() / "outputs"
    check_output_dir(output_root)
    launchers.check(options.launch)
    tracker = Tracker(options.tracking_uri)
    close_orphaned_runs(registry, tracker)
    arms_used = sorted({s.arm for s in specs}, key=ARMS.index)
    seeds = sorted({s.seed for s in specs})
    digest = config_hash(specs)
    test = store.start_test_run(registry, hypothesis.id, experiment=specs[0].experiment_name, arms=arms_used,
                                seeds=seeds, config_hash=digest, flags=options.flags, tracking_uri=tracker.uri)
    out_root = output_root / f"{hypothesis.id}-{test.id}"
    parallel = options.parallel or launchers.default_parallel(options.launch, len(specs))
    threads = max(1, (os.cpu_count() or 1) // parallel)
    arms = []
    for spec in [] if unmet else specs:
        directory = out_root / f"{spec.arm}-seed{spec.seed}"
        arms.append(ArmState(spec=spec.model_copy(update={"test_id": test.id, "output_dir": str(directory),
                                                           "threads": threads}), dir=directory))
    parent_id: str | None = None
    state, verdict, error, kept = "failed", None, None, None
    key = pool_key(specs)
    started = time.time()
    previous_handlers = signals.install()
    try:
        experiment_id = tracker.experiment_id(options.mlflow_experiment or f"hypotrack/{hypothesis.id}")
        base_tags = {Tags.HYPOTHESIS: hypothesis.id, Tags.TEST: test.id}
        parent_id = tracker.create_run(experiment_id, f"{hypothesis.id} test {test.id}",
                                       {**base_tags, Tags.KIND: "test"})
        for arm in arms:
            arm.run_id = tracker.create_run(
                experiment_id, f"{arm.spec.arm}-seed{arm.spec.seed}",
                {**base_tags, Tags.ARM: arm.spec.arm, Tags.SEED: str(arm.spec.seed), Tags.KIND: "arm"}, parent_id)
        store.attach_mlflow(registry, test.id, parent_id, {arm.spec.key: arm.run_id for arm in arms})
        log_plan(tracker, parent_id, hypothesis, hypothesis_file, arms, digest, options.flags, options.launcher)
        if on_start:
            on_start(test.id, parent_id, tracker.uri)
        signals.check_stop()
        run_workers(arms, options.launch, parallel, tracker, display)
        signals.check_stop()
        failed = {a.spec.key: a.error or a.status for a in arms if a.status != "finished"}
        if unmet:
            verdict = not_applicable(unmet)
        else:
            series = series_by_arm(arms)
            if not failed:
                kept = kept_series(series, hypothesis)
            earlier = queries.pooled_test_runs(registry, hypothesis.id, key)
            series, all_seeds, used = pool(earlier, series, seeds)
            series, all_seeds, repeats = without_repeats(series, all_seeds)  # identical runs are one seed
            verdict = pooled(decide(hypothesis, series, all_seeds, failed, trainer=specs[0].trainer,
                                    max_seeds=options.max_seeds), used)
            verdict.summary += repeats + stated_inferences(hypothesis, arms)
        log_outcome(tracker, parent_id, arms, verdict, out_root)
        if verdict.effect is not None:
            tracker.log_metrics(parent_id, verdict.effect.metrics(), 0)
            tracker.set_tags(parent_id, {Tags.EFFECT: verdict.effect.describe()[:5000]})
        state = "failed" if failed else "finished"
    except signals.Stop:
        state, error = "killed", "stopped by the user (Ctrl-C or SIGTERM)"
        stop_all(arms, tracker)
    except BaseException as exc:
        state, error = "failed", f"{type(exc).__name__}: {exc}"
        stop_all(arms, tracker)
        raise
    finally:
        signals.ignore()  # bookkeeping must complete even if the user presses Ctrl-C again
        end_runs(tracker, arms, parent_id, state)
        finish_test(registry, test.id, state, verdict, error, {arm.spec.key: arm.run_id for arm in arms},
                    pool_key=key, series=kept if state == "finished" else None)
        signals.restore(previous_handlers)
    return RunOutcome(test.id, state, verdict, arms, parent_id, tracker.uri, time.time() - started, out_root)


def stated_inferences(hypothesis: Hypothesis, arms: list[ArmState]) -> str:
    """The declarations the session filled in from the run (session/inference.py) that this hypothesis's hooks read,
    as a sentence the verdict carries: the user sees what was decided for them and how to override it."""
    from hypotrack.definitions.metrics import hook_reads

    reads = hook_reads()
    read = {declaration for name in hypothesis.hooks for declaration in reads.get(name, ())}
    sentences = sorted({sentence for arm in arms for declaration, sentence in arm.inferred.items()
                        if declaration in read})
    return f" (inferred: {'; '.join(sentences)})" if sentences else ""


def finish_test(registry: Registry, test_id: str, state: str, verdict: Verdict | None, error: str | None = None,
                run_ids: dict[str, str] | None = None, pool_key: str | None = None, series: Any = None,
                summary_prefix: str = "") -> None:
    """Record how a test ended in the registry: its state, and its verdict where one was decided (a killed test
    records none). The hypothesis leaves `testing` here, whatever happened."""
    from hypotrack.registry import store

    if verdict is None or state not in ("finished", "failed"):
        store.finish_test_run(registry, test_id, state=state, error=error)
        return
    store.finish_test_run(registry, test_id, state=state, verdict=verdict.status, confidence=verdict.confidence,
                          summary=summary_prefix + verdict.summary, evidence=verdict.evidence(run_ids or {}),
                          error=error, effect=verdict.effect.as_json() if verdict.effect else None,
                          headline=verdict.headline, pool_key=pool_key, series=series)
