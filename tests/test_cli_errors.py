"""A corpus of bad inputs: each gets a clear error naming what and where, a non-zero exit,
no traceback, and leaves the registry byte for byte as it was.

Each case runs the real `hypotrack` entry point (hypotrack.cli.main). Most run it in this process,
which keeps a corpus of over a hundred cases to seconds; the cases in SUBPROCESS, at least one of
each class, run it as a separate `python -m hypotrack.cli` process, exactly as a user does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
from pathlib import Path

import pytest

H06 = "hypotheses/h06_lora_weight_sync.yaml"
H01 = "hypotheses/h01_advantage_scaling_instability.yaml"
TOY = "experiments/toy_arith.yaml"


def edit(rel: str, old: str, new: str):
    def apply(project: Path, tmp: Path) -> None:
        path = project / rel
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))
    return apply


def copy_h06(project: Path, tmp: Path) -> None:
    shutil.copy(project / H06, project / "hypotheses" / "h06_again.yaml")


def mlflow_like(name: str):
    def apply(project: Path, tmp: Path) -> None:
        con = sqlite3.connect(tmp / name)
        for table in ("runs", "experiments", "metrics", "params"):
            con.execute(f"create table {table} (id integer primary key)")
        con.commit()
        con.close()
    return apply


def garbage_file(project: Path, tmp: Path) -> None:
    (tmp / "garbage.db").write_bytes(b"this is not sqlite\n" * 100)


def nothing(project: Path, tmp: Path) -> None:
    pass


def write(rel: str, data: bytes | str):
    def apply(project: Path, tmp: Path) -> None:
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return apply


def edit_bytes(rel: str, old: bytes, new: bytes):
    def apply(project: Path, tmp: Path) -> None:
        path = project / rel
        data = path.read_bytes()
        assert old in data
        path.write_bytes(data.replace(old, new, 1))
    return apply


def both(*steps):
    def apply(project: Path, tmp: Path) -> None:
        for step in steps:
            step(project, tmp)
    return apply


def append(rel: str, text: str):
    def apply(project: Path, tmp: Path) -> None:
        path = project / rel
        path.write_text(path.read_text() + text)
    return apply


def reward_module(name: str, body: str):
    """A reward module beside the experiment, used as the experiment's task reward."""
    return both(write(f"experiments/{name}.py", body),
                edit(TOY, "hypotrack.toy.rewards:arith_correct", f"{name}:score"))


def model_folder_without_config(project: Path, tmp: Path) -> None:
    (tmp / "empty_model").mkdir()


LISTENING: list[socket.socket] = []  # ports held open for the `ui` case, closed at the end of the module


def hold_port(project: Path, tmp: Path) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    LISTENING.append(sock)
    (tmp / "port").write_text(str(sock.getsockname()[1]))


def a_file(name: str):
    def apply(project: Path, tmp: Path) -> None:
        (tmp / name).write_text("a file, not a folder\n")
    return apply


def closed_port(project: Path, tmp: Path) -> None:
    """A port nothing listens on (bound, then released), for {port}."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        (tmp / "port").write_text(str(sock.getsockname()[1]))


ROWS_MODULE = """from datasets import Dataset


def rows(n, seed):
    return Dataset.from_dict({"question": [f"{i} + 1 =" for i in range(40)], "answer": [str(i + 1) for i in range(40)]})
"""


def forty_rows(data: str):
    """toy_arith's data: a loader beside the experiment giving 40 rows (question, answer), plus ``data`` keys."""
    return both(write("experiments/corpus_rows.py", ROWS_MODULE),
                edit(TOY, "  task: arith\n  size: 512\n", "  loader: corpus_rows:rows\n  prompt_column: question\n" + data))


def forty_row_dataset(project: Path, tmp: Path) -> None:
    """A dataset saved on disk (datasets' save_to_disk) with 40 rows, in {tmp}/rows."""
    from datasets import Dataset

    Dataset.from_dict({"prompt": [f"{i} + 1 =" for i in range(40)],
                       "answer": [str(i + 1) for i in range(40)]}).save_to_disk(str(tmp / "rows"))


def cut_at(rel: str, marker: str):
    """The file as a run killed while writing it leaves it: everything up to the end of ``marker``."""
    def apply(project: Path, tmp: Path) -> None:
        path = project / rel
        text = path.read_text()
        path.write_text(text[:text.index(marker) + len(marker)])
    return apply


def trainer_state_cut_short(project: Path, tmp: Path) -> None:
    """Cut inside its first logged step: no step is whole (a file cut later is read up to its last whole step)."""
    history = [{"step": step, "loss": 0.5 - step / 100, "reward": step / 40} for step in range(1, 41)]
    text = json.dumps({"log_history": history, "max_steps": 40}, indent=2)
    (tmp / "run").mkdir()
    (tmp / "run" / "trainer_state.json").write_text(text[:text.index('"step": 1') + 4])


def csv_cut_short(project: Path, tmp: Path) -> None:
    """Cut inside its first row (a file cut later is read up to its last whole row)."""
    (tmp / "run.csv").write_text("step,loss,reward\n1,0.5")


ALIAS_BOMB = "bomb:\n  a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9))


# A real run of one arm for one step: what a bad input must stop before anything is recorded.
ONE_STEP = ["run", "h06", "--arms", "control", "--seeds", "1", "--max-steps", "1"]

