"""The `hypotrack` command line: thin click commands over hypotrack's library calls.

- investigation.py  status, show, next, log, report (read the registry)
- edit.py           mark, note (write to it by hand);  validate.py  validate;  db.py  db
- scaffold.py       init (start a project), new (a hypothesis from the template)
- run.py            run (the flags come from definitions/run_settings.py);  ui.py  ui
- selftest.py       selftest;  progress.py  the live progress table and the verdict printout
- triage.py         triage (rank the hypotheses on a run's own logs; records the ranking)
- mcp.py            mcp (these commands as MCP tools for coding agents, over stdio)

Commands that only read the registry import click, pydantic, PyYAML, SQLAlchemy and
rich, never torch, mlflow or trl: `hypotrack status` must answer in well under half a
second. Commands in heavier modules are imported only when invoked.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from hypotrack import __version__
from hypotrack.cli import db, edit, investigation, scaffold, validate
from hypotrack.cli.context import Context


class LazyGroup(click.Group):
    """Commands that live in heavier modules are imported only when invoked.

    `hypotrack --help` lists them from the short help given here, so listing
    commands never imports the training, MLflow or parity code paths.
    """

    lazy: dict[str, tuple[str, str, str]] = {
        "run": ("hypotrack.cli.run", "run",
                "Test a hypothesis: train control and treatment arms over seeds, log to MLflow, record the verdict."),
        "ui": ("hypotrack.cli.ui", "ui", "Start the MLflow UI on the same store as `hypotrack run`, on 127.0.0.1."),
        "parity": ("hypotrack.parity.cli", "parity",
                   "Parity checks: reference GRPO loss vs TRL, logprob contexts, determinism."),
        "selftest": ("hypotrack.cli.selftest", "selftest",
                     "Run every hypothesis against every planted fault and a clean run; print the confusion matrix."),
        "triage": ("hypotrack.cli.triage", "triage",
                   "Rank the hypotheses on a run's own logs (MLflow run, training folder, CSV) before training."),
        "mcp": ("hypotrack.cli.mcp", "mcp", "Serve these commands to a coding agent as MCP tools over stdio."),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None or name not in self.lazy:
            return command
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
    if project and not Path(project).expanduser().is_dir():  # else the shipped library alone would show, silently
        raise click.BadParameter(f"{project}: no such folder (it should hold hypotheses/ and experiments/)",
                                 param_hint="--project / HYPOTRACK_PROJECT")
    ctx.obj = Context(db, project)


for command in (investigation.status, investigation.show, investigation.next_, investigation.log,
                investigation.report, edit.mark, edit.note, validate.validate, db.db, scaffold.init, scaffold.new):
    cli.add_command(command)


def friendly_error(exc: BaseException) -> tuple[str | None, int]:
    """(the message, the exit code) for an error the user can fix; (None, 1) for a bug."""
    from hypotrack.definitions.loader import SpecError
    from hypotrack.errors import HypotrackError, first_line
    from hypotrack.registry.engine import RegistryError
    from hypotrack.registry.store import UnknownStatus

    if isinstance(exc, SpecError):
        count = len(exc.problems)
        head = f"Error: {count} problem{'s' if count != 1 else ''} in the hypothesis/experiment files:"
        return head + "\n" + "\n".join(f"  {p}" for p in exc.problems), 1
    if isinstance(exc, (RegistryError, HypotrackError)):
        return f"Error: {exc}", 1
    if isinstance(exc, UnknownStatus):
        return f"Error: {exc}", 2
    if type(exc).__module__.startswith("mlflow."):  # MLflow's refusals are the user's to fix (mlflow not imported here)
        return f"Error: MLflow refused: {first_line(exc)}", 1
    return None, 1


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; library errors become one clear paragraph and a non-zero exit, never a traceback."""
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
    except Exception as exc:  # the edge of the program
        message, code = friendly_error(exc)
        if message is None:
            raise
        click.echo(message, err=True)
        sys.exit(code)
