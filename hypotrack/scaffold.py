"""Start a project and write new hypotheses from templates: what `hypotrack init` and `hypotrack new` do.

A project is a folder with `hypotheses/` and `experiments/`; the hypothesis library that ships with
hypotrack is always there underneath, so an empty project already has h01-h10 to run. `init_project`
adds an experiment template, `my_run`, written the way a user's own run is (a dataset loader, a task
reward and an auxiliary one, LoRA settings, a KL term), which runs as it is on the toy lab and is
meant to be edited into the user's run.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypotrack.errors import HypotrackError
from hypotrack.text import has_control

EXPERIMENT_TEMPLATE = """\
# Your run: the setup that does not improve. Every hypothesis is tested against it: its control arm is
# this file as written, its treatment arm this file with the hypothesis's change.
# As written it runs on the toy lab (a tiny arithmetic model built locally); point it at your model,
# data and rewards. `hypotrack validate` checks it; `hypotrack run h05 --experiment my_run` tests it.
name: my_run
trainer: grpo
model: toy:arith                  # a local model folder or a hub id, loaded with from_pretrained
data:
  loader: my_data:load            # experiments/my_data.py; or dataset: "org/name,config,split"
  size: 256                       # rows to train on
  eval_size: 64                   # held-out rows scored before and after training (0: none)
  reference_column: answer        # each row's correct answer (h13, h11) [the task reward's own column argument]
                                  # (their reward check scores it against another row's answer)
  # max_prompt_length: 1024       # cut prompts to this many tokens (the cut is measured)
  # answer_span: [answer_start, answer_end]   # where the answer sits in each prompt (char offsets), so
  # answer_text_column: evidence              # hypotrack can tell whether a cut removed it (h04)
rewards:                          # TRL's signature: f(completions, **columns) -> list[float]
  - my_rewards:exact              # the task reward (the first one, unless task_reward names another)
  - my_rewards:style              # auxiliary rewards: format, style, length...
reward_weights: [1.0, 0.1]
# task_reward: exact
settings:                         # any GRPOConfig field, type- and bound-checked
  learning_rate: 5.0e-3
  per_device_train_batch_size: 64
  num_generations: 4
  max_completion_length: 6
  beta: 0.04                      # the KL term (0: none)
  loss_type: dapo
  lr_scheduler_type: constant
lora:
  enabled: true                   # false: full fine-tuning
  r: 8
  lora_alpha: 16
  target_modules: [q_proj, k_proj, v_proj, o_proj]
seeds: [0, 1, 2]
max_steps: 30
"""

DATA_TEMPLATE = '''\
"""The prompts of my_run: `load(n, seed)` returns a datasets.Dataset with a `prompt` column.

Any other column (here `answer`) is passed to the reward functions by name, as TRL does.
Replace the body with your own loading code (load_from_disk, load_dataset on local files, ...).
"""

import random

from datasets import Dataset


def load(n: int, seed: int) -> Dataset:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        rows.append({"prompt": f"{a}+{b}=", "answer": str(a + b)})
    return Dataset.from_list(rows)
'''

REWARDS_TEMPLATE = '''\
"""The reward functions of my_run, with TRL's signature: f(completions, **columns) -> list[float | None].

