"""The `hypotrack` command line: a thin layer over hypotrack.spec, .registry and .runner.

Commands that only read the registry import click, pydantic, PyYAML, SQLAlchemy
and rich, never torch, mlflow or trl: `hypotrack status` must answer in well
under half a second.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import __version__


class Context:
    """Per-invocation state: where the project and the registry are."""

    def __init__(self, db: str | None, project: str | None):
        self.db_url = db
        self.project_root = project
        self._registry = None
        self._catalog = None
        self._summaries = None

    def registry(self, reconcile: bool = True):
        if self._registry is None:
            from .registry import open_registry
            from .registry.queries import reconcile as reconcile_dead

            self._registry = open_registry(self.db_url)
            if reconcile:
                dead = reconcile_dead(self._registry)
                for run in dead:
                    click.echo(f"note: test run {run.id} of {run.hypothesis_id} (pid {run.pid}) had died; "
                               f"marked killed, {run.hypothesis_id} is back to {run.previous_status}", err=True)
                if any(run.mlflow_parent_run_id for run in dead):
                    from .close_runs import spawn_detached

                    spawn_detached(self._registry.url)  # ends their MLflow runs as KILLED, in the background
        return self._registry

    def catalog(self):
        if self._catalog is None:
            from .spec import Project, load_catalog

            catalog = load_catalog(Project.locate(self.project_root))
            catalog.raise_if_problems()
            self._catalog = catalog
        return self._catalog

    def summaries(self):
        """Validated summaries of every hypothesis, from the cache when no file changed (no pydantic then)."""
        if self._summaries is None:
            from .spec.project import Project
            from .spec.summary import load_summaries

            self._summaries = load_summaries(Project.locate(self.project_root).root)
        return self._summaries

    def check_id(self, hypothesis_id: str) -> None:
        known = self.summaries()
        if hypothesis_id not in known:
            from .spec.project import Project

            where = Project.locate(self.project_root).hypotheses_dir
            raise click.BadParameter(f"no hypothesis {hypothesis_id!r} in {where} "
                                     f"(known: {', '.join(sorted(known)) or 'none'})", param_hint="ID")

    def hypothesis(self, hypothesis_id: str):
        """The full, validated definition (show, run)."""
        self.check_id(hypothesis_id)
        return self.catalog().hypotheses[hypothesis_id]


pass_ctx = click.make_pass_decorator(Context)


class LazyGroup(click.Group):
    """Commands that live in heavier modules are imported only when invoked.

    `hypotrack --help` lists them from the short help given here, so listing
    commands never imports the training, MLflow or parity code paths.
    """

    lazy: dict[str, tuple[str, str, str]] = {
        "run": ("hypotrack.cli_run", "run",
                "Test a hypothesis: train control and treatment arms over seeds, log to MLflow, record the verdict."),
        "ui": ("hypotrack.cli_run", "ui", "Start the MLflow UI on the same store as `hypotrack run`, on 127.0.0.1."),
        "parity": ("hypotrack.parity.cli", "parity",
                   "Parity checks: reference GRPO loss vs TRL, logprob contexts, determinism."),
        "selftest": ("hypotrack.cli_selftest", "selftest",
                     "Run every hypothesis against every planted fault and a clean run; print the confusion matrix."),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None or name not in self.lazy:
            return command
        import importlib

        module, attribute, _ = self.lazy[name]
        try:
            command = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise click.ClickException(f"the `{name}` command is not available in this install ({exc})") from None
        self.add_command(command, name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.commands:
                rows.append((name, self.commands[name].get_short_help_str(limit=formatter.width)))
            else:
                rows.append((name, self.lazy[name][2]))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _console():
    from rich.console import Console

    # Piped output (logs, CI, `| less`) gets a wide fixed width instead of rich's 80 columns.
    return Console(soft_wrap=False) if sys.stdout.isatty() else Console(width=160)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--db", envvar="HYPOTRACK_DB", metavar="URL",
              help="Registry location: a SQLAlchemy URL or a file path [env HYPOTRACK_DB; default ./hypotrack.db].")
@click.option("--project", envvar="HYPOTRACK_PROJECT", metavar="DIR",
              help="Folder holding hypotheses/ and experiments/ [env HYPOTRACK_PROJECT; default: the working directory].")
@click.version_option(__version__, prog_name="hypotrack")
@click.pass_context
def cli(ctx: click.Context, db: str | None, project: str | None) -> None:
    """Debug RL fine-tuning by testing declared hypotheses.

    \b
    Example:
        hypotrack status
        hypotrack next
        hypotrack run h06 --no-peft
    """
    if db and "://" not in db:
        db = f"sqlite:///{Path(db).resolve()}"
    ctx.obj = Context(db, project)


# --------------------------------------------------------------------------- read side


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@pass_ctx
def status(ctx: Context, as_json: bool) -> None:
    """Show every hypothesis with its status, confidence, latest evidence and last run.

    \b
    Example:
        hypotrack status --json | jq '.[] | select(.status=="validated")'
    """
    from .registry.queries import overview
    from .views import STATUS_ICONS, confidence_label, status_rows

    summaries = ctx.summaries()
    rows = status_rows(summaries, overview(ctx.registry(), list(summaries)))
    if as_json:
        click.echo(json.dumps([row.as_json() for row in rows], indent=2))
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Current Status Summary", title_justify="left", expand=False)
    for column in ("ID", "Hypothesis", "Priority", "Status", "Confidence", "Latest evidence or note", "Last run"):
        table.add_column(column, overflow="fold")
    for row in rows:  # free text is escaped: "[control, min]" in evidence is not rich markup
        table.add_row(row.id, escape(row.title), row.priority.upper(), f"{STATUS_ICONS.get(row.status, '')} {row.status}",
                      confidence_label(row.confidence), escape(row.evidence), row.last_run)
    _console().print(table)


@cli.command()
@click.argument("hypothesis_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def show(ctx: Context, hypothesis_id: str, as_json: bool) -> None:
    """Show one hypothesis: its definition, status history, notes and test runs.

    \b
    Example:
        hypotrack show h06
    """
    from .registry import queries as store
    from .views import confidence_label, run_command, test_run_json

    hyp = ctx.hypothesis(hypothesis_id)
    registry = ctx.registry()
    changes = store.history(registry, hypothesis_id)
    notes = store.notes(registry, hypothesis_id)
    runs = store.test_runs(registry, hypothesis_id)
    current = store.overview(registry, [hypothesis_id])[hypothesis_id]
    if as_json:
        click.echo(json.dumps({
            "definition": hyp.model_dump(mode="json"), "status": current.status, "confidence": current.confidence,
            "file": str(ctx.catalog().hypothesis_files[hypothesis_id]),
            "history": [{"from": c.from_status, "to": c.to_status, "confidence": c.confidence, "reason": c.reason,
                         "evidence": c.evidence, "who": c.actor, "at": c.at.isoformat(), "test_run": c.test_run_id}
                        for c in changes],
            "notes": [{"text": n.text, "who": n.author, "at": n.at.isoformat()} for n in notes],
            "runs": [test_run_json(r) for r in runs],
        }, indent=2, default=str))
        return
    import yaml
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    console = _console()
    header = (f"[bold]{hyp.id.upper()}: {escape(hyp.title)}[/]  priority {hyp.priority.upper()}  status "
              f"[bold]{current.status}[/]  confidence {confidence_label(current.confidence)}\n"
              f"file {ctx.catalog().hypothesis_files[hypothesis_id]}\n\n{escape(hyp.statement.strip())}")
    if hyp.rationale:
        header += f"\n\n[dim]Rationale:[/] {escape(hyp.rationale.strip())}"
    header += f"\n\n[dim]Test:[/] {run_command(hyp)}   [dim]prerequisites:[/] {', '.join(hyp.prerequisites) or 'none'}"
    header += f"   [dim]hooks:[/] {', '.join(hyp.hooks) or 'none'}"
    if hyp.resources.time or hyp.resources.memory:
        header += f"\n[dim]Resources:[/] time {hyp.resources.time or '-'}, memory {hyp.resources.memory or '-'}"
    console.print(Panel(header, expand=False))
    console.print("[bold]Criteria[/]")
    console.print(yaml.safe_dump(hyp.criteria.model_dump(mode="json", exclude_defaults=True), sort_keys=False))
    table = Table(title="History", title_justify="left")
    for column in ("When", "From", "To", "Confidence", "Reason", "Who"):
        table.add_column(column, overflow="fold")
    for c in changes:
        table.add_row(c.at.strftime("%Y-%m-%d %H:%M:%S"), c.from_status, c.to_status, confidence_label(c.confidence),
                      escape(c.reason), escape(c.actor))
    console.print(table if changes else "[dim]No status changes yet.[/]")
    if notes:
        console.print("[bold]Notes[/]")
        for n in notes:
            console.print(f"  {n.at:%Y-%m-%d %H:%M} {escape(n.author)}: {escape(n.text)}")
    runs_table = Table(title="Test runs", title_justify="left")
    for column in ("Id", "Started", "State", "Verdict", "Confidence", "Seeds", "MLflow parent run", "Summary"):
        runs_table.add_column(column, overflow="fold")
    for r in runs:
        runs_table.add_row(r.id, f"{r.started_at:%Y-%m-%d %H:%M}", r.state, r.verdict or "-",
                           confidence_label(r.confidence), ",".join(map(str, r.seeds)),
                           r.mlflow_parent_run_id or "-", escape(r.summary or r.error or ""))
    console.print(runs_table if runs else "[dim]No test runs yet.[/]")


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--metrics", "list_metrics", is_flag=True, help="Also list the metric names criteria may use.")
@pass_ctx
def validate(ctx: Context, paths: tuple[Path, ...], list_metrics: bool) -> None:
    """Check hypothesis and experiment files; report every problem as file:line: key: message.

    \b
    Example:
        hypotrack validate
        hypotrack validate hypotheses/h07_my_idea.yaml
    """
    from .spec import Project, SpecError, load_catalog

    catalog = load_catalog(Project.locate(ctx.project_root), list(paths) or None)
    if catalog.problems:
        raise SpecError(catalog.problems)
    click.echo(f"ok: {len(catalog.hypotheses)} hypotheses, {len(catalog.experiments)} experiments")
    if list_metrics:
        from .spec.metrics import known_metric_patterns

        for name in sorted(known_metric_patterns()):
            click.echo(f"  {name}")


@cli.command()
@click.argument("hypothesis_id", metavar="ID")
@click.argument("new_status", metavar="STATUS",
                type=click.Choice(["pending", "testing", "validated", "partial", "invalidated", "inconclusive"]))
@click.option("--confidence", type=click.FloatRange(0.0, 1.0), help="Confidence between 0 and 1.")
@click.option("--note", default="", help="Why: stored with the status change.")
@pass_ctx
def mark(ctx: Context, hypothesis_id: str, new_status: str, confidence: float | None, note: str) -> None:
    """Set a hypothesis's status by hand (the change and its reason go to the history).

    \b
    Example:
        hypotrack mark h03 partial --confidence 0.8 --note "KL beta=0 fixed gradients, not rewards"
    """
    from .registry.store import set_status

    ctx.check_id(hypothesis_id)
    change = set_status(ctx.registry(), hypothesis_id, new_status, reason=note or "marked by hand",
                        confidence=confidence)
    click.echo(f"{hypothesis_id}: {change.from_status} -> {change.to_status}")


@cli.command()
@click.argument("hypothesis_id", metavar="ID")
@click.argument("text")
@pass_ctx
def note(ctx: Context, hypothesis_id: str, text: str) -> None:
    """Attach a free-form note to a hypothesis.

    \b
    Example:
        hypotrack note h02 "env tokens are masked since commit abc123"
    """
    from .registry.store import add_note

    ctx.check_id(hypothesis_id)
    if not text.strip():
        raise click.BadParameter("the note is empty", param_hint="TEXT")
    add_note(ctx.registry(), hypothesis_id, text)
    click.echo(f"{hypothesis_id}: note added")


@cli.command(name="next")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_ctx
def next_(ctx: Context, as_json: bool) -> None:
    """Say which hypothesis to test next, and why (priority, prerequisites, status).

    \b
    Example:
        hypotrack next
    """
    from .registry.queries import overview
    from .views import next_step

    summaries = ctx.summaries()
    statuses = {k: v.status for k, v in overview(ctx.registry(), list(summaries)).items()}
    step = next_step(summaries, statuses)
    if as_json:
        click.echo(json.dumps({"next": step.hypothesis.id if step.hypothesis else None, "reason": step.reason,
                               "command": step.hypothesis.command if step.hypothesis else None,
                               "blocked": step.blocked}, indent=2))
        return
    if step.hypothesis is None:
        click.echo(step.reason)
    else:
        click.echo(f"Next: {step.hypothesis.id.upper()}: {step.hypothesis.title}")
        click.echo(f"Why: {step.reason}")
        click.echo(f"Run: {step.hypothesis.command}")
    for line in step.blocked:
        click.echo(f"  blocked: {line}")


@cli.command()
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
    from .registry.queries import test_runs
    from .views import confidence_label, test_run_json

    if hypothesis_id:
        ctx.check_id(hypothesis_id)
    runs = test_runs(ctx.registry(), hypothesis_id, limit)
    if as_json:
        click.echo(json.dumps([test_run_json(r) for r in runs], indent=2))
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Experiments log", title_justify="left")
    for column in ("Started", "Hypothesis", "Test run", "State", "Verdict", "Confidence", "Summary"):
        table.add_column(column, overflow="fold")
    for r in runs:
        table.add_row(f"{r.started_at:%Y-%m-%d %H:%M}", r.hypothesis_id, r.id, r.state, r.verdict or "-",
                      confidence_label(r.confidence), escape(r.summary or r.error or ""))
    _console().print(table if runs else "No test runs yet.")


@cli.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Write the markdown here instead of stdout.")
@pass_ctx
def report(ctx: Context, output: Path | None) -> None:
    """Write a markdown report: status summary, next action and the experiments log.

    \b
    Example:
        hypotrack report -o docs/debug/README.md
    """
    from .registry.queries import overview, test_runs
    from .views import next_step, render_report, status_rows

    summaries = ctx.summaries()
    registry = ctx.registry()
    overviews = overview(registry, list(summaries))
    rows = status_rows(summaries, overviews)
    step = next_step(summaries, {k: v.status for k, v in overviews.items()})
    text = render_report(rows, test_runs(registry), step)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write report to {output}: {exc.strerror}") from None
    click.echo(f"report written to {output}")


# --------------------------------------------------------------------------- database


@cli.group()
def db() -> None:
    """Registry schema: show the revision or migrate (migrations also run on open).

    \b
    Example:
        hypotrack db current
    """


@db.command()
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@pass_ctx
def upgrade(ctx: Context, revision: str) -> None:
    """Migrate the registry up to REVISION.

    \b
    Example:
        hypotrack --db postgresql://team@db/hypotrack db upgrade
    """
    from .registry.engine import current_revision, upgrade as run_upgrade

    registry = _open_unmigrated(ctx)
    run_upgrade(registry.url, registry.engine, revision)
    click.echo(f"{registry.url}: at revision {current_revision(registry.engine)}")


@db.command()
@click.argument("revision")
@pass_ctx
def downgrade(ctx: Context, revision: str) -> None:
    """Migrate the registry down to REVISION ('base' drops every table).

    \b
    Example:
        hypotrack db downgrade base
    """
    from .registry.engine import current_revision, downgrade as run_downgrade

    registry = _open_unmigrated(ctx)
    run_downgrade(registry.url, registry.engine, revision)
    click.echo(f"{registry.url}: at revision {current_revision(registry.engine) or 'base'}")


@db.command()
@pass_ctx
def current(ctx: Context) -> None:
    """Print the registry URL and its schema revision.

    \b
    Example:
        hypotrack db current
    """
    from .registry.engine import HEAD_REVISION, current_revision

    registry = _open_unmigrated(ctx)
    revision = current_revision(registry.engine)
    state = "current" if revision == HEAD_REVISION else f"behind head {HEAD_REVISION}"
    click.echo(f"{registry.url}: revision {revision or 'none (empty)'} ({state})")


def _open_unmigrated(ctx: Context):
    from .registry import open_registry

    return open_registry(ctx.db_url, migrate=False)


# --------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; library errors become one clear paragraph and a non-zero exit, never a traceback."""
    from .errors import friendly_error

    try:
        cli.main(args=argv, prog_name="hypotrack", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the edge of the program
        message, code = friendly_error(exc)
        if message is None:
            raise
        click.echo(message, err=True)
        sys.exit(code)


if __name__ == "__main__":
    # `python -m hypotrack.cli` runs this file as __main__, a second copy of the module: the commands in
    # cli_run and parity.cli import hypotrack.cli, so run that module's group (one Context class).
    from hypotrack.cli import main as _main

    _main()
