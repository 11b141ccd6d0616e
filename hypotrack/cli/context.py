"""Per-invocation state of the CLI: where the project and the registry are, opened on first use."""

from __future__ import annotations

import os
import sys

import click


class Context:
    def __init__(self, db: str | None, project: str | None):
        self.db_url = db
        self.project_root = project
        self._registry = None
        self._library = None
        self._summaries = None

    def registry(self, reconcile: bool = True):  # hypotrack.registry.Registry
        if self._registry is None:
            from hypotrack.registry import open_registry
            from hypotrack.registry.reconcile import reconcile as reconcile_dead

            self._registry = open_registry(self.db_url)
            if reconcile:
                dead = reconcile_dead(self._registry)
                for run in dead:
                    click.echo(f"note: test run {run.id} of {run.hypothesis_id} (pid {run.pid}) had died; "
                               f"marked killed, {run.hypothesis_id} is back to {run.previous_status}", err=True)
                if any(run.mlflow_parent_run_id for run in dead):
                    from hypotrack.run.recording.close_runs import spawn_detached

                    spawn_detached(self._registry.url)  # ends their MLflow runs as KILLED, in the background
        return self._registry

    def library(self):  # hypotrack.definitions.Library
        """Every hypothesis and experiment, validated (any problem raises SpecError)."""
        if self._library is None:
            from hypotrack.definitions import Project, load_library

            library = load_library(Project.locate(self.project_root))
            library.raise_if_problems()
            self._library = library
        return self._library

    def summaries(self):
        """Validated summaries of every hypothesis, from the cache when no file changed (no pydantic then)."""
        if self._summaries is None:
            from hypotrack.definitions.project import Project
            from hypotrack.definitions.summary import load_summaries

            self._summaries = load_summaries(Project.locate(self.project_root).root)
        return self._summaries

    def hypotheses(self):  # hypotrack.investigation.Hypotheses
        """The summaries and the project they come from: what the investigation's records read."""
        from hypotrack.definitions.project import Project
        from hypotrack.investigation import Hypotheses

        return Hypotheses(Project.locate(self.project_root), self.summaries())

    def check_id(self, hypothesis_id: str) -> None:
        """A usage error (the ID argument's) unless the project has this hypothesis."""
        from hypotrack.investigation import UnknownHypothesis

        try:
            self.hypotheses().check(hypothesis_id)
        except UnknownHypothesis as exc:
            raise click.BadParameter(str(exc), param_hint="ID") from None


pass_ctx = click.make_pass_decorator(Context)


def console():  # a rich Console
    from rich.console import Console

    # Piped output (logs, CI, `| less`) gets COLUMNS or a wide fixed width instead of rich's 80 columns.
    if sys.stdout.isatty():
        return Console(soft_wrap=False)
    columns = os.environ.get("COLUMNS", "")
    return Console(width=int(columns) if columns.isdigit() and int(columns) >= 40 else 160)