# (case id, class, setup, argv, regexes the combined output must match). A pattern "once:RE" must match
# exactly once. "{tmp}" in an argument is the case's own folder, "{port}" the port hold_port holds (or
# closed_port found free); an argument "env:NAME=VALUE" sets that environment variable for the command instead.
CORPUS = [
    ("malformed-yaml", "yaml", edit(H06, "hooks: [lora_sync, weights]", "hooks: [lora_sync, weights"), ["status"],
     [r"h06_lora_weight_sync\.yaml:\d+: \(document\): invalid YAML"]),
    ("tab-indented-yaml", "yaml", edit(H01, "treatment:\n  scale_rewards", "treatment:\n\tscale_rewards"), ["validate"],
     [r"h01_advantage_scaling_instability\.yaml:\d+: \(document\): invalid YAML"]),
    ("unknown-key", "schema", edit(H06, "title:", "titel:"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:2: titel: unknown key"]),
    ("unknown-nested-key", "schema", edit(H06, "      k: 10", "      kk: 10"), ["status"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.kk: unknown key"]),
    ("wrong-type-priority", "schema", edit(H06, "priority: high", "priority: urgent"), ["next"],
     [r"h06_lora_weight_sync\.yaml:3: priority: .*'high'"]),
    ("wrong-type-threshold", "schema", edit(H06, "threshold: 0.05", "threshold: big"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.threshold: .*number"]),
    ("wrong-type-op", "schema", edit(H06, 'op: ">="\n      threshold: 0.05', 'op: "=>"\n      threshold: 0.05'), ["validate"],
     [r"criteria\.validated\[1\]\.op: "]),
    ("missing-required", "schema", edit(H06, "statement: >", "statment: >"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: statement: required key is missing",
      r"h06_lora_weight_sync\.yaml:\d+: statment: unknown key"]),
    ("id-not-file-name", "schema", edit(H06, "id: h06", "id: h60"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:1: id: id 'h60' must match the file name"]),
    ("bad-id-shape", "schema", edit(H06, "id: h06", "id: six"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:1: id: id 'six' must look like h01"]),
    ("duplicate-id", "schema", copy_h06, ["status"],
     [r"h06_lora_weight_sync\.yaml:1: id: duplicate id 'h06': also declared in .*h06_again\.yaml"]),
    ("duplicate-yaml-key", "yaml", edit(H06, "priority: high", "priority: high\npriority: low"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:4: priority: duplicate key"]),
    ("unknown-prerequisite", "schema", edit(H01, "prerequisites: [h06]", "prerequisites: [h66]"), ["next"],
     [r"h01_advantage_scaling_instability\.yaml:11: prerequisites\[0\]: unknown hypothesis id 'h66'"]),
    ("own-prerequisite", "schema", edit(H01, "prerequisites: [h06]", "prerequisites: [h01]"), ["validate"],
     [r"h01_advantage_scaling_instability\.yaml:11: prerequisites\[0\]: .*its own prerequisite"]),
    ("unknown-hook", "schema", edit(H06, "hooks: [lora_sync, weights]", "hooks: [lora_sync, weights, lora_snyc]"), ["status"],
     [r"h06_lora_weight_sync\.yaml:\d+: hooks\[2\]: unknown diagnostics hook 'lora_snyc'"]),
    ("unknown-hook-setting", "schema", edit(H01, "{near_tie: 0.05}", "{near_tie: 0.05, colour: red}"), ["validate"],
     [r"hook_settings\.advantages\.colour: unknown setting"]),
    ("unknown-metric", "schema", edit(H06, "    - metric: reward\n", "    - metric: rewrd\n"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.metric: unknown metric 'rewrd'; did you mean 'reward'"]),
    ("unknown-experiment", "schema", edit(H06, "experiment: toy_arith", "experiment: toy_arithmetic"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: experiment: experiment 'toy_arithmetic' not found"]),
    ("unknown-grpo-setting", "schema", edit(TOY, "learning_rate: 5e-4", "learning_rat: 5e-4"), ["status"],
     [r"toy_arith\.yaml:\d+: settings\.learning_rat: 'learning_rat' is not a GRPOConfig field.*'learning_rate'"]),
    ("wrong-type-grpo-setting", "schema", edit(TOY, "learning_rate: 5e-4", "learning_rate: fast"), ["validate"],
     [r"toy_arith\.yaml:\d+: settings\.learning_rate: .*wrong type"]),
    ("managed-grpo-setting", "schema", edit(TOY, "beta: 0.0", "beta: 0.0\n  seed: 7"), ["validate"],
     [r"toy_arith\.yaml:\d+: settings\.seed: 'seed' is managed by hypotrack"]),
    ("experiment-name-mismatch", "schema", edit(TOY, "name: toy_arith", "name: toy"), ["validate"],
     [r"toy_arith\.yaml:3: name: name 'toy' must equal the file name"]),
    ("bad-reward-path", "schema", edit(TOY, "hypotrack.toy.rewards:arith_format", "arith_format"), ["validate"],
     [r"toy_arith\.yaml:\d+: rewards: .*'pkg\.module:function'"]),
    ("validate-missing-path", "flags", nothing, ["validate", "{tmp}/nope.yaml"], [r"nope\.yaml:1: \(path\): no such file"]),
    ("mark-unknown-id", "flags", nothing, ["mark", "h99", "validated"], [r"no hypothesis 'h99'"]),
    ("mark-bad-status", "flags", nothing, ["mark", "h06", "proven"], [r"'proven' is not one of"]),
    ("mark-bad-confidence", "numbers", nothing, ["mark", "h06", "validated", "--confidence", "1.5"], [r"--confidence.*1\.5"]),
    ("note-empty", "flags", nothing, ["note", "h06", "   "], [r"TEXT: the note is empty"]),
    ("note-unknown-id", "flags", nothing, ["note", "h42", "hello"], [r"no hypothesis 'h42'"]),
    ("show-unknown-id", "flags", nothing, ["show", "h42"], [r"no hypothesis 'h42'"]),
    ("log-bad-limit", "numbers", nothing, ["log", "--limit", "0"], [r"--limit.*0"]),
    ("log-unknown-id", "flags", nothing, ["log", "--hypothesis", "h42"], [r"no hypothesis 'h42'"]),
    ("unknown-command", "flags", nothing, ["statuss"], [r"No such command 'statuss'"]),
    ("unknown-flag", "flags", nothing, ["status", "--jsn"], [r"No such option.*--jsn.*--json"]),
    ("report-unwritable", "flags", nothing, ["report", "-o", "{tmp}/no/such/dir/r.md"], [r"cannot write report to .*r\.md"]),
    ("db-folder-missing", "registry", nothing, ["--db", "{tmp}/no/such/dir/r.db", "status"], [r"folder .*no/such/dir does not exist"]),
    ("db-bad-url", "registry", nothing, ["--db", "nosuchdb://host/x", "status"], [r"registry URL 'nosuchdb://host/x' is not a valid"]),
    ("db-not-sqlite", "registry", garbage_file, ["--db", "{tmp}/garbage.db", "status"], [r"garbage\.db is not a SQLite database"]),
    ("db-mlflow-name", "registry", mlflow_like("mlflow.db"), ["--db", "{tmp}/mlflow.db", "mark", "h06", "validated"],
     [r"MLflow's database file"]),
    ("db-mlflow-tables", "registry", mlflow_like("tracking.sqlite"), ["--db", "{tmp}/tracking.sqlite", "note", "h06", "x"],
     [r"tracking\.sqlite is an MLflow tracking database"]),
    ("db-upgrade-bad-revision", "registry", nothing, ["db", "upgrade", "--revision", "9999"], [r"revision '9999'"]),
    ("db-downgrade-bad-revision", "registry", nothing, ["db", "downgrade", "zzz", "--yes"], [r"revision 'zzz'"]),
    ("db-downgrade-without-yes", "registry", nothing, ["db", "downgrade", "base"], [r"deletes .* Add --yes to do it"]),
    ("run-unknown-setting", "flags", nothing, ["run", "h01", "--set", "not_a_field=1", "--dry-run"],
     [r"--set not_a_field.*'not_a_field' is not a GRPOConfig field"]),
    ("run-bad-setting-type", "flags", nothing, ["run", "h01", "--set", "learning_rate=abc", "--dry-run"],
     [r"--set learning_rate.*wrong type"]),
    ("run-set-no-equals", "flags", nothing, ["run", "h01", "--set", "learning_rate", "--dry-run"], [r"KEY=VALUE"]),
    ("run-unknown-lora-field", "flags", nothing, ["run", "h01", "--set", "lora.rank=4", "--dry-run"],
     [r"unknown LoRA field 'rank'"]),
    ("run-zero-seeds", "numbers", nothing, ["run", "h01", "--seeds", "0", "--dry-run"], [r"--seeds.*0"]),
    ("run-bad-arms", "flags", nothing, ["run", "h01", "--arms", "bogus", "--dry-run"], [r"--arms.*'bogus'"]),
    ("run-bad-plant", "load-time", nothing, ["run", "h01", "--plant", "bogus", "--dry-run"], [r"--plant"]),
    ("run-unknown-id", "flags", nothing, ["run", "h99", "--dry-run"], [r"no hypothesis 'h99'"]),
    ("nan-threshold", "numbers", edit(H06, "threshold: 0.05", "threshold: .nan"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.threshold: .*finite"]),
    ("inf-threshold", "numbers", edit(H06, "threshold: 0.05", "threshold: -.inf"), ["status"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.threshold: .*finite"]),
    ("repeated-seed", "numbers", edit(TOY, "seeds: [0, 1, 2]", "seeds: [0, 1, 1]"), ["validate"],
     [r"toy_arith\.yaml:\d+: seeds: .*seed 1 is listed twice"]),
    ("negative-seed", "numbers", edit(TOY, "seeds: [0, 1, 2]", "seeds: [0, -1]"), ["validate"],
     [r"toy_arith\.yaml:\d+: seeds: .*0 or more"]),
    ("mark-nan-confidence", "numbers", nothing, ["mark", "h01", "partial", "--confidence", "nan"], [r"--confidence.*nan"]),
    # MLflow pointed at the registry would write its schema into it: refused before anything is opened
    ("run-tracking-uri-is-registry", "tracebacks", nothing,
     ["run", "h01", "--arms", "control", "--seeds", "1", "--max-steps", "2",
      "--tracking-uri", "sqlite:///{tmp}/registry.db"],
     [r"points at hypotrack's registry .*registry\.db.*database of its own"]),
    ("run-tracking-uri-is-a-file", "tracebacks", nothing,
     ["run", "h01", "--arms", "control", "--seeds", "1", "--max-steps", "2", "--tracking-uri", "{tmp}/registry.db"],
     [r"tracking URI .*registry\.db.* is a file.*folder"]),
    ("run-bad-loss-type", "load-time", nothing, ["run", "h01", "--loss-type", "ppo", "--dry-run"], [r"--loss-type.*'ppo'"]),
    ("run-unknown-experiment", "flags", nothing, ["run", "h01", "--experiment", "nope", "--dry-run"],
     [r"experiment 'nope' not found"]),
    # --- YAML that parses but cannot mean a hypothesis
    ("alias-bomb", "yaml", append(H06, ALIAS_BOMB), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: \(document\): the document expands to more than \d+ values"]),
    ("alias-bomb-status", "yaml", append(H01, ALIAS_BOMB), ["status"], [r"h01_advantage_scaling_instability\.yaml:\d+: .*alias bomb"]),
    ("recursive-alias", "yaml", append(H06, "loop: &loop [1, *loop]\n"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: loop\[1\]: recursive alias"]),
    ("recursive-alias-mapping", "yaml", append(H06, "loop: &loop {inner: *loop}\n"), ["next"],
     [r"h06_lora_weight_sync\.yaml:\d+: loop\.inner: recursive alias"]),
    ("non-utf8-hypothesis", "yaml", edit_bytes(H06, b"title: LoRA weight sync", b"title: LoRA weight sync caf\xe9"), ["status"],
     [r"h06_lora_weight_sync\.yaml:2: \(document\): not UTF-8 text: byte 0xe9"]),
    ("non-utf8-experiment", "yaml", write(TOY, b"name: toy_arith\ndescription: \xff\xfe\n"), ["validate"],
     [r"toy_arith\.yaml:2: \(document\): not UTF-8 text: byte 0xff"]),
    ("merge-key-not-a-mapping", "yaml", edit(H06, "resources:\n", "resources:\n  <<: 3\n"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: resources\.<<: a merge key \('<<'\) takes a mapping"]),
    ("merge-key-brings-unknown-key", "yaml", both(edit(H06, "title:", "defaults: &d {colour: red}\ntitle:"),
                                                 edit(H06, "resources:\n", "resources:\n  <<: *d\n")), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: defaults: unknown key", r"h06_lora_weight_sync\.yaml:\d+: resources\.colour: unknown key"]),
    ("tag-on-sequence", "yaml", edit(H06, "hooks: [lora_sync, weights]", "hooks: !ordered [lora_sync, weights]"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: hooks: unsupported YAML tag '!ordered'"]),
    ("python-object-tag", "yaml", edit(H06, "priority: high", "priority: !!python/object/apply:os.system [ls]"), ["status"],
     [r"h06_lora_weight_sync\.yaml:3: priority: unsupported YAML tag 'tag:yaml\.org,2002:python/object/apply:os\.system'"]),
    ("set-tag", "yaml", edit(H06, "hooks: [lora_sync, weights]", "hooks: !!set {lora_sync, weights}"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: hooks: unsupported YAML tag 'tag:yaml\.org,2002:set'"]),
    ("escape-in-title", "unsafe-text", edit(H06, "title: LoRA weight sync", 'title: "LoRA \\e[2J weight sync"'), ["status"],
     [r"h06_lora_weight_sync\.yaml:2: title: contains control characters"]),
    ("escape-in-criterion-why", "unsafe-text", edit(H06, "why: most adapters never moved during training", 'why: "most adapters \\e]0;owned\\a never moved"'), ["show", "h06"],
     [r"h06_lora_weight_sync\.yaml:27: criteria\.validated\[0\]\.any\[0\]\.why: contains control characters"]),
    ("empty-hypothesis-file", "yaml", write(H06, ""), ["validate"], [r"h06_lora_weight_sync\.yaml:\d+: id: required key is missing"]),
    ("list-at-top-level", "yaml", write(H06, "- id: h06\n"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:1: \(document\): expected a mapping of keys"]),
    # --- numbers that pass a type check but cannot be right, whichever way they arrive
    ("experiment-negative-learning-rate", "numbers", edit(TOY, "learning_rate: 5e-4", "learning_rate: -5e-4"), ["validate"],
     [r"toy_arith\.yaml:\d+: settings\.learning_rate: learning_rate must be > 0 \(got -0\.0005\)"]),
    ("set-negative-learning-rate", "numbers", nothing, ["run", "h01", "--set", "learning_rate=-1", "--dry-run"],
     [r"--set learning_rate: learning_rate must be > 0 \(got -1\)"]),
    ("set-negative-beta", "numbers", nothing, ["run", "h01", "--set", "beta=-0.5", "--dry-run"], [r"--set beta: beta must be >= 0"]),
    ("set-lora-rank-zero", "numbers", nothing, ["run", "h01", "--set", "lora.r=0", "--dry-run"], [r"--set lora\.r: lora\.r must be >= 1"]),
    ("set-nan-temperature", "numbers", nothing, ["run", "h01", "--set", "temperature=.nan", "--dry-run"],
     [r"--set temperature: temperature must be a finite number"]),
    ("set-zero-batch", "numbers", nothing, ["run", "h01", "--set", "per_device_train_batch_size=0", "--dry-run"],
     [r"--set per_device_train_batch_size: .* must be >= 1"]),
    ("set-top-p-above-one", "numbers", nothing, ["run", "h01", "--set", "top_p=1.5", "--dry-run"], [r"--set top_p: top_p must be <= 1"]),
    ("flag-negative-learning-rate", "numbers", nothing, ["run", "h01", "--learning-rate", "-1", "--dry-run"],
     [r"--learning-rate.*must be > 0"]),
    ("flag-nan-kl-beta", "numbers", nothing, ["run", "h01", "--kl-beta", "nan", "--dry-run"], [r"--kl-beta.*finite"]),
    ("flag-zero-max-steps", "numbers", nothing, ["run", "h01", "--max-steps", "0", "--dry-run"], [r"--max-steps.*must be >= 1"]),
    ("flag-too-many-seeds", "numbers", nothing, ["run", "h01", "--seeds", "65", "--dry-run"], [r"--seeds.*65"]),
    ("treatment-negative-learning-rate", "numbers", edit(H06, "learning_rate: 1.0e-4", "learning_rate: -1.0e-4"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: treatment\.learning_rate: .*greater than 0"]),
    ("treatment-infinite-kl-beta", "numbers", edit(H06, "learning_rate: 1.0e-4", "learning_rate: 1.0e-4\n  kl_beta: .inf"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: treatment\.kl_beta: .*finite"]),
    ("experiment-zero-max-steps", "numbers", edit(TOY, "max_steps: 30", "max_steps: 0"), ["validate"],
     [r"toy_arith\.yaml:\d+: max_steps: .*greater than or equal to 1"]),
    ("experiment-lora-rank-zero", "numbers", edit(TOY, "  r: 8", "  r: 0"), ["validate"],
     [r"toy_arith\.yaml:\d+: lora\.r: .*greater than or equal to 1"]),
    ("experiment-data-size-zero", "numbers", edit(TOY, "  size: 512", "  size: 0"), ["validate"],
     [r"toy_arith\.yaml:\d+: data\.size: .*greater than or equal to 1"]),
    ("log-negative-limit", "numbers", nothing, ["log", "--limit", "-5"], [r"--limit.*-5"]),
    ("mark-negative-confidence", "numbers", nothing, ["mark", "h01", "partial", "--confidence", "-0.1"], [r"--confidence.*-0\.1"]),
    ("selftest-zero-seeds", "numbers", nothing, ["selftest", "--seeds", "0"], [r"--seeds.*0"]),
    # --- settings GRPOConfig refuses, found when the files load, not in a worker after other arms trained
    ("experiment-generation-batch", "load-time", edit(TOY, "learning_rate: 5e-4", "learning_rate: 5e-4\n  generation_batch_size: 12"),
     ["validate"], [r"toy_arith\.yaml:\d+: settings\.generation_batch_size: generation_batch_size \(12\) must be a multiple"]),
    ("treatment-set-generation-batch", "load-time", edit(H06, "treatment:\n", "treatment:\n  set: {generation_batch_size: 12}\n"),
     ["status"], [r"h06_lora_weight_sync\.yaml:\d+: treatment\.set\.generation_batch_size: .*multiple of the batch size"]),
    ("set-generation-batch", "load-time", nothing, ["run", "h01", "--set", "generation_batch_size=3", "--dry-run"],
     [r"treatment arm: generation_batch_size \(3\) must be a multiple of the batch size"]),
    ("set-both-generation-settings", "load-time", nothing,
     ["run", "h01", "--set", "generation_batch_size=32", "--set", "steps_per_generation=2", "--dry-run"],
     [r"generation_batch_size and steps_per_generation cannot both be set"]),
    ("set-unknown-scheduler", "load-time", nothing, ["run", "h01", "--set", "lr_scheduler_type=cosine_annealing", "--dry-run"],
     [r"--set lr_scheduler_type: lr_scheduler_type = 'cosine_annealing' is not a value trl [\d.]+ accepts: one of linear, cosine"]),
    ("experiment-unknown-optimizer", "load-time", edit(TOY, "learning_rate: 5e-4", "learning_rate: 5e-4\n  optim: adam"),
     ["validate"], [r"toy_arith\.yaml:\d+: settings\.optim: optim = 'adam' is not a value trl [\d.]+ accepts: one of adamw_torch"]),
    ("set-auto-find-batch-size", "load-time", nothing, ["run", "h01", "--set", "auto_find_batch_size=true", "--dry-run"],
     [r"treatment arm: GRPO cannot shrink the batch on out-of-memory"]),
    ("experiment-clip-range-reversed", "load-time",
     edit(TOY, "learning_rate: 5e-4", "learning_rate: 5e-4\n  vllm_importance_sampling_clip_min: 3.0\n"
                                      "  vllm_importance_sampling_clip_max: 2.0"), ["validate"],
     [r"toy_arith\.yaml:\d+: settings\.vllm_importance_sampling_clip_min: .* must be less than"]),
    ("treatment-unknown-loss-type", "load-time", edit(H06, "treatment:\n", "treatment:\n  loss_type: bogus\n"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: treatment\.loss_type: Input should be 'grpo'"]),
    ("treatment-unknown-plant", "load-time", edit(H06, "treatment:\n", "treatment:\n  plant: [bogus_fault]\n"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: treatment\.plant\[0\]: unknown planted fault 'bogus_fault'"]),
    ("experiment-unknown-plant", "load-time", edit(TOY, "seeds: [0, 1, 2]", "seeds: [0, 1, 2]\nplant: [lora_not_syncd]"), ["status"],
     [r"toy_arith\.yaml:\d+: plant\[0\]: unknown planted fault 'lora_not_syncd'"]),
    ("treatment-unknown-scale-rewards", "load-time", edit(H01, "scale_rewards: none", "scale_rewards: sometimes"), ["validate"],
     [r"h01_advantage_scaling_instability\.yaml:\d+: treatment\.scale_rewards: "]),
    # --- what used to end in a traceback
    ("run-tracking-uri-bogus-scheme", "tracebacks", nothing,
     ["run", "h01", "--arms", "control", "--seeds", "1", "--max-steps", "2", "--tracking-uri", "bogus://x"],
     [r"tracking URI bogus://x .* scheme MLflow cannot track to"]),
    ("registry-read-only", "tracebacks", nothing,
     ["--db", "sqlite:///file:{tmp}/registry.db?mode=ro&uri=true", "mark", "h01", "validated"],
     [r"the registry .*registry\.db.* refused the change: attempt to write a readonly database"]),
    ("note-read-only-registry", "tracebacks", nothing,
     ["--db", "sqlite:///file:{tmp}/registry.db?mode=ro&uri=true", "note", "h01", "hello"], [r"refused the change: .*readonly"]),
    ("registry-postgres-driver-missing", "tracebacks", nothing, ["--db", "postgresql+pg8000://u@127.0.0.1/x", "status"],
     [r"needs the database driver pg8000, which is not installed"]),
    ("run-output-dir-is-a-file", "tracebacks", a_file("afile"),
     ["run", "h01", "--arms", "control", "--seeds", "1", "--max-steps", "2", "--output-dir", "{tmp}/afile/out"],
     [r"output folder .*afile/out \(--output-dir\): cannot write there \(.*afile is a file\)"]),
    ("report-into-a-folder", "tracebacks", nothing, ["report", "-o", "{tmp}"], [r"-o.*is a directory"]),
    ("triage-missing-source", "tracebacks", nothing, ["triage", "{tmp}/no_such_run"], [r"no_such_run' is neither an existing folder"]),
    # --- what used to do nothing, and say nothing
    ("registry-is-a-folder", "registry", lambda project, tmp: (tmp / "adir").mkdir(), ["--db", "{tmp}/adir", "status"],
     [r"registry .*adir is a folder; give a file"]),
    ("deeply-nested-yaml", "yaml", append(H06, "deep: " + "[" * 3000 + "]" * 3000 + "\n"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: .*nested more than 64 levels deep"]),
    ("nested-past-the-depth-limit", "yaml", append(H06, "deep: " + "[" * 100 + "]" * 100 + "\n"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: deep\[0\]\[0\]\.\.\.: nested more than 64 levels deep"]),
    ("run-arms-repeated", "flags", nothing, ["run", "h01", "--arms", "control,control", "--dry-run"],
     [r"--arms: 'control' is listed twice"]),
    ("run-arms-empty", "flags", nothing, ["run", "h01", "--arms", ",", "--dry-run"], [r"--arms: ',': give arm names"]),
    ("dry-run-processes-without-accelerate", "silent", nothing, ["run", "h01", "--processes", "2", "--dry-run"],
     [r"--processes: only --launcher accelerate"]),
    ("triage-run-on-a-retired-file-store", "tracebacks", nothing, ["triage", "0123456789abcdef0123456789abcdef"],
     [r"no MLflow run '0123456789abcdef0123456789abcdef' on tracking URI file:.*mlruns"]),
    ("run-new-file-store", "tracebacks", nothing,
     ["run", "h01", "--arms", "control", "--seeds", "1", "--max-steps", "1", "--tracking-uri", "file:{tmp}/newstore"],
     [r"the MLflow tracking URI file:.*newstore .* cannot be used: The filesystem tracking backend"]),
    ("new-on-a-missing-experiment", "silent", nothing, ["new", "h99", "Reward model drifts"],
     [r"--experiment: experiment 'my_run' not found .*hypotrack init"]),
    ("new-title-with-escapes", "unsafe-text", nothing, ["new", "h99", "bad \x1b[2J title", "--experiment", "toy_arith"],
     [r"TITLE must be one line of plain text"]),
    ("registry-in-memory", "silent", nothing, ["--db", "sqlite://", "mark", "h01", "validated"],
     [r"registry URL 'sqlite://' is an in-memory SQLite database"]),
    ("registry-in-memory-named", "silent", nothing, ["--db", "sqlite:///:memory:", "note", "h01", "x"], [r"in-memory SQLite database"]),
    ("ui-port-taken", "silent", hold_port, ["ui", "--port", "{port}", "--no-wait"], [r"--port \d+: 127\.0\.0\.1:\d+ is already in use"]),
    ("dry-run-missing-model", "silent", nothing, ["run", "h01", "--model", "{tmp}/no_such_model", "--dry-run"],
     [r"model '.*no_such_model': no such folder"]),
    ("dry-run-model-without-config", "silent", model_folder_without_config,
     ["run", "h01", "--model", "{tmp}/empty_model", "--dry-run"], [r"empty_model' is a folder without config\.json"]),
    ("dry-run-missing-dataset", "silent", nothing, ["run", "h01", "--dataset", "./no_such_data", "--dry-run"],
     [r"dataset '\./no_such_data': \./no_such_data does not exist"]),
    ("project-folder-missing", "silent", nothing, ["--project", "{tmp}/no_such_project", "status"],
     [r"--project / HYPOTRACK_PROJECT: .*no_such_project: no such folder"]),
    # --- text that would reach a colleague's terminal
    ("note-only-escapes", "unsafe-text", nothing, ["note", "h01", "\x1b[2J\x1b[H"], [r"TEXT: the note is empty \(control characters"]),
    ("note-only-carriage-returns", "unsafe-text", nothing, ["note", "h01", "\r\r"], [r"TEXT: the note is empty"]),
    ("escape-in-experiment-description", "unsafe-text", edit(TOY, "name: toy_arith", 'name: toy_arith\ndescription: "\\x1b[31mred"'),
     ["validate"], [r"toy_arith\.yaml:\d+: description: contains control characters"]),
    # --- the right place and the right words
    ("reward-weights-length", "wrong-place", edit(TOY, "reward_weights: [1.0, 0.1]", "reward_weights: [1.0]"), ["validate"],
     [r"toy_arith\.yaml:\d+: reward_weights: reward_weights has 1 weight for 2 reward functions"]),
    ("task-reward-not-a-reward", "wrong-place", edit(TOY, "seeds: [0, 1, 2]", "seeds: [0, 1, 2]\ntask_reward: accuracy"), ["validate"],
     [r"toy_arith\.yaml:\d+: task_reward: task_reward 'accuracy' is not one of the reward functions"]),
    ("experiment-problem-reported-once", "wrong-place", edit(TOY, "learning_rate: 5e-4", "learning_rate: -5e-4"), ["status"],
     [r"once:toy_arith\.yaml:\d+: settings\.learning_rate", r"Error: 1 problem "]),
    ("relative-experiment-path-missing", "wrong-place", edit(H06, "experiment: toy_arith", "experiment: sub/mine.yaml"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: experiment: experiment 'sub/mine\.yaml' not found \(looked for .*project/sub/mine\.yaml\)"]),
    ("reward-module-exits", "wrong-place", reward_module("corpus_exits_on_import", "import sys\nsys.exit(3)\n\ndef score(completions, **kw):\n    return [0.0] * len(completions)\n"),
     ["run", "h06", "--dry-run"], [r"reward function 'corpus_exits_on_import:score': importing corpus_exits_on_import called sys\.exit\(3\)"]),
    ("reward-module-raises", "wrong-place", reward_module("corpus_raises_on_import", "raise RuntimeError('no GPU here')\n"),
     ["run", "h06", "--dry-run"], [r"reward function 'corpus_raises_on_import:score': importing corpus_raises_on_import failed: RuntimeError: no GPU here"]),
    ("reward-function-missing", "wrong-place", reward_module("corpus_no_score", "def scorer(completions, **kw):\n    return []\n"),
     ["run", "h06", "--dry-run"], [r"reward function 'corpus_no_score:score': module corpus_no_score has no attribute 'score'"]),
    ("reward-not-callable", "wrong-place", reward_module("corpus_not_callable", "score = 0.5\n"),
     ["run", "h06", "--dry-run"], [r"reward function 'corpus_not_callable:score' is not callable"]),
    ("dataset-loader-missing", "wrong-place", edit(TOY, "  task: arith\n", "  loader: corpus_no_such_loader:rows\n"),
     ["run", "h06", "--dry-run"], [r"dataset loader 'corpus_no_such_loader:rows': cannot import module 'corpus_no_such_loader'"]),
    # --- data the experiment names, read before anything is recorded (in a run and in --dry-run alike)
    ("eval-size-beyond-the-data", "silent", forty_rows("  eval_size: 1000\n"), [*ONE_STEP],
     [r"toy_arith\.yaml:\d+: data\.eval_size: 1000 held-out rows, and the dataset loader 'corpus_rows:rows' gives "
      r"40: .*would quietly use 10\. Give eval_size 20 or less"]),
    ("eval-size-beyond-the-data-dry-run", "silent", forty_rows("  eval_size: 1000\n"), ["run", "h06", "--dry-run"],
     [r"toy_arith\.yaml:\d+: data\.eval_size: 1000 held-out rows"]),
    ("size-beyond-the-data", "silent", forty_rows("  size: 100\n  eval_size: 10\n"), ["run", "h06", "--dry-run"],
     [r"toy_arith\.yaml:\d+: data\.size: 100 training rows, and the dataset loader 'corpus_rows:rows' gives 40, 10 of "
      r"them held out \(eval_size\): 30 are left to train on"]),
    ("dataset-flag-smaller-than-size", "silent", forty_row_dataset, ["run", "h06", "--dataset", "{tmp}/rows", "--dry-run"],
     [r"toy_arith\.yaml:\d+: data\.size: 512 training rows, and the dataset '.*rows' gives 40"]),
    ("answer-span-typo", "wrong-place", forty_rows("  answer_span: [answer_start, answer_end]\n"), [*ONE_STEP],
     [r"toy_arith\.yaml:\d+: data\.answer_span: names the column 'answer_start', which the dataset loader "
      r"'corpus_rows:rows' does not have \(columns: question, answer\)"]),
    ("reference-column-typo", "wrong-place", forty_rows("  reference_column: answr\n"), ["run", "h06", "--dry-run"],
     [r"toy_arith\.yaml:\d+: data\.reference_column: names the column 'answr'"]),
    ("answer-text-column-typo", "wrong-place", forty_rows("  answer_text_column: evidence\n"), ["run", "h06", "--dry-run"],
     [r"toy_arith\.yaml:\d+: data\.answer_text_column: names the column 'evidence'"]),
    ("prompt-column-typo", "wrong-place", both(write("experiments/corpus_rows.py", ROWS_MODULE),
                                               edit(TOY, "  task: arith\n", "  loader: corpus_rows:rows\n  prompt_column: qestion\n")),
     ["run", "h06", "--dry-run"], [r"toy_arith\.yaml:\d+: data\.prompt_column: names the column 'qestion'"]),
    ("reward-argument-not-a-column", "wrong-place",
     both(forty_rows(""), edit(TOY, "hypotrack.toy.rewards:arith_format", "corpus_graded:graded"),
          write("experiments/corpus_graded.py", "def graded(completions, solution, **kwargs):\n    return [0.0] * len(completions)\n")),
     ["run", "h06", "--dry-run"],
     [r"toy_arith\.yaml:\d+: rewards\[1\]: reward function 'corpus_graded:graded' takes the argument 'solution', which "
      r"is not a column of the dataset loader 'corpus_rows:rows' \(columns: question, answer\)"]),
    # --- a cluster or server that does not answer: refused in seconds, before the test is recorded
    ("ray-address-closed-port", "silent", closed_port, [*ONE_STEP, "--launcher", "ray", "--ray-address", "127.0.0.1:{port}"],
     [r"--ray-address 127\.0\.0\.1:\d+ \(or RAY_ADDRESS\): no Ray cluster answers at 127\.0\.0\.1:\d+ \(Connection "
      r"refused\)\. Start one with `ray start --head --port \d+`.*leave out --ray-address and RAY_ADDRESS"]),
    ("ray-address-from-environment", "silent", closed_port, ["env:RAY_ADDRESS=127.0.0.1:{port}", *ONE_STEP, "--launcher", "ray"],
     [r"--ray-address 127\.0\.0\.1:\d+ \(or RAY_ADDRESS\): no Ray cluster answers"]),
    ("ray-address-closed-port-dry-run", "silent", closed_port,
     ["run", "h06", "--launcher", "ray", "--ray-address", "ray://127.0.0.1:{port}", "--dry-run"],
     [r"--ray-address ray://127\.0\.0\.1:\d+ \(or RAY_ADDRESS\): no Ray cluster answers at 127\.0\.0\.1:\d+"]),
    ("ray-address-malformed", "flags", nothing, ["run", "h06", "--launcher", "ray", "--ray-address", "head:port", "--dry-run"],
     [r"--ray-address 'head:port': give HEAD:PORT \(e\.g\. 10\.0\.0\.5:6379\), ray://HEAD:10001 or auto"]),
    ("mlflow-server-closed-port", "tracebacks", closed_port, [*ONE_STEP, "--tracking-uri", "http://127.0.0.1:{port}"],
     [r"the MLflow tracking server http://127\.0\.0\.1:\d+ \(--tracking-uri or MLFLOW_TRACKING_URI\) does not answer at "
      r"127\.0\.0\.1:\d+ \(Connection refused\)\. Start it"]),
    # --- settings that nothing would read
    ("criterion-k-on-a-slope", "schema",
     edit(H01, "      steps: mean_last\n      k: 10\n      seeds: majority", "      steps: slope_t\n      k: 1\n      seeds: majority"),
     ["validate"], [r"h01_advantage_scaling_instability\.yaml:31: criteria\.validated\[1\]\.k: is read only with steps "
                    r"mean_last or mean_first, and this has steps: slope_t; remove it"]),
    ("signature-k-on-max", "schema",
     append(H01, "triage:\n  signatures:\n    - metric: reward\n      steps: max\n      k: 3\n      op: '>='\n"
                 "      threshold: 0.5\n      weight: 0.5\n      shows: the reward peaks\n"), ["status"],
     [r"h01_advantage_scaling_instability\.yaml:\d+: triage\.signatures\[0\]\.k: is read only with steps mean_last or "
      r"mean_first or growth, and this has steps: max"]),
    ("effect-last-steps-on-evaluation", "schema", append(H01, "effect:\n  outcome: eval_greedy\n  last_steps: 5\n"), ["validate"],
     [r"h01_advantage_scaling_instability\.yaml:\d+: effect\.last_steps: is read only with outcome task_reward, and this "
      r"has outcome: eval_greedy"]),
    ("effect-meaningful-without-outcome", "silent", append(H01, "effect:\n  outcome: none\n  meaningful: 0.2\n"), ["next"],
     [r"effect\.meaningful: is read only with outcome task_reward or eval_greedy or eval_sampled"]),
    ("truncation-side-without-a-budget", "silent", edit(TOY, "  size: 512\n", "  size: 512\n  truncation_side: right\n"),
     ["validate"], [r"toy_arith\.yaml:\d+: data\.truncation_side: is read only with max_prompt_length given, and this has "
                    r"max_prompt_length: null"]),
    ("lora-rank-with-lora-off", "schema", edit(TOY, "  enabled: true\n", "  enabled: false\n"), ["validate"],
     [r"toy_arith\.yaml:\d+: lora\.r: is read only with enabled True, and this has enabled: False"]),
    ("critic-section-on-grpo", "schema", append(TOY, "critic:\n  value_lr: 1.0e-3\n"), ["validate"],
     [r"toy_arith\.yaml:\d+: critic: is read only with trainer critic, and this has trainer: grpo"]),
    # --- files cut short
    ("trainer-state-cut-short", "tracebacks", trainer_state_cut_short, ["triage", "{tmp}/run"],
     [r"trainer_state\.json: not valid JSON: the file ends before the value that starts at line \d+: was the run "
      r"interrupted while writing it\?"]),
    ("csv-export-cut-short", "tracebacks", csv_cut_short, ["triage", "{tmp}/run.csv"],
     [r"run\.csv: the file ends before the value that starts at line 2: was the run interrupted"]),
    ("hypothesis-cut-short", "yaml", cut_at(H06, "hooks: [lora_sync, wei"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:(\d+): \(document\): invalid YAML: the file ends before the value that starts at "
      r"line \1: was the run interrupted"]),
]


@pytest.fixture(scope="module")
def baseline_registry(tmp_path_factory) -> Path:
    """A registry with some history in it, copied for every case."""
    from hypotrack.registry import open_registry, store

    path = tmp_path_factory.mktemp("baseline") / "registry.db"
    registry = open_registry(f"sqlite:///{path}")
    store.set_status(registry, "h06", "inconclusive", reason="seed", confidence=0.4)
    store.add_note(registry, "h01", "look at the advantages")
    registry.dispose()
    return path


# These run as a separate process, as a user runs them: one or more of each class.
SUBPROCESS = {"malformed-yaml", "alias-bomb", "non-utf8-hypothesis", "unknown-key", "db-mlflow-tables",
              "experiment-negative-learning-rate", "set-generation-batch", "run-tracking-uri-bogus-scheme",
              "registry-in-memory", "ui-port-taken", "note-only-escapes", "reward-module-exits",
              "registry-read-only", "flag-zero-max-steps", "eval-size-beyond-the-data", "ray-address-closed-port"}
PARAMS = [pytest.param(*case, id=case[0]) for case in CORPUS]


@pytest.fixture(scope="module", autouse=True)
def _release_ports():
    yield
    for sock in LISTENING:
        sock.close()


def run_in_process(argv: list[str], env: dict[str, str], cwd: Path, monkeypatch, capfd) -> tuple[int, str]:
    """hypotrack.cli.main(argv) with the CLI's environment; (exit code, everything it printed).

    Anything but SystemExit escaping main() is a traceback a user would see: it fails the test.
    """
    from hypotrack.cli import main

    for key in [k for k in os.environ if k.startswith(("HYPOTRACK_", "MLFLOW_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(cwd)
    code = 0
    capfd.readouterr()
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capfd.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("case, kind, setup, argv, patterns", PARAMS)
def test_bad_input(case, kind, setup, argv, patterns, run_cli, cli_env, project_dir, registry_path, registry_dump,
                   baseline_registry, tmp_path, monkeypatch, capfd):
    shutil.copy(baseline_registry, registry_path)
    setup(project_dir, tmp_path)
    watched = [p for p in tmp_path.glob("*") if p.suffix in (".db", ".sqlite")]
    before = {p: p.read_bytes() for p in watched}
    rows_before = registry_dump(registry_path)
    project_before = _snapshot(project_dir)
    port = (tmp_path / "port").read_text() if (tmp_path / "port").exists() else ""
    args = [a.replace("{tmp}", str(tmp_path)).replace("{port}", port) for a in argv]
    env = {**cli_env, **dict(a[len("env:"):].split("=", 1) for a in args if a.startswith("env:"))}
    args = [a for a in args if not a.startswith("env:")]
    if case in SUBPROCESS:
        result = run_cli(*args, env=env)
        code, output = result.returncode, result.stdout + result.stderr
    else:
        code, output = run_in_process(args, env, tmp_path, monkeypatch, capfd)
    assert code != 0, output
    assert "Traceback" not in output, output
    for pattern in patterns:
        if pattern.startswith("once:"):
            found = re.findall(pattern[len("once:"):], output)
            assert len(found) == 1, f"{pattern!r} found {len(found)} times in:\n{output}"
        else:
            assert re.search(pattern, output), f"{pattern!r} not in:\n{output}"
    if re.search(r"\.ya?ml:\d+", output):  # file problems name the file by its absolute path
        assert str(project_dir) in output or str(tmp_path) in " ".join(args), output
    for path, data in before.items():  # the registry (and any other database) byte for byte as it was
        assert path.read_bytes() == data, f"{path.name} changed"
    assert registry_dump(registry_path) == rows_before  # what a reader sees, write-ahead log included
    assert _snapshot(project_dir) == project_before  # no file written, changed or left half-made
    assert not (tmp_path / "no").exists() and not (tmp_path / "outputs").exists() and not (tmp_path / "mlruns").exists()
    assert "dry run" not in output  # nothing got as far as planning, let alone training


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def test_corpus_covers_every_class():
    """At least 100 cases, several of each class, and every class also tried as a separate process."""
    ids = [case[0] for case in CORPUS]
    assert len(ids) >= 100 and len(set(ids)) == len(ids)
    kinds = {}
    for case in CORPUS:
        kinds.setdefault(case[1], []).append(case[0])
    expected = {"yaml", "schema", "numbers", "load-time", "tracebacks", "silent", "unsafe-text", "wrong-place",
                "registry", "flags"}
    assert set(kinds) == expected
    assert all(len(cases) >= 3 for cases in kinds.values()), {k: len(v) for k, v in kinds.items()}
    assert SUBPROCESS <= set(ids)
    assert {kind for kind, cases in kinds.items() if SUBPROCESS & set(cases)} >= expected - {"schema", "flags"}
