"""`hypotrack ui`: the MLflow UI on the same store as `hypotrack run`."""

from __future__ import annotations

import click


@click.command()
@click.option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store to show [env MLFLOW_TRACKING_URI; "
              "default MLflow's own default, sqlite:///mlflow.db].")
@click.option("--port", type=click.IntRange(1, 65535), default=5000, show_default=True)
@click.option("--experiment", metavar="ID", help="List this one: a hypothesis id (h06), an MLflow experiment name "
              "or id [every hypotrack experiment].")
@click.option("--no-wait", is_flag=True, help="Start, print the URL once the UI answers and return (the server "
              "keeps running).")
def ui(tracking_uri: str | None, port: int, experiment: str | None, no_wait: bool) -> None:
    """Start the MLflow UI on the same store as `hypotrack run`, on 127.0.0.1, and print its URL once it answers.

    Each hypothesis experiment is listed with its latest test's verdict and a link to that test:
    its arm runs grouped by arm (the mean over seeds and the band across them), one chart per
    outcome and per metric the criteria read. The links open MLflow's model-training view; the
    UI's own links open its GenAI view until "Model training" (top left) has been clicked once.
    The server runs in its own process group; leaving (Ctrl-C) ends the whole group.

    \b
    Example:
        hypotrack ui --port 5001
        hypotrack ui --experiment h06
    """
    from hypotrack.run.recording.mlflow_ui import serve

    serve(tracking_uri, port, wait=not no_wait, experiment=experiment)
