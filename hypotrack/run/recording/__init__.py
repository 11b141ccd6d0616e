"""The runner's third room: what a test leaves in MLflow and reads back from the registry.

- records.py     what goes to MLflow besides the metrics: the plan, each arm's inputs and files, the outcome
- ending.py      the one place that ends a test's MLflow runs, with the status each ends with
- plots.py       the arms' reward curves
- pooling.py     a test decides over its own seeds and those of earlier tests of the same arms
- seed_check.py  two seeds whose runs are one and the same count once
- close_runs.py  `python -m hypotrack.run.recording.close_runs`: ends the MLflow runs of a runner that died
- mlflow_ui.py   `hypotrack ui`: the MLflow UI on hypotrack's store, and the views it opens on

It never plans a test or starts a worker.
"""