Return None for a completion you cannot score (it is left out of the group's baseline); an exception
is counted per step as reward_errors/<name> and reported, not replaced by a made-up score.
"""

import re


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def exact(completions, answer, **kwargs) -> list[float]:
    """The task reward: 1.0 when the completion starts with the right number."""
    out = []
    for completion, expected in zip(completions, answer):
        found = re.match(r"\\s*(-?\\d+)", _text(completion))
        out.append(1.0 if found and found.group(1) == str(expected) else 0.0)
    return out


def style(completions, **kwargs) -> list[float]:
    """An auxiliary reward: 1.0 when the completion is only a number."""
    return [1.0 if re.fullmatch(r"\\s*-?\\d+\\s*", _text(c)) else 0.0 for c in completions]
'''

HYPOTHESES_README = """\
Your hypotheses: one YAML file each, named <id>_<slug>.yaml (`hypotrack new h20 "My idea"` writes one).
The library that ships with hypotrack (h01-h10) is always available; a file here with the same id
replaces the shipped one. `hypotrack validate` checks them; `hypotrack show h01` prints a shipped one.
"""

HYPOTHESIS_TEMPLATE = """\
id: {id}
title: {title}
priority: medium                 # high | medium | low: `hypotrack next` orders by it
statement: >
  {statement}
rationale: >
  Why you suspect it, and why the treatment below tests it.
prerequisites: []                # ids to resolve first (hypotrack next waits for them)
experiment: {experiment}         # the run to test it on (experiments/<name>.yaml or a shipped one)
# requires: [kl_term]            # what the run must have for this to apply: kl_term, lora, generator_sync,
#                                # auxiliary_rewards, group_scaling, sequence_importance_sampling
treatment:                       # what the treatment arm changes; the control arm is the run as written
  learning_rate_factor: 0.5      # the run flags' names (hypotrack run --help), or set: {{GRPOConfig field: value}}
hooks: [weights]                 # diagnostics to attach (hypotrack validate --metrics lists what they log)
criteria:                        # the bug's signature in the diagnostics, read on the control arm
  validated:                     # all hold -> the signature is present
    - metric: diag/weights/delta_rel
      arm: control
      steps: mean                # mean | mean_last | mean_first | last | first | max | min | slope
      seeds: majority            # all | majority | any | mean
      op: ">"
      threshold: 0.1
      why: the weights move by more than 10% per step on average
  invalidated:                   # all hold -> the signature is absent
    - metric: diag/weights/delta_rel
      arm: control
      steps: max
      seeds: all
      op: "<="
      threshold: 0.1
      why: no step moves the weights by more than 10%
effect:                          # does the treatment help? treatment - control, paired by seed
  outcome: task_reward           # task_reward | eval_greedy | eval_sampled | none
  last_steps: 10
resources:
  time: ""
  memory: ""
"""


def init_project(root: Path) -> tuple[list[Path], list[Path]]:
    """Create hypotheses/ and experiments/ with the my_run template; (created, already there) paths."""
    files = {
        root / "hypotheses" / "README.md": HYPOTHESES_README,
        root / "experiments" / "my_run.yaml": EXPERIMENT_TEMPLATE,
        root / "experiments" / "my_data.py": DATA_TEMPLATE,
        root / "experiments" / "my_rewards.py": REWARDS_TEMPLATE,
    }
    created, kept = [], []
    for path, text in files.items():
        if path.exists():
            kept.append(path)
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise HypotrackError(f"cannot create {path}: {exc.strerror}") from None
        created.append(path)
    return created, kept


# Settings a training script commonly takes -> (where they go in a command experiment, what they stand for). A flag
# (--seed) or a key=value argument (seed=1, trainer.seed=1: Hydra's overrides, as verl and many research codebases
# take them) is recognised by its name: the flag's, or the key's last dotted part, "-" read as "_".
COMMON_SETTINGS = {
    "seed": ("seed", None), "max_steps": ("max_steps", None), "total_training_steps": ("max_steps", None),
    "output_dir": ("output_dir", None), "default_local_dir": ("output_dir", None),
    "beta": ("kl_beta", "beta"), "kl_beta": ("kl_beta", "beta"), "kl_coef": ("kl_beta", "beta"),
    "kl_loss_coef": ("kl_beta", "beta"),
    "lr": ("learning_rate_factor", "learning_rate"), "learning_rate": ("learning_rate_factor", "learning_rate"),
    "scale_rewards": ("scale_rewards", None), "max_prompt_length": ("max_prompt_length", None),
}
COMMAND_TEMPLATE = """\
# Your own training script as an experiment: every hypothesis is tested through it. Its control arm is
# the command as written; its treatment arm the command with the hypothesis's change, passed through the
# arguments mapped below (appended after yours: argparse and Hydra take the last of a repeated one).
# hypotrack watches every GRPOTrainer the script builds, so the hypotheses' diagnostics run inside it.
# `hypotrack run h03 --experiment {name} --dry-run` prints both command lines; a hypothesis whose change
# has no mapping here is refused, naming it.
name: {name}
command:
  run: {run}
  cwd: {cwd}                    # where the command runs (relative to this file): where you typed it
{known}  # reward_functions: [correctness, format]   # the names your rewards are logged under, task first
  # reference_column: answer    # the dataset column with each row's correct answer (h11 and h13 read it)
  treatments:{empty}             # hypotrack's change -> your argument ({{value}}: the treatment's value)
{treatments}task_reward: CHANGE_ME              # the name TRL logs your task reward under (rewards/<name>/mean)
settings: {{{settings}}}        # what the command runs with: requirements (beta > 0) and factors read it
# lora: {{enabled: false}}      # if the script trains without LoRA (h06 then does not apply)
{seeds}
max_steps: 30                   # the steps each arm trains, once command.max_steps is mapped
"""
ALL_TREATMENTS = ("kl_beta", "scale_rewards", "peft", "learning_rate_factor", "num_generations_factor",
                  "max_prompt_length", "task_reward_only", "plain_sampling", "max_completion_length_factor")
EXAMPLE_MAPPING = {"peft": "{false: --no-peft}", "task_reward_only": "{true: --rewards correctness}",
                   "plain_sampling": "{true: --temperature 1.0}"}
RUN_KEYS = ("seed", "max_steps", "output_dir")


def _recognised(argv: list[str]) -> list[tuple[str, str, str | None, str]]:
    """(hypotrack key, the argument's template, the setting it declares, its value as written) per known argument."""
    found = []
    for index, arg in enumerate(argv[1:], start=1):
        if arg.startswith("-"):  # --flag value, --flag=value
            flag, equals, inline = arg.partition("=")
            name = flag.lstrip("-")
            value = inline if equals else (argv[index + 1] if index + 1 < len(argv) else "")
            template = f"{flag} {{value}}"
        elif "=" in arg and not arg.startswith("="):  # key=value, +key=value, a.b.key=value (Hydra)
            key, _, value = arg.partition("=")
            name = key.lstrip("+~").rsplit(".", 1)[-1]
            template = f"{key.lstrip('+~')}={{value}}" if not key.startswith("~") else ""
        else:
            continue
        known = COMMON_SETTINGS.get(name.replace("-", "_"))
        if known is not None and template:
            found.append((known[0], template, known[1], value))
    return found


def command_experiment(command: str, name: str = "my_script", cwd: str = ".") -> str:
    """The text of a command experiment for ``command``, run in ``cwd`` (relative to the experiment file), its
    arguments mapped where their names are common ones."""
    import shlex

    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise HypotrackError(f"--command {command!r} does not split like a shell line: {exc}") from None
    if not argv:
        raise HypotrackError("--command is empty: give the command you train with, e.g. \"python train.py --lr 1e-6\"")
    mapped: dict[str, str] = {}
    settings: dict[str, str] = {}
    for key, template, setting, value in _recognised(argv):
        mapped.setdefault(key, template)
        if setting and value:
            try:
                number = repr(float(value))
            except ValueError:
                continue
            # a YAML number: PyYAML reads an exponent without a dot (1e-06) as text
            settings[setting] = number.replace("e", ".0e") if "e" in number and "." not in number else number
    known = "".join(f"  {key}: {_yaml_text(mapped[key])}\n" if key in mapped
                    else f"  # {key}: --{key.replace('_', '-')} {{value}}\n" for key in RUN_KEYS)
    treatments = "".join(f"    {key}: {_yaml_text(mapped[key])}\n" if key in mapped else
                         f"    # {key}: {EXAMPLE_MAPPING.get(key, '--your-flag {value}')}\n" for key in ALL_TREATMENTS)
    # with nothing mapped the key still holds a mapping, {}, not YAML's null
    empty = "" if any(key in mapped for key in ALL_TREATMENTS) else " {}"
    seeds = ("seeds: [0, 1]" if "seed" in mapped else
             "seeds: [0]                      # one: without command.seed every seed would run the same command")
    return COMMAND_TEMPLATE.format(name=name, run=_yaml_text(command), cwd=_yaml_text(cwd), known=known,
                                   treatments=treatments, empty=empty, seeds=seeds,
                                   settings=", ".join(f"{k}: {v}" for k, v in settings.items()))


def write_command_experiment(root: Path, command: str, name: str = "my_script", typed_in: Path | None = None) -> Path:
    """experiments/<name>.yaml under ``root`` for ``command``, which runs where it was typed (``typed_in``, the
    working directory by default), as it did for the user."""
    import os

    path = root / "experiments" / f"{name}.yaml"
    if path.exists():
        raise HypotrackError(f"{path} already exists: edit it, or remove it to write a new one")
    where = Path(typed_in or Path.cwd()).resolve()
    cwd = Path(os.path.relpath(where, path.parent.resolve())).as_posix()
    text = command_experiment(command, name, cwd)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise HypotrackError(f"cannot create {path}: {exc.strerror}") from None
    return path


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")[:40] or "hypothesis"


def new_hypothesis(hypotheses_dir: Path, hypothesis_id: str, title: str, experiment: str,
                   statement: str = "", taken: dict[str, Path] | None = None) -> Path:
    """Write hypotheses/<id>_<slug>.yaml from the template; refuses to overwrite a file.

    taken: ids already declared (the shipped hypotheses among them) and their files: a new file with one
    of those ids would silently replace it, so it is refused too.
    """
    if not re.fullmatch(r"h\d{2,}", hypothesis_id):
        raise HypotrackError(f"ID {hypothesis_id!r} must look like h11 (an h and two or more digits)")
    if not title.strip() or "\n" in title or has_control(title):
        raise HypotrackError("TITLE must be one line of plain text (no control characters)")
    existing = sorted(hypotheses_dir.glob(f"{hypothesis_id}_*.y*ml")) + sorted(hypotheses_dir.glob(f"{hypothesis_id}.y*ml"))
    if existing:
        raise HypotrackError(f"{existing[0]} already declares {hypothesis_id}: edit it, or pick another id")
    if taken and hypothesis_id in taken:
        numbers = [int(h[1:]) for h in taken if re.fullmatch(r"h\d+", h)]
        free = f"h{max(numbers) + 1:02d}"
        raise HypotrackError(f"{hypothesis_id} is already declared in {taken[hypothesis_id]}: pick another id "
                             f"(the next free one is {free}), or copy that file into {hypotheses_dir} to change it")
    path = hypotheses_dir / f"{hypothesis_id}_{slug(title)}.yaml"
    text = HYPOTHESIS_TEMPLATE.format(id=hypothesis_id, title=_yaml_text(title), experiment=experiment,
                                      statement=statement.strip() or "What you think is wrong, in one or two sentences.")
    try:
        hypotheses_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise HypotrackError(f"cannot write {path}: {exc.strerror}") from None
    return path


def _yaml_text(text: str) -> str:
    """A title as a YAML scalar that stays a string (quoted when YAML would read it otherwise)."""
    import json

    plain = text.strip()
    return plain if re.fullmatch(r"[A-Za-z][\w .,()/-]*", plain) else json.dumps(plain)
