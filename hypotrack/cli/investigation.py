"""Commands that read the investigation: status, show, next, log and report.

Each formats a record of hypotrack.investigation: a table or text, or with `--json` the record's
own JSON. They import click, rich, SQLAlchemy and the cached hypothesis summaries; never torch,
mlflow or trl (tests/test_cli_imports.py and the import contracts check it).
"""

from __future__ import annotations

from pathlib import Path

import click

from hypotrack.cli.context import Context, console, pass_ctx


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@pass_ctx
def status(ctx: Context, as_json: bool) -> None:
    """Show every hypothesis with its status, confidence, latest evidence and last run.

    \b
    Example:
        hypotrack status --json | jq '.[] | select(.status=="validated")'
    """
    from hypotrack.investigation import record_json, status_record
    from hypotrack.report import STATUS_ICONS, status_label

    hypotheses = ctx.hypotheses()
    record = status_record(ctx.registry(), hypotheses)
    if as_json:
        click.echo(record_json(record))
        return
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    # One line per hypothesis at 120 columns: long text is cut with an ellipsis (`show` has it whole).
    table = Table(title="Current Status Summary", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  expand=True)
    table.add_column("ID", no_wrap=True)
    table.add_column("Hypothesis", no_wrap=True, overflow="ellipsis", max_width=26)
    table.add_column("Pri", no_wrap=True)
    table.add_column("Status", no_wrap=True)
    table.add_column("Conf", no_wrap=True, justify="right")
    table.add_column("Latest verdict or note", no_wrap=True, overflow="ellipsis", ratio=1, min_width=20)
    table.add_column("Last run", no_wrap=True)
    triage = record.triage
    if triage:
        table.add_column("Triage", no_wrap=True)
    for row in record.rows:  # free text is escaped: "[control, min]" in evidence is not rich markup
        cells = [row.id, escape(row.title), PRIORITY_SHORT.get(row.priority, row.priority.upper()),
                 f"{STATUS_ICONS.get(row.status, '')} {status_label(row.status)}",
                 "-" if row.confidence is None else f"{row.confidence:.2f}", escape(row.headline),
                 row.last_run[5:] if row.last_run != "-" else "-"]  # the year goes: 11-23 20:10 finished
        table.add_row(*cells, *([_triage_cell(record.ranked.get(row.id))] if triage else []))
    console().print(table)
    if triage:
        suspects = [f"{e['hypothesis']} ({e['evidence']:.2g})" for e in triage.ranking if e["suspect"]]
        console().print(f"Latest triage {triage.id} ({triage.at:%Y-%m-%d %H:%M}) of {escape(triage.source)}: "
                        + (f"suspects {', '.join(suspects)}" if suspects else
                           f"no suspect reaches evidence {triage.threshold:g}"))


PRIORITY_SHORT = {"high": "HIGH", "medium": "MED", "low": "LOW"}


def _triage_cell(entry: dict | None) -> str:
    """A hypothesis's place in the latest triage: its rank, evidence, and whether it is a suspect."""
    if entry is None:
        return "-"
    if not entry.get("applies", True):
        return "n/a"
    return f"#{entry['rank']} {entry['evidence']:+.2g}" + (" suspect" if entry["suspect"] else "")


