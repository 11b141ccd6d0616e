"""The runner's first room: what a test will train, decided and checked before anything is recorded.

- plan.py          arms x seeds from an experiment, a hypothesis and the run settings (ArmSpecs)
- command_plan.py  a command experiment's two command lines: the user's command, and with the treatment's flags
- preflight.py     a missing model, dataset or import path fails before anything is recorded
- data_check.py    the columns and sizes the experiment names, read from the data

Nothing here starts a process or writes to MLflow or the registry.
"""
