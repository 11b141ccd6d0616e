"""`hypotrack selftest`: the confusion matrix of planted faults x hypotheses."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import click

from hypotrack.cli.context import Context, console, pass_ctx


def _names(value: str | None, known: list[str], what: str) -> list[str] | None:
    if not value:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise click.BadParameter(f"unknown {what} {', '.join(unknown)} (known: {', '.join(known)})")
    return names


@click.command()
@click.option("--faults", help="Comma-separated planted faults [all the toy lab can show]; 'clean' is the unfaulted row.")
@click.option("--hypotheses", "hypothesis_ids", help="Comma-separated hypothesis ids [those a fault imitates].")
@click.option("--seeds", type=click.IntRange(1, 16), default=1, show_default=True, help="Seeds per cell.")
@click.option("--max-steps", type=click.IntRange(1), help="Training steps per arm [each experiment's own].")
@click.option("--compact", is_flag=True,
              help="Train each row only as long as its fault's signature needs to show (3 steps for most).")
@click.option("--experiment", metavar="NAME|PATH",
              help="Test every row on this experiment instead of each hypothesis's own (toy_arith_vllm: the rows "
                   "under vLLM generation).")
@click.option("--parallel", type=click.IntRange(1), help="Workers at once [number of CPU cores].")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the selftest's registry, MLflow store and runs go [a new temporary folder].")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@pass_ctx
def selftest(ctx: Context, faults: str | None, hypothesis_ids: str | None, seeds: int, max_steps: int | None,
             compact: bool, experiment: str | None, parallel: int | None, output_dir: Path | None,
             as_json: bool) -> None:
    """Run every hypothesis against every planted fault and a clean run; print the confusion matrix.

    Each planted fault should validate its own hypothesis and no other, and the clean
    run should validate none. The selftest uses a registry and MLflow store of its own
    (never yours), under --output-dir.

    \b
    Example:
        hypotrack selftest
        hypotrack selftest --compact
        hypotrack selftest --faults clean,lora_not_synced --hypotheses h06 --max-steps 10
        hypotrack selftest --experiment toy_arith_vllm --faults clean,generator_sync_skipped --hypotheses h06
    """
    if compact and max_steps:
        raise click.UsageError("--compact chooses each row's steps; leave out --max-steps, or leave out --compact")
    from hypotrack.faults.manifest import FAULTS, NEEDS_VLLM, NOT_SHOWN_ON_TOY
    from hypotrack.registry import open_registry
    from hypotrack.run.launching.launchers import default_parallel
    from hypotrack.run.selftest import CLEAN, fault_rows, run_selftest
    from hypotrack.tracking import Tracker

    library = ctx.library()
    not_by_default = {**NOT_SHOWN_ON_TOY, **NEEDS_VLLM}
    rows = _names(faults, [CLEAN, *FAULTS], "fault") or [CLEAN, *(f for f in FAULTS if f not in not_by_default)]
    # by default, the hypotheses some planted fault imitates; each is tested on its own experiment unless one is named,
    # so without one, those only a vLLM fault imitates (h27, whose experiment generates with vLLM) are left out
    imitated = {h for name, (h, _) in FAULTS.items() if experiment or name not in NEEDS_VLLM}
    hypotheses = _names(hypothesis_ids, sorted(library.hypotheses), "hypothesis") or sorted(
        imitated & set(library.hypotheses))
    root = output_dir or Path(tempfile.mkdtemp(prefix=f"hypotrack-selftest-{time.strftime('%Y%m%d-%H%M%S')}-"))
    root.mkdir(parents=True, exist_ok=True)
    registry = open_registry(f"sqlite:///{(root / 'selftest.db').resolve()}")
    tracker = Tracker(f"sqlite:///{(root / 'mlflow.db').resolve()}")
    out = console()
    done: set[str] = set()

    def progress(arms) -> None:
        finished = [a for a in arms if a.status in ("finished", "failed", "killed")]
        for arm in finished:
            if arm.spec.output_dir not in done:
                done.add(arm.spec.output_dir)
                if not as_json:
                    out.print(f"[{len(done)}/{len(arms)}] {','.join(arm.spec.plant) or CLEAN:>22} "
                                  f"{arm.spec.experiment_name:<13} {arm.spec.arm:<9} {arm.status} "
                                  f"reward {arm.reward if arm.reward is None else round(arm.reward, 3)} "
                                  f"({arm.elapsed:.0f}s) {arm.error[:80] if arm.status != 'finished' else ''}")

    result = run_selftest(library, registry, tracker, root, fault_rows(rows, compact, experiment), hypotheses, list(range(seeds)), max_steps,
                          parallel or default_parallel("python", 8), progress)
    left_out = {} if faults else not_by_default
    if as_json:
        click.echo(json.dumps({**result.as_json(), "left_out": left_out}, indent=2))
    else:
        _print_matrix(out, result)
        for name, why in left_out.items():
            out.print(f"Left out: {name} ({FAULTS[name][0]}): {why}.")
        out.print(f"Registry and MLflow store: {root}  (hypotrack ui --tracking-uri sqlite:///{root / 'mlflow.db'})")
    hits, total = result.diagonal()
    if result.failed_runs or hits < total or result.false_validations():
        sys.exit(1)


# One letter a cell where the full words would not fit the terminal (20 hypotheses do not fit 160 columns).
_SHORT = {"validated": "V", "partial": "p", "invalidated": "i", "inconclusive": "?", "not_applicable": "n/a"}
_FULL_CELL = len("inconclusive 0.67") + 3  # a full cell's width with rich's padding and border


def _print_matrix(out, result) -> None:
    from rich import box
    from rich.table import Table

    label_width = max(len(f"{row} ({result.expected.get(row, '')})") for row in result.rows)
    short = label_width + _FULL_CELL * (len(result.hypotheses) + bool(result.triage)) > out.width
    title = ("Planted fault x hypothesis (V validated, i invalidated, ? inconclusive, p partial, n/a not applicable;"
             " --json has each confidence)" if short else "Planted fault x hypothesis (cells: verdict, confidence)")
    table = (Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 0)) if short
             else Table(title=title, title_justify="left"))
    # a narrow terminal shortens the fault names first, never a verdict
    verdicts_width = 4 * len(result.hypotheses) + (13 if result.triage else 0)
    table.add_column("planted fault", no_wrap=True, max_width=max(12, out.width - verdicts_width - 2) if short else None)
    for hyp in result.hypotheses:
        table.add_column(hyp, justify="center", min_width=3 if short else None)
    if result.triage:
        table.add_column("triage rank" if short else "triage: its hypothesis's rank", justify="center", no_wrap=short)
    for row in result.rows:
        cells = []
        for hyp in result.hypotheses:
            verdict = result.verdicts[(row, hyp)]
            if short:
                text = _SHORT.get(verdict.status, verdict.status)
            else:
                text = verdict.status if verdict.confidence is None else f"{verdict.status} {verdict.confidence:.2f}"
            own = result.expected.get(row) == hyp
            colour = "green" if (verdict.status == "validated") == own and own else (
                "red" if verdict.status == "validated" or own else "dim")
            cells.append(f"[{colour}]{text}[/]")
        if result.triage:
            cells.append(result.triage.cell(row))
        table.add_row(f"{row} ({result.expected[row]})" if row in result.expected else row, *cells)
    out.print(table)
    hits, total = result.diagonal()
    false = result.false_validations()
    out.print(f"Diagonal: {hits}/{total} validated; false validations: {len(false)}"
                  + (f" ({', '.join(f'{r}/{h}' for r, h in false)})" if false else "")
                  + f"; {result.unique_runs} training runs, {result.failed_runs} failed, {result.seconds / 60:.1f} min.")
    if result.triage:
        out.print(result.triage.summary())
