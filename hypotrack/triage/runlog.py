"""One run's logged metrics as triage reads them: a series of (step, value) per metric name."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

Points = list[tuple[int, float]]
# Written with every log entry, the end-of-training summary (train_runtime, train_loss) included: its second
# value at the last step is that summary, not a step logged again.
BOOKKEEPING = frozenset({"epoch", "step"})
# Non-finite values at no more than this share of a metric's logged steps, followed by finite ones, are skipped
# steps rather than a divergence (fp16's grad scaler skips a step whose gradients overflow).
ISOLATED_SHARE = 0.05
# A divergence leaves the metric non-finite from where it broke on: a metric finite again after its last non-finite
# value, and finite at more than this share of its logged steps from the first non-finite one on, was not computable
# at some steps (an entropy over a step where no token trained, a mean over no correct answer), not diverged.
RECOVERED_SHARE = 0.5
# The param a reader sets when the log carried no step numbers and it numbered the rows itself: the first row may
# cover several steps (or a moving average of them), so nothing is read as the run's step 1.
STEPS_ASSUMED = "steps_assumed"
# The param a reader sets when the log is in a format only a hand-written loop writes (its own progress lines, a
# printed table): its names and estimators are the loop's own, and its kl may be the signed mean log-ratio (k1),
# which goes below 0 whenever the sampled completions are likelier under the reference, not TRL's k3, which cannot.
HAND_WRITTEN = "hand_written_loop"


@dataclass
class RunLog:
    """The metrics of one run, by name, with what the source said about the run besides.

    ``series`` holds the names the source logged (TRL's keys, whatever version wrote them) until
    keys.canonical() renames them; ``params`` are the run's configuration where the source keeps it
    (an MLflow run's params; a training folder or a CSV has none).
    """

    source: str
    kind: str  # mlflow | trainer_state | csv | tensorboard | tensorboard csv | console | jsonl | series
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

    def steps(self) -> int:
        """How many steps the most often logged metric has."""
        return max((len(points) for points in self.series.values()), default=0)

    def sort(self) -> "RunLog":
        """Points in step order, one per step: the last value logged at a step wins, so a resumed run that
        logged some steps again is read from its last segment (the steps are noted in ``repeated``)."""
        repeated: set[int] = set()
        for name, points in self.series.items():
            if any(a[0] >= b[0] for a, b in zip(points, points[1:])):  # most sources log in order already
                steps = [step for step, _ in points]
                if name not in BOOKKEEPING:
                    repeated.update(step for step in set(steps) if steps.count(step) > 1)
                self.series[name] = sorted(dict(points).items())
        self.repeated = sorted(repeated)
        return self

    def _not_diverged(self, name: str) -> str:
        """Why the NaN or infinite values of ``name`` are not a divergence, or '' when they are one: a divergence
        breaks a metric that was finite, and leaves it NaN or infinite."""
        points = self.nonfinite.get(name, [])
        finite = self.series.get(name, [])
        if not points or not finite:
            return ""
        first, last = points[0][0], points[-1][0]
        after = sum(1 for step, _ in finite if step > last)
        since = sum(1 for step, _ in finite if step > first)
        if not any(step < first for step, _ in finite):
            return (f"from its first logged step on, and finite at {len(finite)} logged step(s) after: a value the "
                    "loop could not compute at those steps (a mean over nothing, as an entropy over a step where no token "
                    "trained), not a divergence, which breaks a metric that was finite")
        if after and len(points) <= max(1, ISOLATED_SHARE * (len(finite) + len(points))):
            return (f"and finite at the {after} logged step(s) after: isolated steps, as when fp16's grad scaler skips "
                    "a step whose gradients overflow, not a divergence")
        if after and since > RECOVERED_SHARE * (since + len(points)):
            return (f"with finite values between and at the {after} logged step(s) after: steps where the value could "
                    "not be computed or the update was skipped, not a divergence, which leaves a metric NaN or "
                    "infinite from where it broke")
        return ""

    def diverged_at(self, training: Callable[[str], bool]) -> tuple[str, int] | None:
        """The first training metric that became NaN or infinite and did not recover, and the step it did."""
        stuck = [(points[0][0], name) for name, points in self.nonfinite.items()
                 if training(name) and not self._not_diverged(name)]
        return (min(stuck)[1], min(stuck)[0]) if stuck else None

    def findings(self, training: Callable[[str], bool]) -> list[str]:
        """What the source itself says about the run, before any hypothesis is weighed; ``training`` tells a training
        metric (which can show a divergence) from the others (an evaluation pass's)."""
        out = list(self.said)
        for name, points in sorted(self.nonfinite.items(), key=lambda item: item[1][0][0]):
            step, value = points[0]
            word = "NaN" if math.isnan(value) else "infinite"
            logged = len(points) + len(self.series.get(name, []))
            why = self._not_diverged(name)
            if why:
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
