"""One run's logged metrics as triage reads them: a series of (step, value) per metric name."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter

Points = list[tuple[int, float]]
# Written with every log entry, the end-of-training summary (train_runtime, train_loss) included: its second
# value at the last step is that summary, not a step logged again.
BOOKKEEPING = frozenset({"epoch", "step"})
# ... and so are a record's clock and timings, which each process of a run logs in its own partial record of a step
# (prime-rl's trainer and orchestrator both write time and time/step to one metrics.jsonl): time, timestamp, time/*,
# timing*.
TIMING = ("time", "timing")
# Non-finite values at no more than this share of a metric's logged steps, followed by finite ones, are skipped
# steps rather than a divergence (fp16's grad scaler skips a step whose gradients overflow).
ISOLATED_SHARE = 0.05
# The param a reader sets when the log carried no step numbers and it numbered the rows itself: the first row may
# cover several steps (or a moving average of them), so nothing is read as the run's step 1.
STEPS_ASSUMED = "steps_assumed"
# The param a reader sets when the log is in a format only a hand-written loop writes (its own progress lines, a
# printed table): its names and estimators are the loop's own, and its kl may be the signed mean log-ratio (k1),
# which goes below 0 whenever the sampled completions are likelier under the reference, not TRL's k3, which cannot.
HAND_WRITTEN = "hand_written_loop"
# The param a reader sets when the log holds a training before the GRPO one it reads (a supervised stage first, in one
# script's output): the GRPO run starts from that stage's policy, while a LoRA run's reference (its adapters switched
# off) is the model before it, so a KL above 0 at its step 1 can be that stage's distance, not a wrong reference.
PRIOR_TRAINING = "prior_training"
# What the reader says of it, after naming the earlier training.
PRIOR_TRAINING_SAID = ("the GRPO run starts from that training's policy, and where both train LoRA adapters its "
                       "reference (the adapters switched off) is the model before it: a KL above 0 at its first step "
                       "can be that stage's distance, so it is not read as a wrong reference")


def bad_stretches(flags: list[tuple[int, bool]]) -> Iterator[tuple[list[int], int]]:
    """Each stretch of bad steps in ``flags`` ((step, good) in step order), with how many good steps come after it.
    The divergence rule reads a bad stretch that lasts as long as the good steps after it, or to the end, as one the
    metric did not come back from; a shorter one, followed by more good steps, as steps it came back from."""
    good_after = sum(good for _, good in flags)
    for good, stretch in groupby(flags, key=itemgetter(1)):
        steps = [step for step, _ in stretch]
        if good:
            good_after -= len(steps)
        else:
            yield steps, good_after


@dataclass
class RunLog:
    """The metrics of one run, by name, with what the source said about the run besides.

    ``series`` holds the names the source logged (TRL's keys, whatever version wrote them) until
    keys.canonical() renames them; ``params`` are the run's configuration where the source keeps it
    (an MLflow run's params; a training folder or a CSV has none).
    """

    source: str
    kind: str  # mlflow | trainer_state | csv | parquet | tensorboard | tensorboard download | console | jsonl | series
    series: dict[str, Points] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    # metric -> (step, value) of each infinite or NaN value logged: kept out of the series (a mean over
    # them means nothing), and reported as what they are, a run that diverged
    nonfinite: dict[str, Points] = field(default_factory=dict)
    repeated: list[int] = field(default_factory=list)  # steps logged more than once (a resumed run)
    run: str = ""  # the run's name, where the source holds several (a W&B export, a TensorBoard folder)
    said: list[str] = field(default_factory=list)  # what the reader assumed or noticed, for the report

    def add(self, name: str, step: int, value: object) -> None:
        """Keep finite numbers in the series: TRL writes None for a metric with no valid value in a step."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        value = float(value)
        if math.isfinite(value):
            self.series.setdefault(name, []).append((int(step), value))
        else:
            self.nonfinite.setdefault(name, []).append((int(step), value))

    def take_metrics(self, other: "RunLog", name: Callable[[str], str] = str) -> None:
        """Every metric ``other`` logged into this run, each under ``name(key)``: another file of the same run (its
        evaluation log, a panel downloaded apart)."""
        for key, points in other.series.items():
            self.series.setdefault(name(key), []).extend(points)
        for key, points in other.nonfinite.items():
            self.nonfinite.setdefault(name(key), []).extend(points)

    def steps(self) -> int:
        """How many steps the most often logged metric has."""
        return max((len(points) for points in self.series.values()), default=0)

    def sort(self) -> "RunLog":
        """Points in step order, one per step: the last value logged at a step wins, so a resumed run that
        logged some steps again is read from its last segment (the steps are noted in ``repeated``, beside those a
        reader already merged and noted)."""
        repeated: set[int] = set(self.repeated)
        for name, points in self.series.items():
            if any(a[0] >= b[0] for a, b in zip(points, points[1:])):  # most sources log in order already
                steps = [step for step, _ in points]
                if name not in BOOKKEEPING and not name.startswith(TIMING):
                    repeated.update(step for step in set(steps) if steps.count(step) > 1)
                self.series[name] = sorted(dict(points).items())
        self.repeated = sorted(repeated)
        return self

    def _broke(self, name: str) -> tuple[int | None, str]:
        """Where the metric ``name`` broke, else None and why its NaN or infinite values are no divergence.

        A divergence breaks a metric that was finite and leaves it NaN or infinite: it broke at the first run of
        non-finite values that lasts as long as the finite values after it, or to the end. Shorter runs with more
        finite values after them are steps skipped or not computable (a loop that logs its token entropy as NaN on
        steps where no token trained), and values before the metric's first finite one a value not yet computable."""
        points = self.nonfinite.get(name, [])
        finite = self.series.get(name, [])
        if not points:
            return None, ""
        if not finite:
            return points[0][0], ""
        start = finite[0][0]
        broken = [point for point in points if point[0] > start]
        if not broken:
            return None, (f"from its first logged step on, and finite at the {len(finite)} logged step(s) after: a "
                          "value the loop could not compute at those steps (a mean over nothing, as an entropy over a "
                          "step where no token trained), not a divergence, which breaks a metric that was finite")
        ordered = sorted([(step, False) for step, _ in broken] + [(step, True) for step, _ in finite])
        for steps, finite_after in bad_stretches(ordered):
            if len(steps) >= finite_after:
                return steps[0], ""  # it stayed broken longer than it was finite after, or to the end
        after = sum(1 for step, _ in finite if step > broken[-1][0])
        if len(broken) <= max(1, ISOLATED_SHARE * (len(finite) + len(broken))):
            return None, (f"and finite at the {after} logged step(s) after: isolated steps, as when fp16's grad scaler "
                          "skips a step whose gradients overflow, not a divergence")
        return None, (f"with finite values between and at the {after} logged step(s) after: steps where the value "
                      "could not be computed or the update was skipped, not a divergence, which leaves a metric NaN or "
                      "infinite from where it broke")

    def diverged_at(self, training: Callable[[str], bool]) -> tuple[str, int] | None:
        """The first training metric that became NaN or infinite and did not recover, and the step it did."""
        stuck = [(step, name) for name in self.nonfinite if training(name) and (step := self._broke(name)[0]) is not None]
        return (min(stuck)[1], min(stuck)[0]) if stuck else None

    def findings(self, training: Callable[[str], bool]) -> list[str]:
        """What the source itself says about the run, before any hypothesis is weighed; ``training`` tells a training
        metric (which can show a divergence) from the others (an evaluation pass's)."""
        out = list(self.said)
        for name, points in sorted(self.nonfinite.items(), key=lambda item: item[1][0][0]):
            word = "NaN" if math.isnan(points[0][1]) else "infinite"
            logged = len(points) + len(self.series.get(name, []))
            step, why = self._broke(name)
            if step is None:
                steps = ", ".join(str(s) for s, _ in points[:5]) + (" ..." if len(points) > 5 else "")
                out.append(f"{name} was {word} at step{'s' if len(points) > 1 else ''} {steps} ({len(points)} of "
                           f"{logged} logged steps) {why}")
            elif training(name):
                out.append(f"{name} became {word} at step {step} ({len(points)} of {logged} logged steps): the run "
                           "diverged there; the steps with finite values are the ones read")
            else:
                out.append(f"{name} became {word} at step {step} ({len(points)} of {logged} logged steps) and did not "
                           "recover: not a training metric, so not read as a divergence")
        if self.repeated:
            first, last = self.repeated[0], self.repeated[-1]
            span = f"step {first}" if first == last else f"steps {first}-{last}"
            out.append(f"{span} logged more than once (a run resumed from a checkpoint logs them again): the last "
                       "values logged at each step are read")
        return out
