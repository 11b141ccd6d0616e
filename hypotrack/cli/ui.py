"""`hypotrack ui`: the MLflow UI on the same store as `hypotrack run`."""

from __future__ import annotations

import click


@click.command()
@click.option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store to show [env MLFLOW_TRACKING_URI; "
              "default MLflow's own default, sqlite:///mlflow.db].")
@click.option("--port", type=click.IntRange(1, 65535), default=5000, show_default=True)
@click.option("--no-wait", is_flag=True, help="Start, print the URL once the UI answers and return (the server "
              "keeps running).")
def ui(tracking_uri: str | None, port: int, no_wait: bool) -> None:
    """Start the MLflow UI on the same store as `hypotrack run`, on 127.0.0.1, and print its URL once it answers.

    The URL opens MLflow's model-training view: each test is a parent run whose charts compare
    the arms (arms/outcome/reward/control, treatment, delta, ...), with one nested run per arm
    and seed. The server runs in its own process group; leaving (Ctrl-C) ends the whole group.

    \b
    Example:
        hypotrack ui --port 5001
    """
    from hypotrack.run.mlflow_ui import serve

    serve(tracking_uri, port, wait=not no_wait)
