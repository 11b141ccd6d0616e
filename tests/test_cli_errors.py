"""A corpus of bad inputs: each gets a clear error naming what and where, a non-zero exit,
no traceback, and leaves the registry exactly as it was."""

from __future__ import annotations

import re
import shutil
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


# (case id, setup, argv, regexes the combined output must match)
FILE_AT = r"{file}:\d+: "
CORPUS = [
    ("malformed-yaml", edit(H06, "hooks: [lora_sync, weights]", "hooks: [lora_sync, weights"), ["status"],
     [r"h06_lora_weight_sync\.yaml:\d+: \(document\): invalid YAML"]),
    ("tab-indented-yaml", edit(H01, "treatment:\n  scale_rewards", "treatment:\n\tscale_rewards"), ["validate"],
     [r"h01_advantage_scaling_instability\.yaml:\d+: \(document\): invalid YAML"]),
    ("unknown-key", edit(H06, "title:", "titel:"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:2: titel: unknown key"]),
    ("unknown-nested-key", edit(H06, "      k: 10", "      kk: 10"), ["status"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.kk: unknown key"]),
    ("wrong-type-priority", edit(H06, "priority: high", "priority: urgent"), ["next"],
     [r"h06_lora_weight_sync\.yaml:3: priority: .*'high'"]),
    ("wrong-type-threshold", edit(H06, "threshold: 0.05", "threshold: big"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.threshold: .*number"]),
    ("wrong-type-op", edit(H06, 'op: ">="\n      threshold: 0.05', 'op: "=>"\n      threshold: 0.05'), ["validate"],
     [r"criteria\.validated\[1\]\.op: "]),
    ("missing-required", edit(H06, "statement: >", "statment: >"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: statement: required key is missing",
      r"h06_lora_weight_sync\.yaml:\d+: statment: unknown key"]),
    ("id-not-file-name", edit(H06, "id: h06", "id: h60"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:1: id: id 'h60' must match the file name"]),
    ("bad-id-shape", edit(H06, "id: h06", "id: six"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:1: id: id 'six' must look like h01"]),
    ("duplicate-id", copy_h06, ["status"],
     [r"h06_lora_weight_sync\.yaml:1: id: duplicate id 'h06': also declared in .*h06_again\.yaml"]),
    ("duplicate-yaml-key", edit(H06, "priority: high", "priority: high\npriority: low"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:4: priority: duplicate key"]),
    ("unknown-prerequisite", edit(H01, "prerequisites: [h06]", "prerequisites: [h66]"), ["next"],
     [r"h01_advantage_scaling_instability\.yaml:11: prerequisites\[0\]: unknown hypothesis id 'h66'"]),
    ("own-prerequisite", edit(H01, "prerequisites: [h06]", "prerequisites: [h01]"), ["validate"],
     [r"h01_advantage_scaling_instability\.yaml:11: prerequisites\[0\]: .*its own prerequisite"]),
    ("unknown-hook", edit(H06, "hooks: [lora_sync, weights]", "hooks: [lora_sync, weights, lora_snyc]"), ["status"],
     [r"h06_lora_weight_sync\.yaml:\d+: hooks\[2\]: unknown diagnostics hook 'lora_snyc'"]),
    ("unknown-hook-setting", edit(H01, "{near_tie: 0.05}", "{near_tie: 0.05, colour: red}"), ["validate"],
     [r"hook_settings\.advantages\.colour: unknown setting"]),
    ("unknown-metric", edit(H06, "    - metric: reward\n", "    - metric: rewrd\n"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.metric: unknown metric 'rewrd'; did you mean 'reward'"]),
    ("unknown-experiment", edit(H06, "experiment: toy_arith", "experiment: toy_arithmetic"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: experiment: experiment 'toy_arithmetic' not found"]),
    ("unknown-grpo-setting", edit(TOY, "learning_rate: 5e-4", "learning_rat: 5e-4"), ["status"],
     [r"toy_arith\.yaml:\d+: settings\.learning_rat: 'learning_rat' is not a GRPOConfig field.*'learning_rate'"]),
    ("wrong-type-grpo-setting", edit(TOY, "learning_rate: 5e-4", "learning_rate: fast"), ["validate"],
     [r"toy_arith\.yaml:\d+: settings\.learning_rate: .*wrong type"]),
    ("managed-grpo-setting", edit(TOY, "beta: 0.0", "beta: 0.0\n  seed: 7"), ["validate"],
     [r"toy_arith\.yaml:\d+: settings\.seed: 'seed' is managed by hypotrack"]),
    ("experiment-name-mismatch", edit(TOY, "name: toy_arith", "name: toy"), ["validate"],
     [r"toy_arith\.yaml:3: name: name 'toy' must equal the file name"]),
    ("bad-reward-path", edit(TOY, "hypotrack.toy.rewards:arith_format", "arith_format"), ["validate"],
     [r"toy_arith\.yaml:\d+: rewards: .*'pkg\.module:function'"]),
    ("validate-missing-path", nothing, ["validate", "{tmp}/nope.yaml"], [r"nope\.yaml:1: \(path\): no such file"]),
    ("mark-unknown-id", nothing, ["mark", "h99", "validated"], [r"no hypothesis 'h99'"]),
    ("mark-bad-status", nothing, ["mark", "h06", "proven"], [r"'proven' is not one of"]),
    ("mark-bad-confidence", nothing, ["mark", "h06", "validated", "--confidence", "1.5"], [r"--confidence.*1\.5"]),
    ("note-empty", nothing, ["note", "h06", "   "], [r"TEXT: the note is empty"]),
    ("note-unknown-id", nothing, ["note", "h42", "hello"], [r"no hypothesis 'h42'"]),
    ("show-unknown-id", nothing, ["show", "h42"], [r"no hypothesis 'h42'"]),
    ("log-bad-limit", nothing, ["log", "--limit", "0"], [r"--limit.*0"]),
    ("log-unknown-id", nothing, ["log", "--hypothesis", "h42"], [r"no hypothesis 'h42'"]),
    ("unknown-command", nothing, ["statuss"], [r"No such command 'statuss'"]),
    ("unknown-flag", nothing, ["status", "--jsn"], [r"No such option.*--jsn.*--json"]),
    ("report-unwritable", nothing, ["report", "-o", "{tmp}/no/such/dir/r.md"], [r"cannot write report to .*r\.md"]),
    ("db-folder-missing", nothing, ["--db", "{tmp}/no/such/dir/r.db", "status"], [r"folder .*no/such/dir does not exist"]),
    ("db-bad-url", nothing, ["--db", "nosuchdb://host/x", "status"], [r"registry URL 'nosuchdb://host/x' is not a valid"]),
    ("db-not-sqlite", garbage_file, ["--db", "{tmp}/garbage.db", "status"], [r"garbage\.db is not a SQLite database"]),
    ("db-mlflow-name", mlflow_like("mlflow.db"), ["--db", "{tmp}/mlflow.db", "mark", "h06", "validated"],
     [r"MLflow's database file"]),
    ("db-mlflow-tables", mlflow_like("tracking.sqlite"), ["--db", "{tmp}/tracking.sqlite", "note", "h06", "x"],
     [r"tracking\.sqlite is an MLflow tracking database"]),
    ("db-upgrade-bad-revision", nothing, ["db", "upgrade", "--revision", "9999"], [r"revision '9999'"]),
    ("db-downgrade-bad-revision", nothing, ["db", "downgrade", "zzz"], [r"revision 'zzz'"]),
    ("run-unknown-setting", nothing, ["run", "h01", "--set", "not_a_field=1", "--dry-run"],
     [r"--set not_a_field.*'not_a_field' is not a GRPOConfig field"]),
    ("run-bad-setting-type", nothing, ["run", "h01", "--set", "learning_rate=abc", "--dry-run"],
     [r"--set learning_rate.*wrong type"]),
    ("run-set-no-equals", nothing, ["run", "h01", "--set", "learning_rate", "--dry-run"], [r"KEY=VALUE"]),
    ("run-unknown-lora-field", nothing, ["run", "h01", "--set", "lora.rank=4", "--dry-run"],
     [r"unknown LoRA field 'rank'"]),
    ("run-zero-seeds", nothing, ["run", "h01", "--seeds", "0", "--dry-run"], [r"--seeds.*0"]),
    ("run-bad-arms", nothing, ["run", "h01", "--arms", "bogus", "--dry-run"], [r"--arms.*'bogus'"]),
    ("run-bad-plant", nothing, ["run", "h01", "--plant", "bogus", "--dry-run"], [r"--plant"]),
    ("run-unknown-id", nothing, ["run", "h99", "--dry-run"], [r"no hypothesis 'h99'"]),
    ("nan-threshold", edit(H06, "threshold: 0.05", "threshold: .nan"), ["validate"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.threshold: .*finite"]),
    ("inf-threshold", edit(H06, "threshold: 0.05", "threshold: -.inf"), ["status"],
     [r"h06_lora_weight_sync\.yaml:\d+: criteria\.validated\[1\]\.threshold: .*finite"]),
    ("repeated-seed", edit(TOY, "seeds: [0, 1, 2]", "seeds: [0, 1, 1]"), ["validate"],
     [r"toy_arith\.yaml:\d+: seeds: .*seed 1 is listed twice"]),
    ("negative-seed", edit(TOY, "seeds: [0, 1, 2]", "seeds: [0, -1]"), ["validate"],
     [r"toy_arith\.yaml:\d+: seeds: .*0 or more"]),
    ("mark-nan-confidence", nothing, ["mark", "h01", "partial", "--confidence", "nan"], [r"--confidence.*nan"]),
    # MLflow pointed at the registry would write its schema into it: refused before anything is opened
    ("run-tracking-uri-is-registry", nothing,
     ["run", "h01", "--arms", "control", "--seeds", "1", "--max-steps", "2",
      "--tracking-uri", "sqlite:///{tmp}/registry.db"],
     [r"points at hypotrack's registry .*registry\.db.*database of its own"]),
    ("run-tracking-uri-is-a-file", nothing,
     ["run", "h01", "--arms", "control", "--seeds", "1", "--max-steps", "2", "--tracking-uri", "{tmp}/registry.db"],
     [r"tracking URI .*registry\.db.* is a file.*folder"]),
    ("run-bad-loss-type", nothing, ["run", "h01", "--loss-type", "ppo", "--dry-run"], [r"--loss-type.*'ppo'"]),
    ("run-unknown-experiment", nothing, ["run", "h01", "--experiment", "nope", "--dry-run"],
     [r"experiment 'nope' not found"]),
]


@pytest.fixture(scope="module")
def baseline_registry(tmp_path_factory) -> Path:
    """A registry with some history in it, copied for every case."""
    from hypotrack.registry import open_registry
    from hypotrack.registry import store

    path = tmp_path_factory.mktemp("baseline") / "registry.db"
    registry = open_registry(f"sqlite:///{path}")
    store.set_status(registry, "h06", "inconclusive", reason="seed", confidence=0.4)
    store.add_note(registry, "h01", "look at the advantages")
    registry.dispose()
    return path


# The core cases run by default; the rest (more of the same kinds) only without -m "not slow".
CORE = {
    "malformed-yaml", "unknown-key", "unknown-nested-key", "wrong-type-priority", "wrong-type-threshold",
    "missing-required", "id-not-file-name", "duplicate-id", "duplicate-yaml-key", "unknown-prerequisite",
    "unknown-hook", "unknown-metric", "unknown-experiment", "unknown-grpo-setting", "mark-unknown-id",
    "mark-bad-status", "note-empty", "unknown-command", "db-folder-missing", "db-bad-url", "db-not-sqlite",
    "db-mlflow-name", "db-mlflow-tables", "db-upgrade-bad-revision", "run-unknown-setting", "run-bad-setting-type",
    "run-zero-seeds", "run-bad-arms", "run-bad-plant", "run-unknown-id", "run-tracking-uri-is-registry",
}
PARAMS = [pytest.param(*case, id=case[0], marks=() if case[0] in CORE else pytest.mark.slow) for case in CORPUS]


@pytest.mark.parametrize("case, setup, argv, patterns", PARAMS)
def test_bad_input(case, setup, argv, patterns, run_cli, project_dir, registry_path, registry_dump,
                   baseline_registry, tmp_path):
    shutil.copy(baseline_registry, registry_path)
    setup(project_dir, tmp_path)
    before = registry_dump(registry_path)
    others_before = {p: p.read_bytes() for p in tmp_path.glob("*")
                     if p.suffix in (".db", ".sqlite") and p != registry_path}
    result = run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in argv])
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output, output
    for pattern in patterns:
        assert re.search(pattern, output), f"{pattern!r} not in:\n{output}"
    if "hypotrack.yaml" not in output and re.search(r"\.ya?ml:\d+", output):  # file problems: absolute path named
        assert str(project_dir) in output or "{tmp}" in " ".join(argv), output
    assert registry_dump(registry_path) == before
    for path, dump in others_before.items():
        assert path.read_bytes() == dump, f"{path} changed"
    assert not (tmp_path / "no").exists()
    assert "dry run" not in output  # nothing got as far as planning, let alone training


def test_corpus_is_big_enough():
    assert len(CORE) >= 20 and CORE <= {c[0] for c in CORPUS}