@click.command()
@click.argument("hypothesis_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def show(ctx: Context, hypothesis_id: str, as_json: bool) -> None:
    """Show one hypothesis: its definition, status history, notes and test runs.

    \b
    Example:
        hypotrack show h06
    """
    from hypotrack.investigation import record_json, show_record
    from hypotrack.report import confidence_label, effect_label, status_label

    ctx.check_id(hypothesis_id)  # before the registry is opened: an unknown id opens (or creates) nothing
    record = show_record(ctx.registry(), ctx.hypotheses(), hypothesis_id)
    if as_json:
        click.echo(record_json(record))
        return
    import yaml
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    out = console()
    hyp, changes, runs = record.definition, record.history, record.runs
    header = (f"[bold]{hyp.id.upper()}: {escape(hyp.title)}[/]  priority {hyp.priority.upper()}  status "
              f"[bold]{status_label(record.status)}[/]  confidence {confidence_label(record.confidence)}\n"
              f"file {escape(str(record.file))}\n\n{escape(hyp.statement.strip())}")
    if hyp.rationale:
        header += f"\n\n[dim]Rationale:[/] {escape(hyp.rationale.strip())}"
    header += (f"\n\n[dim]Test:[/] {escape(hyp.command_line())}   "
               f"[dim]prerequisites:[/] {', '.join(hyp.prerequisites) or 'none'}")
    header += f"   [dim]hooks:[/] {', '.join(hyp.hooks) or 'none'}"
    header += f"\n[dim]Requires of the run:[/] {', '.join(hyp.requires) or 'nothing'}   [dim]effect measured on:[/] "
    header += "nothing (the criteria are the test)" if hyp.effect.outcome == "none" else (
        f"{hyp.effect.outcome}" + (f" over the last {hyp.effect.last_steps} steps" if hyp.effect.outcome == "task_reward"
                                   else "") + f", meaningful >= {hyp.effect.meaningful:g} x its spread")
    if hyp.resources.time or hyp.resources.memory:
        header += f"\n[dim]Resources:[/] time {hyp.resources.time or '-'}, memory {hyp.resources.memory or '-'}"
    out.print(Panel(header, expand=False))
    out.print("[bold]Criteria[/]")
    out.print(yaml.safe_dump(hyp.criteria.model_dump(mode="json", exclude_defaults=True), sort_keys=False),
              markup=False, highlight=False)  # criteria text is the author's: "[x]" is not rich markup
    if hyp.expected_readings:
        out.print("[bold]Readings that are expected, not this bug[/]")
        for reading in hyp.expected_readings:
            out.print(f"  - {escape(' '.join(reading.split()))}")
    if record.triage:
        _print_triage(out, record.triage)
    table = Table(title="History", title_justify="left")
    for column in ("When", "From", "To", "Confidence", "Reason", "Who"):
        table.add_column(column, overflow="fold")
    for c in changes:
        table.add_row(c.at.strftime("%Y-%m-%d %H:%M:%S"), status_label(c.from_status), status_label(c.to_status),
                      confidence_label(c.confidence),
                      escape(c.reason), escape(c.actor))
    out.print(table if changes else "[dim]No status changes yet.[/]")
    if record.notes:
        out.print("[bold]Notes[/]")
        for n in record.notes:
            out.print(f"  {n.at:%Y-%m-%d %H:%M} {escape(n.author)}: {escape(n.text)}")
    runs_table = Table(title="Test runs", title_justify="left")
    for column in ("Id", "Started", "State", "Verdict", "Confidence", "Effect", "Seeds", "MLflow parent run",
                   "Summary"):
        runs_table.add_column(column, overflow="fold")
    for r in runs:
        runs_table.add_row(r.id, f"{r.started_at:%Y-%m-%d %H:%M}", r.state, status_label(r.verdict or "-"),
                           confidence_label(r.confidence), effect_label(r.effect), ",".join(map(str, r.seeds)),
                           r.mlflow_parent_run_id or "-", escape(r.summary or r.error or ""))
    out.print(runs_table if runs else "[dim]No test runs yet.[/]")


def _print_triage(out, entry: dict) -> None:  # a rich Console
    from rich.markup import escape

    verdict = ("does not apply: " + "; ".join(entry["not_applicable"]) if entry["not_applicable"] else
               f"rank {entry['rank']}, evidence {entry['evidence']:+.2g}" + (" (suspect)" if entry["suspect"] else ""))
    out.print(f"[bold]Latest triage[/] {entry['triage']} of {escape(entry['source'])}: {escape(verdict)}")
    for label, key in (("for", "supports"), ("against", "contradicts"), ("cannot tell", "cannot_tell")):
        for result in entry[key]:
            readings = "; ".join(f"{r['metric']} [{r['steps']}] = " + ("not logged" if r["value"] is None else
                                 f"{r['value']:.4g} {r['op']} {r['threshold']:g}") for r in result["readings"])
            out.print(f"  {label} ({result['weight']:g}): {escape(' '.join(result['shows'].split()))}  [dim]{escape(readings)}[/]")


@click.command(name="next")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def next_(ctx: Context, as_json: bool) -> None:
    """Say which hypothesis to test next, and why (priority, prerequisites, status).

    \b
    Example:
        hypotrack next
    """
    from hypotrack.investigation import next_record, record_json

    hypotheses = ctx.hypotheses()
    record = next_record(ctx.registry(), hypotheses)
    if as_json:
        click.echo(record_json(record))
        return
    step = record.step
    if step.hypothesis is None:
        click.echo(step.reason)
    else:
        click.echo(f"Next: {step.hypothesis.id.upper()}: {step.hypothesis.title}")
        click.echo(f"Why: {step.reason}")
        click.echo(f"Run: {step.command}")
    for confirm in step.confirm:
        if confirm.command != step.command:
            click.echo(f"Confirm: {confirm.command}  ({confirm.reason})")
    for line in step.blocked:
        click.echo(f"  blocked: {line}")


@click.command()
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True, help="Show at most this many runs.")
@click.option("--hypothesis", "hypothesis_id", metavar="ID", help="Only this hypothesis's runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def log(ctx: Context, limit: int, hypothesis_id: str | None, as_json: bool) -> None:
    """Show the experiments log: test runs, newest first.

    \b
    Example:
        hypotrack log --hypothesis h01 --limit 5
    """
    from hypotrack.investigation import log_record, record_json
    from hypotrack.report import confidence_label, effect_label, status_label

    if hypothesis_id:
        ctx.check_id(hypothesis_id)
    record = log_record(ctx.registry(), hypothesis_id, limit)
    if as_json:
        click.echo(record_json(record))
        return
    runs = record.runs
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Experiments log", title_justify="left")
    for column in ("Started", "Hypothesis", "Test run", "State", "Verdict", "Confidence", "Effect", "Summary"):
        table.add_column(column, overflow="fold")
    for r in runs:
        table.add_row(f"{r.started_at:%Y-%m-%d %H:%M}", r.hypothesis_id, r.id, r.state, status_label(r.verdict or "-"),
                      confidence_label(r.confidence), effect_label(r.effect),
                      escape(r.headline or r.summary or r.error or ""))
    console().print(table if runs else "No test runs yet.")


@click.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Write the markdown here instead of stdout.")
@pass_ctx
def report(ctx: Context, output: Path | None) -> None:
    """Write a markdown report: status summary, next action and the experiments log.

    \b
    Example:
        hypotrack report -o docs/debug/README.md
    """
    from hypotrack.investigation import report_markdown

    hypotheses = ctx.hypotheses()
    text = report_markdown(ctx.registry(), hypotheses)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write report to {output}: {exc.strerror}") from None
    click.echo(f"report written to {output}")
