"""Live progress (a line per arm: step, reward, elapsed) and the verdict table after a run."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table


class ProgressDisplay:
    """A rich Live table on a terminal; plain lines (at most every 10 s, and at each arm's end) elsewhere."""

    def __init__(self, console: Console):
        self.console = console
        self.live: Live | None = None
        self.last_plain = 0.0
        self.reported: set[str] = set()

    def __enter__(self) -> "ProgressDisplay":
        if self.console.is_terminal:
            self.live = Live(console=self.console, refresh_per_second=4, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def note(self, text: str) -> None:
        self.console.print(text)

    def update(self, arms: list) -> None:  # list[ArmState]
        if self.live is not None:
            self.live.update(self._table(arms))
            return
        now = time.time()
        for arm in arms:
            key = arm.spec.key
            if arm.status in ("finished", "failed", "killed") and key not in self.reported:
                self.reported.add(key)
                self.console.print(self._line(arm))
        if now - self.last_plain > 10 and any(a.status == "running" for a in arms):
            self.last_plain = now
            for arm in arms:
                if arm.status == "running":
                    self.console.print(self._line(arm))

    @staticmethod
    def _line(arm) -> str:
        reward = "-" if arm.reward is None else f"{arm.reward:.3f}"
        extra = f"  {arm.error}" if arm.error and arm.status != "finished" else ""
        if arm.phase and arm.status == "running":
            extra = f"  ({arm.phase})"
        return (f"{arm.spec.arm:>9} seed {arm.spec.seed}: {arm.status:<8} step {arm.step}/{arm.spec.max_steps} "
                f"reward {reward} elapsed {arm.elapsed:5.1f}s{extra}")

    @staticmethod
    def _table(arms: list) -> Table:
        table = Table(title="hypotrack run", title_justify="left")
        for column in ("Arm", "Seed", "State", "Step", "Reward", "Elapsed", "Note"):
            table.add_column(column)
        for arm in arms:
            table.add_row(arm.spec.arm, str(arm.spec.seed), arm.status, f"{arm.step}/{arm.spec.max_steps}",
                          "-" if arm.reward is None else f"{arm.reward:.3f}", f"{arm.elapsed:.1f}s",
                          (arm.phase if arm.status == "running" else arm.error or "")[:80])
        return table


def print_outcome(console: Console, hypothesis, outcome) -> None:
    from hypotrack.report import confidence_label

    if outcome.state == "killed":
        console.print(f"[yellow]Test run {outcome.test_id} stopped[/]: workers ended, MLflow runs KILLED, "
                      f"{hypothesis.id} back to its previous status.")
        return
    verdict = outcome.verdict
    if verdict is None:
        console.print(f"[red]Test run {outcome.test_id} failed before a verdict.[/]")
        return
    table = Table(title=f"{hypothesis.id}: {hypothesis.title}", title_justify="left")
    for column in ("Criterion", "Metric", "Arm", "Steps", "Per seed", "Value", "Test", "Holds"):
        table.add_column(column, overflow="fold")
    for result in verdict.results:
        c = result.criterion
        per_seed = ", ".join("-" if v is None else f"{v:.4g}" for v in result.per_seed.values())
        table.add_row(result.group, c.metric, c.arm, c.steps_text(),
                      per_seed, "-" if result.value is None else f"{result.value:.4g}",
                      f"{'|x|' if c.abs else 'x'} {c.op} {c.threshold:g} ({c.seeds})",
                      "[green]yes[/]" if result.holds else "[red]no[/]")
    console.print(table)
    if verdict.effect is not None and verdict.effect.per_seed:
        console.print(_effect_table(verdict.effect))
    colour = {"validated": "green", "invalidated": "red", "not_applicable": "dim"}.get(verdict.status, "yellow")
    from rich.markup import escape

    console.print(f"Verdict: [bold {colour}]{escape(verdict.headline)}[/]", highlight=False)
    basis = f", on the {verdict.basis}" if verdict.basis else ""
    console.print(f"Confidence {confidence_label(verdict.confidence)}{basis}"
                  + (f"; seeds {', '.join(map(str, verdict.seeds))}" if verdict.seeds else ""))
    console.print(verdict.summary, markup=False)
    errors = {}
    for arm in outcome.arms:
        for name, count in arm.reward_errors.items():
            errors[name] = errors.get(name, 0) + count
    if errors:
        console.print("[yellow]Reward functions raised:[/] " + ", ".join(f"{k}: {v} calls" for k, v in errors.items())
                      + " (counted per step as reward_errors/<name>; see the runs' hypotrack.reward_errors tag)")
    _print_arm_reports(console, outcome.arms)
    console.print(f"Test run {outcome.test_id} in {outcome.seconds:.0f}s; MLflow parent run {outcome.parent_run_id} "
                  f"at {outcome.tracking_uri}; outputs in {outcome.output_dir}")


def _effect_table(effect) -> Table:  # hypotrack.effect.Effect
    """Per seed: the outcome in each arm and their difference; below, the mean with its interval."""
    table = Table(title=f"Effect of the treatment on the {effect.description} (paired by seed)", title_justify="left")
    for column in ("Seed", "Control", "Treatment", "Treatment - control"):
        table.add_column(column, justify="right")
    for seed, diff in effect.per_seed.items():
        table.add_row(str(seed), f"{effect.control[seed]:.4g}", f"{effect.treatment[seed]:.4g}", f"{diff:+.4g}")
    interval = "-" if effect.low is None else f"[{effect.low:+.3g}, {effect.high:+.3g}]"
    table.add_row("mean", "", "", f"{effect.mean:+.4g}")
    table.caption = (f"{100 * (1 - effect.level):.4g}% interval {interval}; meaningful >= {effect.meaningful:.3g}; smallest detectable "
                     f"{'-' if effect.detectable is None else format(effect.detectable, '.3g')}; "
                     + {"helps": "the treatment helps", "no_help": "the treatment does not help",
                        "undetermined": f"too noisy to tell ({effect.direction}; {effect.reason})",
                        "not_measurable": f"not measurable: {effect.reason}"}.get(effect.verdict, effect.verdict))
    table.caption_justify = "left"
    return table


def _print_arm_reports(console: Console, arms: list) -> None:
    """Markdown reports the arms wrote (critic parity table and interpretation, parity tables), first seed each."""
    from rich.markdown import Markdown

    first_seed = min((arm.spec.seed for arm in arms), default=0)
    for arm in arms:
        if arm.spec.seed != first_seed or arm.status != "finished":
            continue
        for report in sorted((arm.dir / "artifacts").glob("*.md")):
            console.rule(f"{arm.spec.arm} arm, seed {arm.spec.seed}: {report.name}")
            console.print(Markdown(report.read_text()))
