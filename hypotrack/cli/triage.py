"""`hypotrack triage SOURCE`: rank the hypotheses on the metrics a run already logged, and record the ranking.

Imports no torch, transformers or trl (the triage library reads logs only); MLflow only when the
source is an MLflow run.
"""

from __future__ import annotations

import json

import click

from hypotrack.cli.context import Context, pass_ctx


@click.command()
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@click.option("--task-reward", metavar="NAME",
              help="Which logged reward function measures the task [the one with the largest weight, else the "
                   "first listed]; its logged key (rewards/NAME/mean) names it too.")
@click.option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", metavar="URI",
              help="MLflow store of an MLflow run SOURCE [env MLFLOW_TRACKING_URI; default: MLflow's].")
@click.option("--run", "run_name", metavar="NAME",
              help="Triage only this run of a SOURCE that holds several (a W&B export, a TensorBoard folder) "
                   "[every run, one report each].")
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@pass_ctx
def triage(ctx: Context, sources: tuple[str, ...], task_reward: str | None, tracking_uri: str | None,
           run_name: str | None, as_json: bool) -> None:
    """Rank the hypotheses on a run you already have, before training anything.

    SOURCE is what the run left: a training output folder (its trainer_state.json, or the newest
    checkpoint's, else its TensorBoard event files), a trainer_state.json, TensorBoard event files or
    their folder, the console log the Trainer printed (or verl's), a tracker's CSV export (W&B's,
    with several runs: one report each), JSON records (JSONL), or an MLflow run id or runs:/<id> URI;
    - reads what is piped in. Several SOURCEs (a shell glob of a sweep's logs) give a report each.
    A training_args.bin beside the log adds the run's settings. The report says first whether the
    run learns, is flat or gets worse on its task reward; then each hypothesis's `triage:`
    signatures are read on the run's own metrics (TRL's, verl's and OpenRLHF's keys, the reward
    functions by role). On a run that learns, a matching reading is listed as present but not
    holding the run back, never as a suspect. The ranking is recorded in the registry, and
    `hypotrack next` starts from its strongest unresolved suspect.

    \b
    Example:
        hypotrack triage outputs/grpo-run
        hypotrack triage runs:/0a1b2c3d4e5f60718293a4b5c6d7e8f9 --tracking-uri http://tracking:5000
        hypotrack triage wandb_export.csv --task-reward accuracy_reward --json
        hypotrack triage runs/ --run Oct12_10-04-11_gpu1
        hypotrack triage train.log
        hypotrack triage logs/*.log
        kubectl logs grpo-trainer | hypotrack triage -
    """
    from hypotrack.registry import store
    from hypotrack.triage import triage as run_triage
    from hypotrack.triage import triage_runs

    if run_name is not None and len(sources) > 1:
        raise click.UsageError("--run picks one run of one SOURCE; pass that SOURCE alone", ctx=click.get_current_context())
    hypotheses = ctx.library().hypotheses
    if run_name is not None:
        reports = [run_triage(sources[0], hypotheses, task_reward=task_reward, tracking_uri=tracking_uri,
                              run=run_name)]
    else:
        reports = [report for source in sources
                   for report in triage_runs(source, hypotheses, task_reward=task_reward, tracking_uri=tracking_uri)]
    registry = ctx.registry()
    recorded = [(store.record_triage(registry, source=report.source, source_kind=report.kind,
                                     threshold=report.threshold, ranking=report.ranking_record(),
                                     report=report.as_json()), report) for report in reports]
    if as_json:
        documents = [{"id": triage_id, **report.as_json()} for triage_id, report in recorded]
        if len(documents) > 1:  # one report per run, and what they say together at the top
            documents = [{"source": " ".join(sources), "runs": documents, "steps": sum(d["steps"] for d in documents),
                          "suspects": sorted({s for d in documents for s in d["suspects"]})}]
        click.echo(json.dumps(documents[0], indent=2))
        return
    for position, (triage_id, report) in enumerate(recorded):
        if position:
            click.echo("\n" + "=" * 78 + "\n")
        _print(report, triage_id)


def _print(report, triage_id: str) -> None:
    echo = click.echo
    echo(f"Triage of {report.source} ({report.kind}, {report.steps} logged steps)")
    echo(f"  the run first: {report.progress.sentence()}")
    for said in report.assumed:
        echo(f"  assumed: {said}")
    if report.renamed:
        echo("  read as today's TRL names: " + ", ".join(f"{a} -> {b}" for a, b in report.renamed.items()))
    for said in report.findings:
        echo(f"  found: {said}")
    if report.expected:
        echo("\nExpected behaviour, not a fault:")
        for said in report.expected:
            echo(f"  - {said}")
    if not report.ranking:
        echo(f"\nNo ranking: {report.findings[-1] if report.findings else 'no hypothesis has triage signatures'}")
        echo(f"\nRecorded as triage {triage_id}; `hypotrack next` keeps the roadmap's order.")
        return
    echo(f"\nHypotheses by evidence (a suspect reaches {report.threshold:g}):")
    for entry in report.ranking:
        if entry.not_applicable:
            continue
        mark = "  SUSPECT" if entry.suspect else "  present, not holding the run back" if entry.present else ""
        echo(f"{entry.rank:>3}. {entry.id} {entry.title} [{entry.priority}]  evidence {entry.evidence:+.2g}{mark}")
        for label, results in (("for", entry.supporting()), ("against", entry.contradicting())):
            for result in results:
                echo(f"       {label} ({result.weight:g}): {_words(result.shows)}")
                echo(f"           {result.describe()}")
        missing: dict[str, list] = {}  # one line per metric the run did not log, however many signatures read it
        for result in entry.cannot_tell():
            missing.setdefault(", ".join(result.missing), []).append(result)
        for names, results in missing.items():
            hint = next((f"; {_words(r.if_missing)}" for r in results if r.if_missing), "")
            count = f"{len(results)} signatures" if len(results) > 1 else _words(results[0].shows)
            echo(f"       cannot tell: {names} not logged ({count}){hint}")
        if entry.note and not entry.supporting():
            echo(f"       note: {_words(entry.note)}")
    lacking = [entry for entry in report.ranking if entry.not_applicable]
    if lacking:
        echo("\nCannot explain this run:")
        for entry in lacking:
            echo(f"  {entry.id} {entry.title}: {'; '.join(entry.not_applicable)}")
    if report.unranked:
        echo(f"\nNo triage signatures (checks that need a run of their own): {', '.join(report.unranked)}")
    suspects = report.suspects()
    if suspects:
        echo("\nTo decide the suspects:")
        for entry in suspects:
            echo(f"  {entry.command}")
    elif any(entry.present for entry in report.ranking):
        echo("\nNo suspect: the run learns on its task reward, so the readings above that match a signature are "
             "present but not holding it back.")
    else:
        echo(f"\nNo hypothesis reaches evidence {report.threshold:g}: the logs point at no cause; "
             "`hypotrack next` keeps the roadmap's order.")
    echo(f"\nRecorded as triage {triage_id}; `hypotrack next` starts from its strongest unresolved suspect.")


def _words(text: str) -> str:
    return " ".join(text.split())
