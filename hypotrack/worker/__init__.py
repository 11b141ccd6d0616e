"""The worker side of a `hypotrack run`: one process trains one arm x seed.

`python -m hypotrack.worker SPEC.json` reads an `ArmSpec` (hypotrack.protocol),
builds the model, data, rewards and TRL's own GRPOTrainer, attaches the arm's
session (hypotrack/session/, the one door into TRL a user's script gets too),
trains, and streams events back to the runner. Nothing here imports mlflow or
hypotrack.tracking: the runner is the only MLflow client.

- main.py        the process: signals, parent death, events, dispatch by trainer kind
- grpo_arm.py    a GRPO arm: config, model, data, rewards, the trainer and its session, held-out evaluation
- model.py       loading the model and tokenizer (toy-lab models built on first use)
- data.py        prompts from a toy task, a datasets spec or a loader; data-side truncation
- evaluation.py  the held-out evaluation before and after training
- critic_arm.py  a critic parity arm;  parity_arm.py  a parity probe arm
"""
