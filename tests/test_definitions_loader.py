"""The YAML loader: every problem at once, as file:line: key: message, rejected at load time."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import SHIPPED_HYPOTHESES

from hypotrack.definitions import Project, SpecError, load_library
from hypotrack.definitions.models import Hypothesis
from hypotrack.definitions.settings_check import check_setting, coerce_cli_value
from hypotrack.definitions.yamlio import read_yaml

H06 = "hypotheses/h06_lora_weight_sync.yaml"
H01 = "hypotheses/h01_advantage_scaling_instability.yaml"
TOY = "experiments/toy_arith.yaml"
PROBLEM_RE = re.compile(r"^(?P<path>/\S+\.ya?ml):(?P<line>\d+): (?P<key>\S+): (?P<message>.+)$")


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1))


def load(root: Path, paths=None):
    return load_library(Project(root), paths)


def line_of(root: Path, rel: str, needle: str) -> int:
    for number, line in enumerate((root / rel).read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(needle)


def only(problems, fragment: str):
    hits = [p for p in problems if fragment in str(p)]
    assert hits, f"no problem mentioning {fragment!r} in:\n" + "\n".join(map(str, problems))
    return hits[0]


def test_shipped_files_load_cleanly(shipped_project_dir):
    library = load(shipped_project_dir)
    assert library.problems == []
    assert {"h01", "h02", "h03", "h04", "h05", "h06"} <= set(library.hypotheses)
    assert "toy_arith" in library.experiments


def test_every_problem_reported_at_once_with_file_line_key(project_dir):
    edit(project_dir, H06, "title: LoRA weight sync", "titel: LoRA weight sync")
    edit(project_dir, H06, "priority: high", "priority: urgent")
    edit(project_dir, H01, "prerequisites: [h06]", "prerequisites: [h42]")
    edit(project_dir, TOY, "learning_rate: 5e-4", "learning_rat: 5e-4")
    library = load(project_dir)
    assert len(library.problems) >= 4
    for problem in library.problems:
        assert PROBLEM_RE.match(str(problem)), str(problem)
    titel = only(library.problems, "titel")
    assert (titel.line, titel.key, titel.message) == (line_of(project_dir, H06, "titel:"), "titel", "unknown key")
    prio = only(library.problems, "priority")
    assert prio.line == line_of(project_dir, H06, "priority: urgent") and "high" in prio.message
    pre = only(library.problems, "h42")
    assert pre.key == "prerequisites[0]" and pre.line == line_of(project_dir, H01, "prerequisites:")
    assert pre.path.name == Path(H01).name
    lr = only(library.problems, "learning_rat")
    assert lr.key == "settings.learning_rat" and "did you mean 'learning_rate'" in lr.message
    assert lr.line == line_of(project_dir, TOY, "learning_rat:")
    with pytest.raises(SpecError) as info:
        library.raise_if_problems()
    assert len(str(info.value).splitlines()) == len(library.problems)


def test_unknown_nested_key_points_at_its_line(project_dir):
    edit(project_dir, H06, "      why: full fine-tuning improves", "      threshhold: 3\n      why: full fine-tuning improves")
    problem = only(load(project_dir).problems, "threshhold")
    assert problem.key == "criteria.validated[1].threshhold"
    assert problem.message == "unknown key"
    assert problem.line == line_of(project_dir, H06, "threshhold")


def test_wrong_type_names_key_and_line(project_dir):
    edit(project_dir, H06, "      threshold: 0.05", "      threshold: lots")
    problem = only(load(project_dir).problems, "threshold")
    assert problem.key == "criteria.validated[1].threshold"
    assert problem.line == line_of(project_dir, H06, "threshold: lots")


def test_missing_required_key(project_dir):
    edit(project_dir, H06, "title: LoRA weight sync\n", "")
    problem = only(load(project_dir).problems, "title")
    assert problem.message == "required key is missing"


def test_id_must_match_file_name(project_dir):
    edit(project_dir, H06, "id: h06", "id: h16")
    problem = only(load(project_dir).problems, "must match the file name")
    assert problem.key == "id" and problem.line == 1 and problem.path.name == Path(H06).name


def test_duplicate_ids_rejected(project_dir):
    shutil.copy(project_dir / H06, project_dir / "hypotheses" / "h06_copy.yaml")
    problem = only(load(project_dir).problems, "duplicate id")
    assert "h06" in problem.message and problem.key == "id"
    assert Path(H06).name in problem.message or "h06_copy" in str(problem)


def test_duplicate_yaml_key_rejected(project_dir):
    edit(project_dir, H06, "priority: high", "priority: high\npriority: low")
    problem = only(load(project_dir).problems, "duplicate key")
    assert problem.key == "priority" and problem.line == line_of(project_dir, H06, "priority: low")


def test_unknown_prerequisite_hook_and_metric_rejected_at_load(project_dir):
    edit(project_dir, H06, "hooks: [lora_sync, weights]", "hooks: [lora_sync, weights, telepathy]")
    edit(project_dir, H06, "    - metric: reward\n", "    - metric: rewardz\n")
    edit(project_dir, H01, "prerequisites: [h06]", "prerequisites: [h06, h99]")
    problems = load(project_dir).problems
    hook = only(problems, "telepathy")
    assert hook.key == "hooks[2]" and "unknown diagnostics hook" in hook.message
    metric = only(problems, "rewardz")
    assert metric.key == "criteria.validated[1].metric" and "did you mean 'reward'" in metric.message
    assert metric.line == line_of(project_dir, H06, "metric: rewardz")
    prereq = only(problems, "h99")
    assert prereq.key == "prerequisites[1]"


def test_metric_from_hook_not_attached_rejected(project_dir):
    edit(project_dir, H06, "hooks: [lora_sync, weights]", "hooks: [weights]")
    problem = only(load(project_dir).problems, "add it to hooks")
    assert "lora_sync" in problem.message


def test_hook_settings_checked(project_dir):
    edit(project_dir, H01, "advantages: {near_tie: 0.05}", "advantages: {near_ti: 0.05}")
    problem = only(load(project_dir).problems, "near_ti")
    assert problem.key == "hook_settings.advantages.near_ti"


def test_malformed_yaml_names_the_line(project_dir):
    edit(project_dir, H06, "hooks: [lora_sync, weights]", "hooks: [lora_sync, weights")
    library = load(project_dir)
    problem = only(library.problems, "invalid YAML")
    assert problem.path.name == Path(H06).name and problem.key == "(document)"
    assert problem.line >= line_of(project_dir, H06, "hooks: [lora_sync")
    # the other files are still checked (and h01 is then missing its prerequisite h06)
    assert "h01" in library.hypotheses


def test_unknown_experiment_and_bad_settings(project_dir):
    edit(project_dir, H06, "experiment: toy_arith", "experiment: toy_nope")
    edit(project_dir, TOY, "temperature: 1.0", "temperature: hot")
    edit(project_dir, TOY, "beta: 0.0", "beta: 0.0\n  seed: 3")
    problems = load(project_dir).problems
    assert "not found" in only(problems, "toy_nope").message
    assert "wrong type" in only(problems, "temperature").message
    assert "managed by hypotrack" in only(problems, "'seed'").message


def test_experiment_name_must_match_file(project_dir):
    edit(project_dir, TOY, "name: toy_arith", "name: toy_arithmetic")
    problem = only(load(project_dir).problems, "must equal the file name")
    assert problem.key == "name" and problem.line == line_of(project_dir, TOY, "name: toy_arithmetic")


def test_learning_rate_1e_5_is_a_float(project_dir):
    doc = read_yaml(Path("x.yaml"), "learning_rate: 1e-5\nother: 3e2\nplain: 1.5\nn: 7\ns: 1e\n")
    assert doc.data == {"learning_rate": 1e-5, "other": 300.0, "plain": 1.5, "n": 7, "s": "1e"}
    assert isinstance(doc.data["learning_rate"], float)
    assert check_setting("learning_rate", doc.data["learning_rate"]) is None
    assert coerce_cli_value("1e-5") == 1e-5 and isinstance(coerce_cli_value("1e-5"), float)
    edit(project_dir, TOY, "learning_rate: 5e-4", "learning_rate: 1e-5")
    edit(project_dir, H06, "  learning_rate: 1.0e-4", "  learning_rate: 1e-5")
    library = load(project_dir)
    assert library.problems == []
    assert library.experiments["toy_arith"].settings["learning_rate"] == 1e-5
    assert isinstance(library.hypotheses["h06"].treatment.learning_rate, float)


def test_yaml_is_read_safely(project_dir):
    edit(project_dir, H06, "title: LoRA weight sync", "title: !!python/object/apply:os.system ['true']")
    problem = only(load(project_dir).problems, "title")
    assert problem.path.name == Path(H06).name


def test_validate_single_file_skips_prerequisites_elsewhere(project_dir):
    library = load(project_dir, [project_dir / H01])
    assert library.problems == [] and list(library.hypotheses) == ["h01"]


def test_an_empty_folder_is_a_project_with_the_shipped_library(tmp_path):
    library = load(tmp_path)
    assert library.problems == []
    assert {"h01", "h06", "h10"} <= set(library.hypotheses) and "toy_arith" in library.experiments


def test_a_project_file_overrides_the_shipped_one_by_id(tmp_path):
    (tmp_path / "hypotheses").mkdir()
    shipped = (SHIPPED_HYPOTHESES / "h06_lora_weight_sync.yaml").read_text()
    (tmp_path / "hypotheses" / "h06_mine.yaml").write_text(shipped.replace("title: LoRA weight sync", "title: Mine"))
    library = load(tmp_path)
    assert library.problems == [] and library.hypotheses["h06"].title == "Mine"
    assert library.hypothesis_files["h06"] == tmp_path / "hypotheses" / "h06_mine.yaml"
    (tmp_path / "hypotheses" / "h06_again.yaml").write_text(shipped)  # twice in one folder is still an error
    assert any("duplicate id 'h06'" in p.message for p in load(tmp_path).problems)


def test_a_hypothesis_cannot_change_the_control_arm(project_dir):
    edit(project_dir, H01, "treatment:", "control:\n  kl_beta: 0.04\ntreatment:")
    problem = only(load(project_dir).problems, "control arm")
    assert problem.key == "control" and "requires:" in problem.message


def test_a_metric_the_experiment_cannot_produce_is_refused(project_dir):
    edit(project_dir, H06, "    - metric: diag/lora_sync/logp_gap_max\n      arm: control\n      steps: max\n      seeds: all",
         "    - metric: parity/loss/passed\n      arm: control\n      steps: max\n      seeds: all")
    problem = only(load(project_dir).problems, "cannot be produced")
    assert "toy_arith" in problem.message and "trainer: parity" in problem.message


def test_criteria_any_group_and_arms_needed():
    hyp = Hypothesis.model_validate({
        "id": "h07", "title": "t", "priority": "low", "statement": "s",
        "criteria": {"validated": [{"any": [{"metric": "reward", "arm": "control", "threshold": 1}]}]}})
    assert hyp.arms_needed() == {"control"}
    with pytest.raises(ValueError, match="at least one criterion"):
        Hypothesis.model_validate({"id": "h07", "title": "t", "priority": "low", "statement": "s", "criteria": {}})
    with pytest.raises(ValueError, match="must look like h01"):
        Hypothesis.model_validate({"id": "x7", "title": "t", "priority": "low", "statement": "s",
                                   "criteria": {"validated": [{"metric": "reward", "threshold": 1}]}})


def test_validate_single_file_still_rejects_unknown_prerequisite(project_dir):
    edit(project_dir, H01, "prerequisites: [h06]", "prerequisites: [h06, h77]")
    problems = load(project_dir, [project_dir / H01]).problems
    assert [p.key for p in problems] == ["prerequisites[1]"]
